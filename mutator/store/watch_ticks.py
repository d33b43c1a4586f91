"""The `triggers` table: one row per tick of the opt-in watch (mutator/mining/watch.py), with its outcome
and the newest request it counted (its watermark). What a tick does is the watch's; here are its rows."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows


def last_watermark(db: sqlite_utils.Database, suites: str, outcomes: tuple[str, str]) -> float | None:
    """The watermark of the newest tick on this suites folder that ended in one of `outcomes`."""
    found = rows(db, "select watermark from triggers where suites = ? and outcome in (?, ?) "
                     "and watermark is not null order by id desc limit 1", [suites, *outcomes])
    return found[0]["watermark"] if found else None


def insert_tick(db: sqlite_utils.Database, row: dict) -> int:
    """Write a finished tick (committed at once); returns its id."""
    with db.conn:
        return db["triggers"].insert(row).last_pk
