"""The one-time solve phase: the mutator model solves each train task bare (no skill), graded by the
suite's own grader, imperfect tasks retried; the best graded transcripts become `solve/` evidence.

Runs before round 0's seed evaluation, so an incapable mutator model stops the run before any seed
spend. Every pass is within the run's budget: checked before it starts and before each cell, and its spend
recorded when it ends, so --budget-usd stops it (exit 3) like any evaluation. Not part of the run's identity:
turning it on for an existing run works.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from eval.cells import Contract
from eval.cost import Price, Usage, price_for, usd
from eval.errors import SkillMutatorError
from eval.suite import Suite
from mutator.config import ConfigError
from mutator.round.evaluations import Evaluator
from mutator.round.outcome import Outcome
from mutator.store import cache
from mutator.store.cache import USAGE_COLUMNS
from mutator.store.db import dumps
from mutator.store.runs import update_run

BARE = "bare"   # the genome hash used for skill-less evaluations
# one bare solve cell, before any is measured
SOLVE_CELL_TOKENS = Usage(input_tokens=40_000, output_tokens=4_000)


class SolveAbort(SkillMutatorError, RuntimeError):
    """The mutator model could not solve some train tasks well enough to demonstrate them."""
    exit_code = 4


class SolveRefused(ConfigError):
    """--solve was asked of a mutator backend that cannot solve a task bare (a command)."""


def solve_wanted(setting: str, agents) -> bool:
    """--solve on/off (config `solve`; the old `auto` is off): on only when asked for, since it is paid at the
    mutator model's price before the seed is evaluated. `agents` is mutator.round.session.Agents."""
    if setting == "on" and agents.solve_argv is None:
        raise SolveRefused(f"--solve needs a mutator backend that can solve a task bare (anthropic or "
                           f"claude-cli); the mutator is {agents.mutator_how}. Drop --solve, or pass "
                           f"--mutator-agent anthropic")
    return setting == "on"


def solve_estimate(settings, n_tasks: int) -> tuple[int, float]:
    """(cells, USD) the solve phase may cost at most: every pass over every train task, each cell priced at
    the mutator model (SOLVE_CELL_TOKENS). For --plan and the run's start line."""
    cells = settings.solve_attempts * n_tasks
    return cells, cells * usd(price_for(settings.pricing, settings.mutator_model), SOLVE_CELL_TOKENS)


def solve_line(settings, n_tasks: int, on: bool) -> str:
    """What the start line and --plan say of the solve phase."""
    if not on:
        return "solve phase off (--solve turns it on)"
    cells, cost = solve_estimate(settings, n_tasks)
    return (f"solve phase on: up to {cells} cells ({settings.solve_attempts} pass(es) × {n_tasks} train "
            f"tasks) at {settings.mutator_model} prices, ≈ ${cost:.4f} (estimated at "
            f"{SOLVE_CELL_TOKENS.input_tokens:,} input + {SOLVE_CELL_TOKENS.output_tokens:,} output tokens a "
            f"cell), within --budget-usd")


def solve_phase(*, db, evaluator: Evaluator, train: Suite, contract: Contract, model: str, price: Price,
                attempts: int, min_score: float, out_dir: Path, budget=None, run_id: str = "",
                account: Callable[[Outcome, Suite, str], None] | None = None) -> dict:
    """Run the passes, write out_dir/<task>.md for each task's best cell, return the record to store.

    `budget` (mutator.round.budget.Budget) is asked before each pass; `account` records each pass's spend and
    raises BudgetStop when the budget left cells unstarted (mutator.round.failures.account)."""
    best: dict[str, dict] = {}
    cost = 0.0
    passes = cells_run = 0
    evaluations: list[int] = []
    ungraded: list[dict] = []
    for number in range(1, attempts + 1):
        todo = tuple(t for t in train.tasks if best.get(t.id, {"score": -1.0})["score"] < 1.0)
        if not todo:
            break
        passes = number
        suite = dataclasses.replace(train, tasks=todo)
        fresh = dataclasses.replace(contract, model=model, replicates=1, salt=f"solve-{number}")
        label = f"solve pass {number}/{attempts} ({len(todo)} tasks)"
        if budget is not None:
            budget.before_evaluation(db, run_id, BARE, suite, fresh, label)
        outcome = evaluator.evaluate(None, BARE, "", suite, label=label, contract=fresh, price=price)
        if account is not None:
            account(outcome, suite, label)
        cost += outcome.ran_cost
        cells_run += outcome.ran
        evaluations.append(outcome.evaluation_id)
        cells = cache.solve_cells(db, outcome.evaluation_id)
        if cells and all(cell["status"] == "grader_error" for cell in cells):
            ungraded = cells   # the grader fails everywhere: another pass would pay for nothing
        for cell in cells:
            if cell["score"] > best.get(cell["task_id"], {"score": -1.0})["score"]:
                best[cell["task_id"]] = {"score": cell["score"], "pass": number, "cell_dir": cell["cell_dir"],
                                         "status": cell["status"], "error": cell["error"] or ""}
        if ungraded:
            break
    usage = solve_usage(db, evaluations)
    out_dir.mkdir(parents=True, exist_ok=True)
    for task_id, found in best.items():
        trajectory = Path(found["cell_dir"]) / "trajectory.md"
        body = trajectory.read_text(encoding="utf-8") if trajectory.is_file() else "(no trajectory)\n"
        (out_dir / f"{task_id}.md").write_text(
            f"<!-- solved bare by {model}: best score {found['score']:.3f} on pass {found['pass']} "
            f"-->\n{body}",
            encoding="utf-8")
    low = sorted(task_id for task_id, found in best.items() if found["score"] < min_score)
    record = {"model": model, "passes": passes, "attempts": attempts, "min_score": min_score,
              "cost_usd": cost, "cells_run": cells_run, "aborted": bool(low), "usage": usage,
              "tasks": {task_id: {"score": f["score"], "pass": f["pass"], "status": f["status"]}
                        for task_id, f in sorted(best.items())}}
    (out_dir / "solve.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    if ungraded:
        record["aborted"] = True
        record["message"] = ungraded_message(train, passes, ungraded)
    elif low:
        record["message"] = abort_message(model, passes, min_score,
                                          {task_id: best[task_id] for task_id in low})
    return record


def solve_usage(db, evaluations: list[int]) -> dict[str, int]:
    """Tokens and API retries of every solve cell (the cells keep them one by one; this is the total)."""
    if not evaluations:
        return dict.fromkeys(USAGE_COLUMNS, 0)
    totals = cache.usage_totals(db, evaluations)
    return {column: int(value or 0) for column, value in zip(USAGE_COLUMNS, totals, strict=True)}


def ungraded_message(train: Suite, passes: int, cells: list[dict]) -> str:
    """Why the solve phase stops when its grader (a judge, a script) graded none of a pass's cells: the
    grader's failure, not the solver's nor the model's."""
    grader = (f"the suite's judge (runner judge in {train.path})" if train.runner == "judge"
              else f"the suite's grader ({train.runner} in {train.path})")
    first = next((c["error"] for c in cells if c["error"]), "").strip().replace("\n", " ")[:300]
    return (f"solve phase: stopped after pass {passes}: {grader} failed on every one of its {len(cells)} "
            f"cells (grader_error), so no cell has a grade and a further pass would pay for nothing. "
            f"The first error: {first or '(none recorded)'}. Fix the grader, then re-run the same command "
            f"(the agents' runs are kept and only re-graded), or skip the phase with --no-solve.")


def abort_message(model: str, passes: int, min_score: float, low: dict[str, dict]) -> str:
    """Why the solve phase stops the run: cells that failed (the solver did not run properly: says nothing
    about the model) are told apart from cells that ran and scored low (the model is not capable enough)."""
    failed = {task_id: found for task_id, found in low.items() if found["status"] != "ok"}
    scored = {task_id: found for task_id, found in low.items() if found["status"] == "ok"}
    parts = [f"solve phase: after {passes} pass(es), {len(low)} train task(s) stay below --solve-min-score "
             f"{min_score}."]
    if failed:
        by_status: dict[str, list[str]] = {}
        for task_id, found in failed.items():
            by_status.setdefault(found["status"], []).append(task_id)
        first = next(iter(failed.values()))["error"].strip().replace("\n", " ")[:300]
        parts.append(f"Every solve cell of {len(failed)} task(s) FAILED without a grade ("
                     + "; ".join(f"{status}: {', '.join(ids)}" for status, ids in sorted(by_status.items()))
                     + f"); the first error: {first or '(none recorded)'}. That is the solver not running, "
                       f"not the model scoring low: check the mutator backend's setup, or skip the phase "
                       f"with --no-solve.")
    if scored:
        parts.append(f"The mutator model {model} is not capable enough for this suite: its best bare score "
                     f"stays low on "
                     + ", ".join(f"{task_id} ({found['score']:.2f})" for task_id, found in scored.items())
                     + ". Use a stronger --mutator-model, raise --solve-attempts, or lower "
                       "--solve-min-score.")
    return " ".join(parts)


def store(db, run_id: str, record: dict) -> None:
    update_run(db, run_id, solve=dumps(record))
