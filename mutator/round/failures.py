"""When an evaluation may carry a verdict, and what to say when it may not.

A verdict needs a complete evaluation (every cell final: ok, agent_error or timeout) whose failed share
is at most `maxFailedShare`. An incomplete one (infra_error or grader_error cells left after retries)
stops the run so the same command can redo exactly those cells; an unhealthy seed stops it before any
mutation; an unhealthy candidate is FAILED with its failure counts. `assess` and `describe` are pure
(an Outcome in, words out); `reopen_failed` marks what --retry-failed runs again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlite_utils

from eval.cells import Contract, evaluation_key
from eval.errors import EXIT_INCOMPLETE, Stop
from eval.suite import Suite
from mutator.round.budget import BudgetStop
from mutator.store import cache
from mutator.store.attempts import update_attempt
from mutator.store.db import dumps, rows
from strategies.verdicts import AttemptStatus

if TYPE_CHECKING:
    from mutator.round.evaluations import Outcome
    from mutator.round.session import Session

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
    """Where cells run went away mid-evaluation (eval's ExecutorLost, a Ray head): its cells in flight are stored
    as infra_error, and the run stops as on any evaluation left incomplete (exit 8; the same command resumes)."""


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
    if kind == "agent_error" and "output over" in (outcome.first_error or ""):
        return ("the build agent writes past the output cap (--max-output-mb, config maxOutputMb): raise it if its "
                "output is legitimately large, or make the agent quieter")
    return {
        "infra_error": "the model API or the harness (outage, rate limits, network): nobody's verdict on the skill",
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
            f"{outcome.failures.get('grader_error', 0)} grader_error cells of {outcome.n_cells} are not results")
    lines = [head + (f", over maxFailedShare {max_failed_share:g}" if health.complete else ""),
             f"likely cause: {likely_cause(outcome, agent=agent, grader=grader)}"]
    if outcome.first_error:
        lines.append(f"one cell's error: {outcome.first_error.strip()[:400]}")
    if not health.complete:
        lines.append("Re-run the same command once the cause is fixed: it re-runs the infra_error cells and "
                     "re-grades the grader_error ones, nothing else.")
    else:
        lines.append("Fix the cause, then re-run the same command with --retry-failed to run the failed cells "
                     "again (cached failures are otherwise kept as results).")
    return "\n  ".join(lines)


def reopen_failed(db: sqlite_utils.Database, run_id: str, run: dict, suites: tuple[Suite, ...],
                  contract: Contract) -> str:
    """--retry-failed: run again the failed cells of the evaluations no verdict rests on yet (the seed's
    before any round is done, and the unfinished round's); evaluations under a decided verdict keep
    their cells, so every stored gate figure still re-derives from them. Returns the line to print."""
    done = run["rounds_done"] or 0
    val = suites[0]
    keys = [evaluation_key(run["seed_hash"], suite, contract) for suite in suites] if done == 0 else []
    for a in rows(db, "select id, genome_hash, status, failures from attempts where run_id = ? and round > ? and "
                      "genome_hash is not null", [run_id, done]):
        keys.append(evaluation_key(a["genome_hash"], val, contract))
        if a["status"] == AttemptStatus.FAILED and a["failures"]:   # FAILED for an unhealthy evaluation: decide it again
            update_attempt(db, a["id"], {"status": AttemptStatus.PENDING, "verdict": None, "reason": None,
                                         "error": None, "failures": None, "finished_at": None})
    marks = ", ".join("?" * len(keys))
    ids = [r["id"] for r in rows(db, f"select id from evaluations where key in ({marks})", keys)] if keys else []
    n = cache.reopen_failed(db, ids)
    return (f"--retry-failed: {n} failed cell(s) of {len(ids)} evaluation(s) will run again"
            + (f"; the {done} decided round(s) keep their cells" if done else ""))


# ---- the loop's side: what an evaluation means for the run --------------------------------------------
def describe_for(session: Session, outcome: Outcome, health: Health, suite: Suite, label: str) -> str:
    return describe(outcome, health, what=f"{label} ({suite.name})",
                    max_failed_share=session.settings.max_failed_share,
                    agent=" ".join(session.evaluator.settings.agent_argv)[-120:], grader=f"{suite.runner} in {suite.path}")


def account(session: Session, outcome: Outcome, suite: Suite, label: str, *, seed: bool = False) -> Outcome:
    """Record what an evaluation spent; stop on the budget, or on cells that are not results yet."""
    session.cells_run += outcome.ran   # its spend was charged to the run cell by cell (Evaluator.payer)
    session.cells_regraded += outcome.regraded
    if outcome.budget_stop:
        raise BudgetStop(f"budget reached mid-evaluation: {outcome.budget_stop}. ${session.run()['cost_usd']:.4f} "
                         f"spent; finished cells are kept. Re-run the same command with a higher --budget-usd "
                         f"to resume it.")
    health = assess(outcome, session.settings.max_failed_share)
    if not health.complete and not seed:   # the seed's own check says it in its words
        raise IncompleteEvaluation(describe_for(session, outcome, health, suite, label))
    return outcome


def seed_evaluation(session: Session, attempt: dict, seed: str, suite: Suite, what: str, *, column: str,
                    only: frozenset | None = None) -> Outcome:
    """The seed on one suite (its evaluation id goes in the seed attempt's `column`; `only` these cells, e.g. the
    train evidence's replicates); an unhealthy one (exit 7) or an incomplete one (exit 8: infra_error or
    grader_error cells, redone by re-running) stops the run before anything else is spent."""
    outcome = session.evaluate(seed, suite, f"round 0 · {what[4:]}", only, seed=True)
    health = assess(outcome, session.settings.max_failed_share)
    if not health.healthy:
        update_attempt(session.db, attempt["id"], {column: outcome.evaluation_id, "failures": dumps(outcome.failures)})
        if not health.complete:   # an outage or a grader bug: re-running redoes exactly those cells (exit 8)
            raise IncompleteEvaluation("the seed's evaluation is not complete, so no mutation was tried: "
                                       + describe_for(session, outcome, health, suite, what))
        raise UnhealthySeed("the seed's evaluation is unhealthy, so no mutation was tried: "
                            + describe_for(session, outcome, health, suite, what))
    return outcome


def refuse_sick(outcomes: list[tuple[Outcome, Suite, str]], *, max_failed_share: float, agent: str) -> None:
    """Raise when any of these evaluations may carry no verdict: incomplete (exit 8) or unhealthy (exit 7)."""
    for outcome, suite, what in outcomes:
        health = assess(outcome, max_failed_share)
        if not health.healthy:
            text = describe(outcome, health, what=f"{what} ({suite.name})", max_failed_share=max_failed_share,
                            agent=agent, grader=f"{suite.runner} in {suite.path}")
            raise (UnhealthyEvaluation if health.complete else IncompleteEvaluation)(text)
