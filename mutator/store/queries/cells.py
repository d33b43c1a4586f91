"""Cells as the dashboard shows them: one cell with its evaluation's key and its test scores, and an
evaluation's cells with each cell's tests."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import one, q


def cell(db: sqlite_utils.Database, cell_id: int) -> dict | None:
    """The cell's whole row plus its evaluation's key (as evaluation_key), genome and suite."""
    return one(db, "select c.*, e.key as evaluation_key, e.genome_hash, e.suite from cells c join "
                   "evaluations e on e.id = c.evaluation_id where c.id = ?", [cell_id])


def cell_tests(db: sqlite_utils.Database, cell_id: int) -> dict[str, float | None]:
    """{test name: score} of one cell, by name."""
    found = q(db, "select name, score from tests where cell_id = ? order by name", [cell_id])
    return {r["name"]: r["score"] for r in found}


def of_evaluation(db: sqlite_utils.Database, evaluation_id: int) -> list[dict]:
    """The evaluation's own cells (a group's are its members'), by task and replicate, as the grid shows
    them."""
    return q(db, "select id, task_id, replicate, status, score, cost_usd, steps, duration_ms, input_tokens, "
                 "output_tokens, agent_subtype, error from cells where evaluation_id = ? order by task_id, "
                 "replicate", [evaluation_id])


def tests_of_evaluation(db: sqlite_utils.Database, evaluation_id: int) -> dict[int, dict[str, float | None]]:
    """{cell id: {test name: score}} of the evaluation's own cells."""
    tests: dict[int, dict] = {}
    for row in q(db, "select t.cell_id, t.name, t.score from tests t join cells c on c.id = t.cell_id where "
                     "c.evaluation_id = ?", [evaluation_id]):
        tests.setdefault(row["cell_id"], {})[row["name"]] = row["score"]
    return tests
