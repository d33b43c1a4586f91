"""Spend as an x axis (Compare, History): each attempt's cumulative cells and USD within its run, from stored rows.

An attempt adds the cells (graded, `evaluations.n_done`) and the USD (`evaluations.cost_usd_total`) of each val or
train evaluation its run had not used before, plus its own mutator call (`attempts.mutator_cost_usd`). An evaluation
served from the cache of another run counts in each run that uses it: the axis compares strategies by the work their
curves rest on, not by the bill (the Cost page is the bill).
"""

from __future__ import annotations

import sqlite_utils

SQL = ("select a.round, a.sibling, a.val_evaluation_id, a.train_evaluation_id, coalesce(a.mutator_cost_usd, 0), "
       "v.n_done, v.cost_usd_total, t.n_done, t.cost_usd_total from attempts a "
       "left join evaluations v on v.id = a.val_evaluation_id left join evaluations t on t.id = a.train_evaluation_id "
       "where a.run_id = ? order by a.round, a.sibling")


def cumulative(db: sqlite_utils.Database, run_id: str) -> list[tuple[int, int, int, float]]:
    """[(round, sibling, cells so far, USD so far)] in attempt order (round, sibling)."""
    seen: set[int] = set()
    cells, usd = 0, 0.0
    out = []
    for rnd, sibling, val_id, train_id, mutator, v_cells, v_usd, t_cells, t_usd in db.conn.execute(SQL, [run_id]):
        for ev_id, n, cost in ((val_id, v_cells, v_usd), (train_id, t_cells, t_usd)):
            if ev_id is not None and ev_id not in seen:
                seen.add(ev_id)
                cells += n or 0
                usd += cost or 0.0
        usd += mutator
        out.append((rnd, sibling, cells, usd))
    return out


def by_round(points: list[tuple[int, int, int, float]]) -> dict[int, tuple[int, float]]:
    """round -> (cells, USD) once the round's last attempt was stored."""
    return {rnd: (cells, usd) for rnd, _, cells, usd in points}


def series(db: sqlite_utils.Database, run_id: str, rounds: list[int]) -> dict[str, list]:
    """{'cells': [...], 'usd': [...]}: the cumulative spend once each of `rounds` was stored (None before any)."""
    spent = by_round(cumulative(db, run_id))
    return {"cells": [spent.get(r, (None, None))[0] for r in rounds],
            "usd": [spent.get(r, (None, None))[1] for r in rounds]}
