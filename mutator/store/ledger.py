"""The spend ledger: one `charges` row per paid thing (a cell's agent, its judge, a mutator or meta-skill
call, a mining judge pass), naming the run that pays it (none for a health check or a watch tick's judge
pass).

A charge is written in the caller's transaction together with the run's running total (`runs.cost_usd`), so
the two never disagree: `runs.cost_usd` = the sum of the run's charges. A charge with a `ref` is written at
most once (a unique key): settling the same meter twice after a crash charges nothing the second time.
Never says what spend means (kinds, totals, the Cost page): mutator/after/spend.py reads this table.
"""

from __future__ import annotations

import sqlite3
import time

import sqlite_utils

COLUMNS = "run_id, kind, usd, at, evaluation_id, attempt_id, ref"


def before_ledger(db: sqlite_utils.Database) -> str:
    """SQL of a store's spend from before the ledger, as charge rows: each run's total as one "before itemised
    spend" charge at its last update, each health check's cost and each watch tick's judge pass as theirs."""
    parts = ["select id as run_id, 'before itemised spend' as kind, cost_usd as usd, coalesce(updated_at, "
             "created_at, 0) as at, null as evaluation_id, null as attempt_id, 'before-ledger:run:' || id as "
             "ref from runs where cost_usd > 0"]   # the first select names the columns (charges')
    if "health_checks" in db.table_names():
        parts.append("select null, 'health check', cost_usd, coalesce(finished_at, started_at, 0), null, "
                     "null, 'before-ledger:health:' || id from health_checks where cost_usd > 0")
    if "triggers" in db.table_names() and "judge_cost_usd" in db["triggers"].columns_dict:
        parts.append("select null, 'mining judge', judge_cost_usd, coalesce(finished_at, at), null, null, "
                     "'before-ledger:trigger:' || id from triggers where judge_cost_usd > 0")
    return " union all ".join(parts)


def table(db: sqlite_utils.Database) -> str:
    """What to read charges from: the table, or (a store not yet migrated, opened read-only) its old spend."""
    if "charges" in db.table_names():
        return "charges"
    return f"({before_ledger(db)})"


def charge(conn: sqlite3.Connection, *, run_id: str | None, usd: float, kind: str, ref: str | None = None,
           evaluation_id: int | None = None, attempt_id: int | None = None, at: float | None = None) -> bool:
    """Record `usd` spent on `kind` (inside the caller's transaction) and add it to the run's total; False,
    and nothing written, when `usd` is 0 or a charge with this `ref` is already recorded."""
    if not usd:
        return False
    cursor = conn.execute("insert or ignore into charges (run_id, kind, usd, at, evaluation_id, attempt_id, "
                          "ref) values (?, ?, ?, ?, ?, ?, ?)",
                          [run_id, kind, usd, at or time.time(), evaluation_id, attempt_id, ref])
    if not cursor.rowcount:
        return False
    if run_id:
        conn.execute("update runs set cost_usd = coalesce(cost_usd, 0) + ? where id = ?", [usd, run_id])
    return True
