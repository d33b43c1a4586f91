"""Evaluations as the dashboard shows them: by id, the newest of a genome on a suite (a live one's counters),
an unfinished one, a group's members and one member's figures, and the trigger rates stored on each."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import sqlite_utils

from mutator.store.queries.rows import one, q

EVAL_COLS = "id, key, genome_hash, suite, split, status, n_cells, n_done, eval, cost, steps, replicates"


def by_id(db: sqlite_utils.Database, evaluation_id: int) -> dict | None:
    """EVAL_COLS of one evaluation."""
    return one(db, f"select {EVAL_COLS} from evaluations where id = ?", [evaluation_id])


def by_ids(db: sqlite_utils.Database, ids: Sequence[int | None]) -> dict[int, dict]:
    """{id: EVAL_COLS} of the evaluations named (a None or unknown id is left out); {} for no ids."""
    if not ids:
        return {}
    return {e["id"]: e for e in q(db, f"select {EVAL_COLS} from evaluations where id in "
                                      f"({','.join('?' * len(ids))})", list(ids))}


def newest(db: sqlite_utils.Database, genome_hash: str, suite: str, replicates: int) -> dict | None:
    """EVAL_COLS of the newest evaluation of a genome on a suite at `replicates` (the one in progress, if
    any)."""
    return one(db, f"select {EVAL_COLS} from evaluations where genome_hash = ? and suite = ? and replicates "
                   "= ? order by id desc limit 1", [genome_hash, suite, replicates])


def unfinished(db: sqlite_utils.Database, genome_hash: str, suite: str, replicates: int) -> dict | None:
    """{id, status, n_done, n_cells} of the newest evaluation of a genome on a suite that is not done."""
    return one(db, "select id, status, n_done, n_cells from evaluations where genome_hash = ? and suite = ? "
                   "and replicates = ? and status != 'done' order by id desc limit 1",
               [genome_hash, suite, replicates])


def _loads(text: str | None) -> dict:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def members(db: sqlite_utils.Database, evaluation_id: int | None) -> dict[str, int]:
    """{model: one-model evaluation id} of a group evaluation; {} for a one-model one (or none)."""
    if not evaluation_id:
        return {}
    try:
        found = db.conn.execute("select members from evaluations where id = ?", [evaluation_id]).fetchone()
    except sqlite3.OperationalError:   # a store no _v9 loop has opened: every evaluation is one-model
        return {}
    return _loads(found[0]) if found else {}


def figures(db: sqlite_utils.Database, evaluation_id: int) -> dict | None:
    """{eval, cost, steps} of an evaluation; None without it or without figures yet (eval null)."""
    found = db.conn.execute("select eval, cost, steps from evaluations where id = ?",
                            [evaluation_id]).fetchone()
    if found is None or found[0] is None:
        return None
    return {"eval": found[0], "cost": found[1], "steps": found[2]}


def trigger_rounds(db: sqlite_utils.Database, run_id: str, split: str) -> list[dict]:
    """Every attempt of the run whose `split` evaluation has stored trigger rates, in round order: attempt id,
    round, sibling, verdict, genome, evaluation id and the rates (no_trigger_tasks as stored JSON)."""
    column = "val_evaluation_id" if split == "val" else "train_evaluation_id"
    return q(db, "select a.id as attempt_id, a.round, a.sibling, a.verdict, a.genome_hash, e.id as "
                 "evaluation_id, e.trigger_recall, e.false_trigger_rate, e.no_trigger_tasks from attempts a "
                 "join evaluations e "
                 f"on e.id = a.{column} "
                 "where a.run_id = ? and (e.trigger_recall is not null or e.false_trigger_rate is not null) "
                 "order by a.round, a.sibling, a.id", [run_id])
