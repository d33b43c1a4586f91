"""Spend as an x axis (Compare, History): the cumulative cells and USD of a run once each round was stored.

The figures are the store's (mutator/store/queries/spend_axis.py says what an attempt adds); this module only
lays them out per round.
"""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.spend_axis import SpendPoint, cumulative


def by_round(points: list[SpendPoint]) -> dict[int, tuple[int, float]]:
    """round -> (cells, USD) once the round's last attempt was stored."""
    return {p.round: (p.cells, p.usd) for p in points}


def series(db: sqlite_utils.Database, run_id: str, rounds: list[int]) -> dict[str, list]:
    """{'cells': [...], 'usd': [...]}: the cumulative spend once each of `rounds` was stored (None before
    any)."""
    spent = by_round(cumulative(db, run_id))
    return {"cells": [spent.get(r, (None, None))[0] for r in rounds],
            "usd": [spent.get(r, (None, None))[1] for r in rounds]}
