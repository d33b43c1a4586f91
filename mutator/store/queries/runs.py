"""Runs as the dashboard lists and shows them: the skills, the run list, one run's row, a skill's runs, and
the running ones (for the stale check and the running store)."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import has_table, one, q

RUN_LIST = ("id, kind, status, strategy, skill_name, suite, val, holdout, model, mutator_model, replicates, "
            "rounds_target, rounds_done, incumbent_hash, seed_hash, cost_usd, pid, error, created_at, "
            "updated_at, finished_at")


def skills(db: sqlite_utils.Database) -> list[dict]:
    """Each skill with its number of runs, running runs and last update, newest first."""
    return q(db, "select skill_name, count(*) as n_runs, max(updated_at) as updated_at, "
                 "sum(status = 'running') as n_running from runs group by skill_name order by updated_at "
                 "desc")


def run_list(db: sqlite_utils.Database, skill: str | None) -> list[dict]:
    """RUN_LIST of every run (of `skill` when given), newest first; A/A runs (kind 'aa': the gate's noise
    calibration) after the ordinary runs, so no picker defaults to one."""
    sql = (f"select {RUN_LIST} from runs" + (" where skill_name = ?" if skill else "")
           + " order by kind = 'aa', created_at desc")
    return q(db, sql, [skill] if skill else [])


def running(db: sqlite_utils.Database) -> list[dict]:
    """{id, status, heartbeat_at} of every run stored as running (the stale check reads the heartbeat)."""
    return q(db, "select id, status, heartbeat_at from runs where status = 'running'")


def running_pids(db: sqlite_utils.Database) -> list:
    """The writer pid of every run stored as running."""
    return [row[0] for row in db.execute("select pid from runs where status = 'running'").fetchall()]


def run(db: sqlite_utils.Database, run_id: str) -> dict | None:
    """The run's whole row, JSON columns as stored."""
    return one(db, "select * from runs where id = ?", [run_id])


def runs_of_skill(db: sqlite_utils.Database, skill: str) -> list[dict]:
    """Every run of a skill, whole rows, newest first and A/A runs last."""
    return q(db, "select * from runs where skill_name = ? order by kind = 'aa', created_at desc", [skill])


def holds_run(db: sqlite_utils.Database, run_id: str) -> bool:
    """Whether the store has a `runs` table holding `run_id`."""
    return has_table(db, "runs") and bool(list(db.query("select 1 from runs where id = ?", [run_id])))


def exists(db: sqlite_utils.Database, run_id: str) -> bool:
    """Whether the store holds a run of this id (an unknown one is a 404, never an empty answer)."""
    return one(db, "select 1 from runs where id = ?", [run_id]) is not None


def holdout_of(db: sqlite_utils.Database, run_id: str) -> str | None:
    """The holdout suite a run stored (a config name or a path), None when it has none or is unknown."""
    found = one(db, "select holdout from runs where id = ?", [run_id])
    return found["holdout"] if found else None
