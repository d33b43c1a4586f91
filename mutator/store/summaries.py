"""The reads behind a run's end-of-run summary (mutator/round/summary.py): its failed evaluations and the cell
folders its attempts used, as records and plain values."""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils


@dataclass(frozen=True)
class FailedCells:
    """One evaluation of an attempt that holds failed cells."""
    round: int
    sibling: int
    suite: str
    n_failed: int
    n_cells: int
    n_done: int
    failures: str | None    # JSON: {status: count}


def failed_evaluations(db: sqlite_utils.Database, run_id: str) -> list[FailedCells]:
    """The run's attempts' evaluations with failed cells, by round, sibling and suite ([] for a store from
    before evaluations counted their failures)."""
    if "n_failed" not in {c.name for c in db["evaluations"].columns}:
        return []
    return [FailedCells(**r) for r in db.query(
        "select distinct a.round, a.sibling, e.suite, e.n_failed, e.n_cells, e.n_done, e.failures from "
        "attempts a join evaluations e on e.id in (a.val_evaluation_id, a.train_evaluation_id) where "
        "a.run_id = ? and e.n_failed > 0 order by a.round, a.sibling, e.suite", [run_id])]


def cell_dirs(db: sqlite_utils.Database, run_id: str) -> list[str]:
    """The cell folders of every evaluation this run's attempts used (a several-model evaluation's cells are
    its members')."""
    return [r["cell_dir"] for r in db.query(
        "select distinct c.cell_dir from cells c join evaluations e on c.evaluation_id = e.id or "
        "c.evaluation_id in (select value from json_each(e.members)) join attempts a on e.id in "
        "(a.val_evaluation_id, a.train_evaluation_id) where a.run_id = ?", [run_id])]
