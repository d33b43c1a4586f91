"""Reads of what was spent (the `charges` ledger, or a store's spend from before it) and the store's daily cap
(`spend_limits`). What spend means (kinds, totals, the Cost page) is mutator/after/spend.py's."""

from __future__ import annotations

import sqlite_utils

from mutator.store import ledger
from mutator.store.db import loads, now, rows


def charges_since(db: sqlite_utils.Database, since: float, run_id: str | None = None) -> list[dict]:
    """{run_id, kind, usd, at, evaluation_id} of every charge at or after `since` (of one run, when
    given)."""
    where, args = "at >= ?", [since]
    if run_id is not None:
        where, args = where + " and run_id = ?", args + [run_id]
    return rows(db, f"select run_id, kind, usd, at, evaluation_id from {ledger.table(db)} where {where}",
                args)


def run_totals(db: sqlite_utils.Database) -> dict[str, float]:
    """{run id: the sum of its charges}."""
    return {r["run_id"]: r["usd"] for r in rows(db, f"select run_id, sum(usd) as usd from {ledger.table(db)} "
                                                    "where run_id is not null group by run_id")}


def cell_cost_by_evaluation(db: sqlite_utils.Database, run_id: str) -> dict[int, float]:
    """{evaluation id: what the run was charged for its cells (agents and judge)}."""
    return {r["evaluation_id"]: r["usd"] for r in rows(
        db, f"select evaluation_id, sum(usd) as usd from {ledger.table(db)} where run_id = ? and kind in "
            "('cell', 'judge') group by evaluation_id", [run_id])}


def member_evaluation_ids(db: sqlite_utils.Database) -> set[int]:
    """The ids of every several-model evaluation's members (none for a store from before them)."""
    members: set[int] = set()
    if "members" in db["evaluations"].columns_dict:
        for r in rows(db, "select members from evaluations where members is not null"):
            members.update(int(i) for i in (loads(r["members"], {}) or {}).values())
    return members


def charged_evaluations(db: sqlite_utils.Database, ids: set[int]) -> list[dict]:
    """{id, genome_hash, split, contract, model} of the given evaluations, by id."""
    marks = ",".join("?" * len(ids))
    return rows(db, f"select id, genome_hash, split, contract, model from evaluations where id in ({marks})",
                sorted(ids))


def health_check_evaluations(db: sqlite_utils.Database) -> set[int]:
    """Every evaluation a health check ran (none for a store without health checks)."""
    if "health_checks" not in db.table_names():
        return set()
    return {int(i) for r in rows(db, "select evaluation_ids from health_checks")
            for i in (loads(r["evaluation_ids"], []) or [])}


def mean_model_cell_cost(db: sqlite_utils.Database, model: str) -> float:
    """The mean stored cost of one cell of this model (0 when none)."""
    found = rows(db, "select avg(c.cost_usd) as mean from cells c join evaluations e "
                     "on e.id = c.evaluation_id where e.model = ?", [model])
    return float(found[0]["mean"] or 0.0) if found else 0.0


def daily_limit(db: sqlite_utils.Database) -> float | None:
    """The store's daily cap in USD (None when none is set)."""
    if "spend_limits" not in db.table_names():
        return None
    found = rows(db, "select usd from spend_limits where name = 'daily'")
    return float(found[0]["usd"]) if found else None


def set_daily_limit(db: sqlite_utils.Database, usd: float) -> None:
    """Record the store's daily cap (0 clears it)."""
    if usd == 0:
        db["spend_limits"].delete_where("name = 'daily'")
    else:
        db["spend_limits"].upsert({"name": "daily", "usd": usd, "set_at": now()}, pk="name")
