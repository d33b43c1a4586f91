"""The stops an evaluation may cause: each one ends the run cleanly with its exit code, and the message says
why and what to do (the same command resumes). A leaf: imports nothing of the round."""

from __future__ import annotations

from eval.errors import EXIT_INCOMPLETE, Stop

EXIT_UNHEALTHY_SEED = 7


class EvaluationStop(Stop, RuntimeError):
    """The run stops cleanly on an evaluation no verdict may rest on; the message says why and what to do."""
    exit_code = EXIT_INCOMPLETE


class UnhealthyEvaluation(EvaluationStop):
    """Too many failed cells for a verdict (a test run's report, a seed's baseline)."""
    exit_code = EXIT_UNHEALTHY_SEED


class UnhealthySeed(UnhealthyEvaluation):
    pass


class IncompleteEvaluation(EvaluationStop):
    exit_code = EXIT_INCOMPLETE


class ExecutorGone(IncompleteEvaluation):
    """Where cells run went away mid-evaluation (eval's ExecutorLost, a Ray head): its cells in flight are
    stored as infra_error, and the run stops as on any evaluation left incomplete (exit 8; the same command
    resumes)."""


class ApiDown(IncompleteEvaluation):
    """The model API (or the network, or the harness) failed cells one after another: the circuit
    breaker (eval/breaker.py, breaker.infraFailures) or the API check before the first cell
    (mutator/round/api_check.py) stopped the run before more retries; exit 8, the same command resumes once
    the API answers."""
