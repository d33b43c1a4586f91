"""Test runs (a champion scored on a held-out suite, run.py --test-run) as the run page, History, Compare and
the proposals read them."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import one, q


def of_run(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """Every test run of the run, whole rows, oldest first."""
    return q(db, "select * from test_runs where run_id = ? order by id", [run_id])


def figures_of_run(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """History's figures of every test run of the run, oldest first."""
    return q(db, "select id, suite, round, genome_hash, status, eval, cost, steps, composite, "
                 "train_composite from test_runs where run_id = ? order by id", [run_id])


def done_of_run(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """Compare's figures and report of every finished test run of the run, oldest first."""
    return q(db, "select id, suite, round, genome_hash, composite, eval, cost, steps, evaluation_id, report "
                 "from test_runs where run_id = ? and status = 'done' order by id", [run_id])


def newest_done(db: sqlite_utils.Database, run_id: str, genome_hash: str) -> dict | None:
    """The newest finished test run of a genome in its run: id, suite, figures and report (JSON as stored)."""
    return one(db, "select id, suite, composite, eval, cost, steps, report from test_runs where run_id = ? "
                   "and genome_hash = ? and status = 'done' order by id desc limit 1", [run_id, genome_hash])
