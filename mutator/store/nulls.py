"""The `null_controls` table's reads and writes: a round's null controls (mutator/round/nulls.py) as
stored."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows


def null_rows(db: sqlite_utils.Database, run_id: str, round_no: int) -> list[dict]:
    """The null controls round `round_no` of the run stored."""
    return rows(db, "select * from null_controls where run_id = ? and round = ?", [run_id, round_no])


def insert_null(db: sqlite_utils.Database, row: dict) -> None:
    """One null control's row."""
    db["null_controls"].insert(row)
