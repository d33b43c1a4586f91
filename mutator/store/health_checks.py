"""The `health_checks` table: each check of a deployed skill folder, from `running` to its score and band.
How a check runs and is banded is mutator/after/health.py's and drift.py's; here are its rows."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import now, rows
from mutator.store.liveness import check_key, mark_stale_records


def start_check(db: sqlite_utils.Database, *, skill_dir: str, skill_name: str, genome_hash: str,
                fingerprint: str, suites: str, contract: str, n_cells: int) -> int:
    """A check under way (status `running`, nothing done yet); returns its id. `suites` and `contract`
    are JSON."""
    return db["health_checks"].insert({
        "skill_dir": skill_dir, "skill_name": skill_name, "genome_hash": genome_hash,
        "fingerprint": fingerprint, "suites": suites, "contract": contract,
        "status": "running", "partial": 0, "n_cells": n_cells, "n_done": 0, "started_at": now()}).last_pk


def check_row(db: sqlite_utils.Database, check_id: int) -> dict:
    return rows(db, "select * from health_checks where id = ?", [check_id])[0]


def update_check(db: sqlite_utils.Database, check_id: int, fields: dict) -> None:
    db["health_checks"].update(check_id, fields)


def previous_complete(db: sqlite_utils.Database, check: dict) -> dict | None:
    """The latest complete, scored check of the same folder and fingerprint before this one."""
    found = rows(db, "select * from health_checks where skill_dir = ? and fingerprint = ? and id < ? and "
                     "status = 'done' and partial = 0 and score is not null order by id desc limit 1",
                 [check["skill_dir"], check["fingerprint"], check["id"]])
    return found[0] if found else None


def charged_for(db: sqlite_utils.Database, keys: list[str] | tuple[str, ...]) -> float:
    """What the ledger holds for the cells of the evaluations with these keys."""
    marks = ",".join("?" * len(keys))
    found = rows(db, f"select coalesce(sum(c.usd), 0) as usd from charges c join evaluations e on "
                     f"e.id = c.evaluation_id where e.key in ({marks})", list(keys))
    return float(found[0]["usd"])


def evaluations_of_keys(db: sqlite_utils.Database, keys: list[str]) -> list[dict]:
    """{id, suite} of the evaluations with these keys."""
    marks = ",".join("?" * len(keys))
    return rows(db, f"select id, suite from evaluations where key in ({marks})", keys)


def scored_cells(db: sqlite_utils.Database, evaluation_ids: list[int]) -> list[dict]:
    """{suite, task_id, score, cost_usd} of every cell of these evaluations."""
    marks = ",".join("?" * len(evaluation_ids)) or "null"
    return rows(db, f"select e.suite, c.task_id, c.score, c.cost_usd from cells c join evaluations e on "
                    f"e.id = c.evaluation_id where c.evaluation_id in ({marks})", evaluation_ids)


def check_targets(db: sqlite_utils.Database) -> list[dict]:
    """One row per checked (folder, fingerprint), newest first; `suites` as stored (JSON)."""
    if "health_checks" not in db.table_names():
        return []
    return rows(db, "select skill_dir, fingerprint, max(skill_name) as skill_name, max(suites) as suites, "
                    "count(*) as checks, max(id) as last_id from health_checks "
                    "group by skill_dir, fingerprint order by last_id desc")


def checks_of(db: sqlite_utils.Database, skill_dir: str, fingerprint: str) -> list[dict]:
    """Every check of the folder and fingerprint, oldest first; a dead checker's `running` shows
    `stale`."""
    return mark_stale_records(db.conn, rows(db, "select * from health_checks where skill_dir = ? and "
                                                "fingerprint = ? order by id", [skill_dir, fingerprint]),
                              lambda c: check_key(c["skill_dir"]))
