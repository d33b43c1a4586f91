"""The dashboard's read helpers: rows as dicts from a read-only connection, and JSON columns decoded."""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils

try:   # 3-10x faster than json.loads on the many small JSON columns a run detail or a lineage parses
    from orjson import loads as _decode
except ImportError:  # pragma: no cover - the stdlib decoder is the fallback
    _decode = json.loads


def q(db: sqlite_utils.Database, sql: str, params: Any = ()) -> list[dict]:
    cursor = db.conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def one(db: sqlite_utils.Database, sql: str, params: Any = ()) -> dict | None:
    found = q(db, sql, params)
    return found[0] if found else None


def loads(text: str | None, default: Any = None) -> Any:
    if not text:
        return default
    try:
        return _decode(text)
    except ValueError:   # orjson.JSONDecodeError is a ValueError too
        return default
