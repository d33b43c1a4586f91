"""What the gate saw, as the loop stored it: the incumbent a run stored before a round, a run's own evaluation
of a genome, the per-task deltas of every gated attempt, and a round's null controls."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import has_table, one


def incumbent_before(db: sqlite_utils.Database, run_id: str, round_no: int) -> str | None:
    """The incumbent the run stored once the last round before `round_no` was integrated; None before any."""
    before = one(db, "select incumbent_after from attempts where run_id = ? and round < ? and "
                     "incumbent_after is not null order by round desc, sibling limit 1", [run_id, round_no])
    return (before or {}).get("incumbent_after")


def own_evaluation(db: sqlite_utils.Database, run_id: str, genome: str | None, split: str) -> int | None:
    """This run's first stored evaluation of `genome` on a split (val or train), None when it stored none."""
    if not genome:
        return None
    column = "val_evaluation_id" if split == "val" else "train_evaluation_id"
    found = one(db, f"select {column} as id from attempts where run_id = ? and genome_hash = ? and {column} "
                    "is not null order by id limit 1", [run_id, genome])
    return found["id"] if found else None


def task_deltas(db: sqlite_utils.Database, run_id: str) -> list:
    """(attempt id, round, sibling, verdict, looks taken, task, Δ) for each stored per-task gate delta of the
    run's gated attempts, in (round, sibling) order."""
    return db.conn.execute("select a.id, a.round, a.sibling, a.verdict, json_array_length(a.looks), j.key, "
                           "j.value from attempts a, json_each(a.gate, '$.deltas') j where a.run_id = ? and "
                           "a.gate is not null order by a.round, a.sibling", [run_id]).fetchall()


def null_controls(db: sqlite_utils.Database, run_id: str, round_no: int) -> list[dict]:
    """A round's null controls as the loop stored them (mutator/round/nulls.py), by copy; [] for a store made
    before them."""
    if not has_table(db, "null_controls"):
        return []
    return [dict(r) for r in db.query("select copy, salt, genome_hash, evaluation_id, delta, threshold, call "
                                      "from null_controls where run_id = ? and round = ? order by copy",
                                      [run_id, round_no])]
