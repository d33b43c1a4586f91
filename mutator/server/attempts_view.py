"""The attempts table: every attempt of a run (or of every run of a skill) as one row of stored figures, for
the sortable, filterable table and its CSV export. Pure reads of what the loop stored; nothing re-derived.

A comparator not stored on an older attempt is the incumbent its run stored after the round before (the same
fallback as Round Analysis, mutator/server/gate_view.py). Rows go out as lists in COLUMNS order (half the
bytes).
"""

from __future__ import annotations

import csv
import io

import sqlite_utils

from mutator.server import decisions as D
from mutator.store.notes import notes_of
from mutator.store.queries import table

COLUMNS = ("id", "run_id", "round", "sibling", "parent_hash", "comparator_hash", "genome_hash", "verdict",
           "verdict_note", "reason", "delta", "gate_threshold", "composite", "eval", "cost", "steps",
           "mutator_cost_usd", "cells", "failures", "duration_s", "status", "name", "tags", "summary")


def attempts(db: sqlite_utils.Database, *, run_id: str | None = None, skill: str | None = None) -> list[dict]:
    """The table's rows, each a list in COLUMNS order: one run's attempts, or every run's of a skill (run by
    run, round order)."""
    found = table.rows(db, run_id=run_id, skill=skill)
    D.annotate(found)
    notes = notes_of(db, [f"attempt:{row['id']}" for row in found])
    after: dict[str, dict[int, str | None]] = {}
    for row in found:
        # older: the incumbent its run stored before the round
        if row["gated"] and row["comparator_hash"] is None:
            if row["run_id"] not in after:
                after[row["run_id"]] = D.incumbents([r for r in found if r["run_id"] == row["run_id"]])
            row["comparator_hash"] = after[row["run_id"]].get(row["round"] - 1)
        mine = notes.get(f"attempt:{row['id']}") or {}
        row["name"], row["tags"] = mine.get("name"), ",".join(mine.get("tags") or []) or None
    return [[row.get(name) for name in COLUMNS] for row in found]


def to_csv(rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    return out.getvalue()
