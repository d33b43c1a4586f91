"""What the live stream (/api/events) digests: the store's run list and, for one run, its row, attempts, test
runs, live evaluations' counters and the newest note, each read as one text or one row."""

from __future__ import annotations

import sqlite_utils


def run_list(db: sqlite_utils.Database) -> str | None:
    """id:status:rounds_done:pid of every run, in id order, comma-joined; None for a store with no runs."""
    return db.conn.execute("select group_concat(id || ':' || status || ':' || coalesce(rounds_done, '') || "
                           "':' || coalesce(pid, ''), ',') from (select * from runs order by "
                           "id)").fetchone()[0]


RUN_SQL = (
    "select r.status, r.updated_at, r.rounds_done, r.incumbent_hash, r.cost_usd, r.error, "
    "(select count(*) || '/' || group_concat(coalesce(verdict, '') || status || (genome_hash is null) || "
    "(critic is null) || (delta is null) || coalesce(val_evaluation_id, '') || '.' || "
    "coalesce(train_evaluation_id, '') || coalesce(finished_at, ''), ',') from attempts where run_id = "
    "r.id), (select group_concat(id || status || coalesce(finished_at, ''), ',') from test_runs where run_id "
    "= r.id), case when r.status = 'running' then (select count(*) || '/' || coalesce(sum(n_done), 0) || '/' "
    "|| coalesce(max(id), 0) from evaluations where status = 'running') end, (select max(updated_at) from "
    "notes) "   # a name, tags or note set by run.py --annotate
    "from runs r where r.id = ?")


def run(db: sqlite_utils.Database, run_id: str) -> tuple | None:
    """The run's row, its attempts', its test runs', the live evaluations' and the notes' moving parts as one
    tuple; None when there is no such run."""
    row = db.conn.execute(RUN_SQL, [run_id]).fetchone()
    return tuple(row) if row else None
