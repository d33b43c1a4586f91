"""What the gate saw, as the loop stored it: the evaluation it compared a candidate with, and its per-task
deltas.

The comparator is read from the attempt (`comparator_hash`, `comparator_evaluation_id`, stored since migration
`gate_comparator`). An older attempt falls back to this run's own record: the incumbent it stored after the
previous round and this run's evaluation of that genome (an A/A copy: the seed re-evaluation named in its
gate). Never another run's evaluation of the same genome. Pure reads.
"""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries import cells as stored_cells
from mutator.store.queries import evaluations, gate
from mutator.store.queries.gate import own_evaluation

BIG = 2 ** 53   # JavaScript numbers hold integers exactly only below this


def role(run: dict, a: dict, genome: str) -> str:
    """The comparator's name: the incumbent when the round began (a pool's leader), saying when that is not
    the attempt's own parent; an A/A copy's is the seed re-evaluated under another salt."""
    if run.get("kind") == "aa":
        return "the seed, re-evaluated"
    if genome == a.get("parent_hash"):
        return "incumbent (the parent)"
    return "incumbent (not this attempt's parent)"


def comparator(db: sqlite_utils.Database, a: dict, run: dict) -> dict | None:
    """{genome_hash, evaluation_id, role, stored} of what this attempt's gate compared with; None without a
    gate."""
    if a.get("gate") is None or a.get("round", 0) < 1:
        return None
    stored = a.get("comparator_evaluation_id")
    genome = a.get("comparator_hash")
    if stored is None and run.get("kind") == "aa":
        stored, genome = ((a["gate"] or {}).get("aa") or {}).get("seed_evaluation_id"), run["seed_hash"]
    if genome is None:   # the incumbent this run stored once the previous round was integrated
        genome = gate.incumbent_before(db, run["id"], a["round"]) or run["seed_hash"]
    return {"genome_hash": genome, "evaluation_id": stored or own_evaluation(db, run["id"], genome, "val"),
            "role": role(run, a, genome), "stored": a.get("comparator_evaluation_id") is not None}


def task_deltas(a: dict) -> list[dict]:
    """The paired per-task (per task@model) composite deltas the deciding look's gate read, worst first."""
    deltas = (a.get("gate") or {}).get("deltas") or {}
    out = []
    for key, d in deltas.items():
        task, _, model = key.partition("@")
        out.append({"key": key, "task": task, "model": model or None, "delta": d})
    return sorted(out, key=lambda r: (r["delta"], r["key"]))


def heatmap(db: sqlite_utils.Database, run_id: str) -> dict:
    """The task x attempt grid of a run's stored per-task gate deltas: {tasks, attempts: [{id, round, sibling,
    verdict, look}], deltas: [[d or None per attempt] per task]}, attempts in round order, tasks sorted;
    `look` is the sequential val look the deltas are from (the last taken; None without sequential val)."""
    found = gate.task_deltas(db, run_id)
    attempts: dict[int, dict] = {}
    cells: dict[tuple[str, int], float] = {}
    for attempt_id, rnd, sibling, verdict, look, task, d in found:
        attempts.setdefault(attempt_id, {"id": attempt_id, "round": rnd, "sibling": sibling,
                                         "verdict": verdict, "look": look})
        cells[(task, attempt_id)] = d
    tasks = sorted({task for task, _ in cells})
    return {"tasks": tasks, "attempts": list(attempts.values()),
            "deltas": [[cells.get((t, a)) for a in attempts] for t in tasks]}


def cells_of(db: sqlite_utils.Database, sources: list[tuple[str, int]]) -> list[dict]:
    """The cells of an evaluation (its members' for several models), each with its model and its test
    scores."""
    out: list[dict] = []
    for model, source in sources:
        found = stored_cells.of_evaluation(db, source)
        tests = stored_cells.tests_of_evaluation(db, source)
        out += [{**c, "model": model or None, "tests": tests.get(c["id"], {})} for c in found]
    return out


def test_grid(cells: list[dict]) -> dict[str, dict[str, float]]:
    """{task (task@model with several models): {test: mean score over the replicates that ran it}}."""
    sums: dict[str, dict[str, list[float]]] = {}
    for c in cells:
        row = sums.setdefault(c["task_id"] + (f"@{c['model']}" if c["model"] else ""), {})
        for name, score in c["tests"].items():
            row.setdefault(name, []).append(score)
    return {task: {n: _mean(v) for n, v in per.items()} for task, per in sums.items() if per}


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def incomplete(db: sqlite_utils.Database, run: dict, a: dict, suite: str) -> dict | None:
    """An attempt's evaluation on `suite` that began and never finished (its id is stored on the attempt only
    once it returns): {evaluation_id, n_done, n_cells, why}; why is 'process died' once the run is not
    running."""
    # a screen's train cells are partial by design
    if not a.get("genome_hash") or a.get("verdict") == "SCREENED":
        return None
    found = evaluations.unfinished(db, a["genome_hash"], suite, run["replicates"])
    if found is None:
        return None
    alive = run.get("status") == "running"
    return {"evaluation_id": found["id"], "n_done": found["n_done"] or 0, "n_cells": found["n_cells"] or 0,
            "why": "running" if alive else "process died" if run.get("status") == "stale" else
            f"the run {run.get('status')}"}


def safe_ints(value):
    """JSON-ready copy with every integer beyond 2^53 as a string (a sign-flip sample seed is 64-bit)."""
    if isinstance(value, dict):
        return {k: safe_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [safe_ints(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= BIG:
        return str(value)
    return value
