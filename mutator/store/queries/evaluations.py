"""Evaluations as the dashboard shows them: by id, the newest of a genome on a suite (a live one's counters),
an unfinished one, a group's members and one member's figures, and the trigger rates stored on each."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import sqlite_utils

from mutator.store.queries.rows import has_column, one, q

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
    """Every attempt of the run in round order, each with its `split` evaluation if it has one (a screened,
    critic-rejected, failed or unfinished attempt has none): attempt id, round, sibling, verdict, status,
    error, the screen's cells and decision, genome, evaluation id, status and members, and the rates stored
    on it (no_trigger_tasks as stored JSON; all None without an evaluation or rates)."""
    column = "val_evaluation_id" if split == "val" else "train_evaluation_id"
    members = "e.members" if has_column(db, "evaluations", "members") else "null"
    rates = ("e.trigger_recall, e.false_trigger_rate, e.no_trigger_tasks"
             if has_column(db, "evaluations", "trigger_recall")   # a store from before the rates (_v14)
             else "null as trigger_recall, null as false_trigger_rate, null as no_trigger_tasks")
    # the screen's JSON read only where there is no evaluation (it is large: the gate's deltas and flips)
    screen = (f"case when a.{column} is null then json_extract(a.screen, '$.cells') end as screen_cells, "
              f"case when a.{column} is null then json_extract(a.screen, '$.decision') end as screen_decision"
              if has_column(db, "attempts", "screen")   # a store from before it (_v13)
              else "null as screen_cells, null as screen_decision")
    return q(db, "select a.id as attempt_id, a.round, a.sibling, a.verdict, a.status, a.error, "
                 f"{screen}, a.genome_hash, e.id as evaluation_id, e.status as "
                 f"evaluation_status, {members} as members, {rates} from attempts a "
                 f"left join evaluations e on e.id = a.{column} "
                 "where a.run_id = ? order by a.round, a.sibling, a.id", [run_id])


def telemetry_counts(db: sqlite_utils.Database, evaluation_ids: Sequence[int]) -> dict[int, dict]:
    """{evaluation id: {cells, with_use, streamed}} in one read: its cells, those with a skill-use record, and
    those whose agent stream was read (an agent subtype stored); an evaluation with no cell is left out."""
    if not evaluation_ids:
        return {}
    marks = ",".join("?" * len(evaluation_ids))
    use = "skill_use" if has_column(db, "cells", "skill_use") else "null"
    return {r["evaluation_id"]: r for r in q(
        db, f"select evaluation_id, count(*) as cells, count({use}) as with_use, "
            "sum(coalesce(agent_subtype, '') != '') as streamed from cells "
            f"where evaluation_id in ({marks}) group by evaluation_id", list(evaluation_ids))}
