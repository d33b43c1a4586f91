"""When an evaluation may carry a verdict, and what to say when it may not.

A verdict needs a complete evaluation (every cell final: ok, agent_error or timeout) whose failed share
is at most `maxFailedShare`. An incomplete one (infra_error or grader_error cells left after retries)
stops the run so the same command can redo exactly those cells; an unhealthy seed stops it before any
mutation; an unhealthy candidate is FAILED with its failure counts. Pure: an Outcome in, words out (the stops
themselves live in mutator/round/stops.py; the session raises them, Session.account).
"""

from __future__ import annotations

from dataclasses import dataclass

from eval.suite import Suite
from mutator.round.outcome import Outcome
from mutator.round.stops import IncompleteEvaluation, UnhealthyEvaluation
from sandbox.container import BUILD_FAILED as BUILD_WORDS  # how a cell's error says its image did not build


@dataclass(frozen=True)
class Health:
    complete: bool
    healthy: bool
    share: float            # failed cells / cells
    counts: str             # "3 agent_error, 1 timeout"


def counts_text(failures: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in sorted(failures.items())) or "none"


def assess(outcome: Outcome, max_failed_share: float) -> Health:
    n = max(outcome.n_cells, 1)
    share = outcome.n_failed / n
    return Health(complete=outcome.complete, healthy=outcome.complete and share <= max_failed_share,
                  share=share, counts=counts_text(outcome.failures))


def likely_cause(outcome: Outcome, *, agent: str, grader: str) -> str:
    """Whose failure this most likely is, from the commonest failure kind."""
    if not outcome.failures:
        return "cells are missing"
    kind = max(outcome.failures.items(), key=lambda item: item[1])[0]
    if kind == "infra_error" and BUILD_WORDS in (outcome.first_error or ""):
        return ("a task's container image did not build or pull (its Dockerfile, a base image's registry, "
                "a package fetched at build time; the cell's error holds the build log's tail): nobody's "
                "verdict on the skill")
    if kind == "agent_error" and "output over" in (outcome.first_error or ""):
        return ("the build agent writes past the output cap (--max-output-mb, config maxOutputMb): raise it "
                "if its output is legitimately large, or make the agent quieter")
    return {
        "infra_error": "the model API or the harness (outage, rate limits, network): nobody's verdict on the "
                       "skill",
        "grader_error": f"the suite's grader ({grader}) fails",
        "timeout": "the build agent hangs or runs past its caps (watchdog, --cell-timeout-ms)",
        "agent_error": f"the build agent ({agent}) fails: check its command, key and output",
    }.get(kind, kind)


def describe(outcome: Outcome, health: Health, *, what: str, max_failed_share: float, agent: str,
             grader: str) -> str:
    """One paragraph: what failed, how often, the likely cause, one cell's error, and how to go on."""
    head = (f"{what}: {outcome.n_failed} of {outcome.n_cells} cells failed ({health.counts})"
            if health.complete else
            f"{what}: {outcome.failures.get('infra_error', 0)} infra_error and "
            f"{outcome.failures.get('grader_error', 0)} grader_error cells of {outcome.n_cells} are not "
            f"results")
    lines = [head + (f", over maxFailedShare {max_failed_share:g}" if health.complete else ""),
             f"likely cause: {likely_cause(outcome, agent=agent, grader=grader)}"]
    if outcome.first_error:
        lines.append(f"one cell's error: {outcome.first_error.strip()[:400]}")
    if not health.complete:
        lines.append("Re-run the same command once the cause is fixed: it re-runs the infra_error cells and "
                     "re-grades the grader_error ones, nothing else.")
    else:
        lines.append("Fix the cause, then re-run the same command with --retry-failed to run the failed "
                     "cells again (cached failures are otherwise kept as results).")
    return "\n  ".join(lines)


def refuse_sick(outcomes: list[tuple[Outcome, Suite, str]], *, max_failed_share: float, agent: str) -> None:
    """Raise when any of these evaluations may carry no verdict: incomplete (exit 8) or unhealthy (exit 7)."""
    for outcome, suite, what in outcomes:
        health = assess(outcome, max_failed_share)
        if not health.healthy:
            text = describe(outcome, health, what=f"{what} ({suite.name})", max_failed_share=max_failed_share,
                            agent=agent, grader=f"{suite.runner} in {suite.path}")
            raise (UnhealthyEvaluation if health.complete else IncompleteEvaluation)(text)
