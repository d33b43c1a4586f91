"""The `test_runs` table: each measurement of a run's champion on a held-out suite (`--test-run`,
`--compare`), from `running` to its report. How the report is built is mutator/validity/'s; here are its
rows."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import now, rows


def start_test_run(db: sqlite_utils.Database, *, run_id: str, suite: str, genome_hash: str,
                   round_no: int | None, kind: str, suite_hash: str) -> int:
    """A test under way (status `running`); returns its id."""
    return db["test_runs"].insert({
        "run_id": run_id, "suite": suite, "genome_hash": genome_hash, "round": round_no,
        "status": "running", "created_at": now(), "kind": kind, "suite_hash": suite_hash}).last_pk


def test_run_done(db: sqlite_utils.Database, test_id: int, fields: dict) -> None:
    """The finished test's figures and report (status `done`, finished now)."""
    db["test_runs"].update(test_id, {**fields, "status": "done", "finished_at": now()})


def test_run_ended(db: sqlite_utils.Database, test_id: int, status: str,
                   spent_usd: float | None = None) -> None:
    """A test that ended without a report (`stopped` by a budget, `failed` on sick cells), with what it spent
    so far."""
    db["test_runs"].update(test_id, {"status": status, "finished_at": now(),
                                     **({"spent_usd": spent_usd} if spent_usd is not None else {})})


def test_run_row(db: sqlite_utils.Database, test_id: int) -> dict:
    return rows(db, "select * from test_runs where id = ?", [test_id])[0]


def latest_done_test(db: sqlite_utils.Database, run_id: str, genome_hash: str) -> dict | None:
    """The run's newest finished test of this champion."""
    found = rows(db, "select * from test_runs where run_id = ? and genome_hash = ? and status = 'done' "
                     "order by id desc limit 1", [run_id, genome_hash])
    return found[0] if found else None
