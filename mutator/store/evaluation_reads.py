"""Reads of the `evaluations`, `cells` and `tests` tables by the reports after a run (proposals, test reports,
the A/A figures): rows as stored. The evaluation cache's own reads and writes are mutator/store/cache.py's."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows


def graded_pair(db: sqlite_utils.Database, ids: tuple[int, int]) -> dict[int, dict]:
    """{id: {id, genome_hash, suite, suite_hash, contract}} of two evaluations."""
    found = rows(db, "select id, genome_hash, suite, suite_hash, contract from evaluations "
                     "where id in (?, ?)", list(ids))
    return {r["id"]: r for r in found}


def regraded_evaluation(db: sqlite_utils.Database, evaluation: dict, suite_hash: str) -> int | None:
    """The newest finished evaluation of the same genome, suite and contract graded under `suite_hash`."""
    found = rows(db, "select id from evaluations where genome_hash = ? and suite = ? and suite_hash = ? and "
                     "contract = ? and status = 'done' order by id desc limit 1",
                 [evaluation["genome_hash"], evaluation["suite"], suite_hash, evaluation["contract"]])
    return found[0]["id"] if found else None


def evaluation_health(db: sqlite_utils.Database, evaluation_id: int | None) -> dict | None:
    """{status, n_cells, n_failed} of one evaluation (None when there is no such evaluation)."""
    found = rows(db, "select status, n_cells, n_failed from evaluations where id = ?", [evaluation_id])
    return found[0] if found else None


def cells_of(db: sqlite_utils.Database, evaluation_ids: list[int]) -> list[dict]:
    """Every cell row of these evaluations."""
    return rows(db, f"select * from cells where evaluation_id in ({', '.join('?' * len(evaluation_ids))})",
                evaluation_ids)


def cell_tests(db: sqlite_utils.Database, evaluation_id: int) -> list[dict]:
    """{task_id, replicate, status, name, score} of each named test of each cell (name None for a cell without
    test rows)."""
    return rows(db, "select c.task_id, c.replicate, c.status, t.name, t.score from cells c left join tests t "
                    "on t.cell_id = c.id where c.evaluation_id = ?", [evaluation_id])
