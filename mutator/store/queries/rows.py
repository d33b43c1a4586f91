"""Rows as dicts from a read-only connection, JSON columns decoded, and what a store holds (its tables,
columns, data version): the helpers every dashboard read builds on."""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils

try:   # 3-10x faster than json.loads on the many small JSON columns a run detail or a lineage parses
    from orjson import loads as _decode
except ImportError:  # pragma: no cover - the stdlib decoder is the fallback
    _decode = json.loads


def q(db: sqlite_utils.Database, sql: str, params: Any = ()) -> list[dict]:
    """Every row of `sql` as a dict named by its columns."""
    cursor = db.conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def one(db: sqlite_utils.Database, sql: str, params: Any = ()) -> dict | None:
    """The first row of `sql` as a dict, None when there is none."""
    found = q(db, sql, params)
    return found[0] if found else None


def loads(text: str | None, default: Any = None) -> Any:
    """A JSON column decoded; `default` when it is empty or not JSON."""
    if not text:
        return default
    try:
        return _decode(text)
    except ValueError:   # orjson.JSONDecodeError is a ValueError too
        return default


def has_table(db: sqlite_utils.Database, name: str) -> bool:
    """Whether the store holds table `name` (a store made before its migration lacks it)."""
    return name in db.table_names()


def has_column(db: sqlite_utils.Database, table: str, column: str) -> bool:
    """Whether `table` has `column` (a store no newer loop has opened lacks the newer ones)."""
    return column in db[table].columns_dict


def data_version(db: sqlite_utils.Database) -> int:
    """Moves whenever another connection (the loop) commits to this store: cheap change detection."""
    return db.execute("PRAGMA data_version").fetchone()[0]
