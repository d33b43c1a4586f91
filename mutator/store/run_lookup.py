"""Reads of the `runs` table by the commands after a run (reports, proposals, tests, audits): one run's row,
the newest runs' ids. Writes stay in mutator/store/runs.py."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows


def run_row(db: sqlite_utils.Database, run_id: str) -> dict | None:
    """The run's whole row, None when this store has no such run."""
    found = rows(db, "select * from runs where id = ?", [run_id])
    return found[0] if found else None


def recent_run_ids(db: sqlite_utils.Database, limit: int = 5) -> list[str]:
    """The newest runs' ids, newest first (named in a 'no such run' message)."""
    return [r["id"] for r in db.query("select id from runs order by created_at desc limit ?", [limit])]


def run_ids(db: sqlite_utils.Database) -> list[str]:
    """Every run's id, oldest first."""
    return [r[0] for r in db.execute("select id from runs order by created_at")]


def run_rows(db: sqlite_utils.Database, run_ids: list[str]) -> dict[str, dict]:
    """{id: row} of the given runs that exist."""
    marks = ", ".join("?" * len(run_ids))
    return {r["id"]: r for r in rows(db, f"select * from runs where id in ({marks})", run_ids)}


def run_of(db: sqlite_utils.Database, run_id: str) -> dict:
    """The run's whole row (sqlite-utils' NotFoundError when there is none)."""
    return dict(db["runs"].get(run_id))


def run_cost(db: sqlite_utils.Database, run_id: str) -> float:
    """What the run has spent so far (runs.cost_usd)."""
    return float(run_of(db, run_id)["cost_usd"] or 0.0)


def newest_run_of_suite(db: sqlite_utils.Database, suite_path: str) -> str | None:
    """The id of the run last made or updated on this train suite folder (None when none, or no runs
    table)."""
    if "runs" not in db.table_names():
        return None
    found = rows(db, "select id from runs where suite_path = ? "
                     "order by coalesce(updated_at, created_at) desc limit 1", [suite_path])
    return found[0]["id"] if found else None


def mutator_models(db: sqlite_utils.Database) -> dict[str, str | None]:
    """{run id: its mutator model}."""
    return {r["id"]: r["mutator_model"] for r in rows(db, "select id, mutator_model from runs")}


def run_labels(db: sqlite_utils.Database) -> dict[str, dict]:
    """{run id: {id, skill_name, strategy, status, cost_usd}} of every run (the Cost page's labels)."""
    return {r["id"]: r for r in rows(db, "select id, skill_name, strategy, status, cost_usd from runs")}
