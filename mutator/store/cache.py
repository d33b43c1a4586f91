"""The evaluation cache: evaluation and cell rows keyed by the evaluation contract.

An evaluation row is keyed by genome + suite content + contract; a finished cell is written the moment
it is graded (the cell, its tests and the evaluation's counter in one transaction), so a crash re-runs
only the cells that never finished and a repeated key spends nothing. Never runs a cell itself.
"""

from __future__ import annotations

import sqlite_utils

from eval.cells import Contract
from eval.jobs import CellResult
from eval.suite import Suite
from mutator.store.db import dumps, now


def find(db: sqlite_utils.Database, key: str) -> dict | None:
    found = list(db["evaluations"].rows_where("key = ?", [key]))
    return found[0] if found else None


def open_evaluation(db: sqlite_utils.Database, key: str, genome_hash: str, suite: Suite,
                    contract: Contract) -> dict:
    """The evaluation row for this key, created ("running", no cells yet) when it is new."""
    row = find(db, key)
    if row is None:
        db["evaluations"].insert({
            "key": key, "genome_hash": genome_hash, "suite": suite.name, "suite_hash": suite.content_hash,
            "split": suite.split, "contract": dumps(contract.to_json()), "model": contract.model,
            "replicates": contract.replicates, "status": "running",
            "n_cells": len(suite.tasks) * contract.replicates, "n_done": 0, "started_at": now()})
        row = find(db, key)
    return row


def finished(db: sqlite_utils.Database, evaluation_id: int) -> set[tuple[str, int]]:
    """(task, replicate) of every cell already stored: a resume skips them."""
    return {(r["task_id"], r["replicate"]) for r in
            db.query("select task_id, replicate from cells where evaluation_id = ?", [evaluation_id])}


def store_cell(db: sqlite_utils.Database, evaluation_id: int, cell: CellResult) -> None:
    """The cell, its tests and the evaluation's counter commit together or not at all."""
    row = {"evaluation_id": evaluation_id, "task_id": cell.task_id, "replicate": cell.replicate,
           "status": cell.status, "score": cell.score, "cost_usd": cell.cost_usd, "steps": cell.steps,
           "input_tokens": cell.input_tokens, "output_tokens": cell.output_tokens,
           "cache_write_tokens": cell.cache_write_tokens, "cache_read_tokens": cell.cache_read_tokens,
           "duration_ms": cell.duration_ms, "agent_subtype": cell.agent_subtype, "error": cell.error,
           "cell_dir": cell.cell_dir, "finished_at": now(),
           **{k: cell.extra[k] for k in ("priced_cost_usd", "reported_cost_usd", "retries", "grader_input_tokens",
                                         "grader_output_tokens") if k in cell.extra}}
    conn = db.conn
    with conn:
        cursor = conn.execute(f"insert into cells ({', '.join(row)}) values ({', '.join('?' * len(row))})",
                              list(row.values()))
        conn.executemany("insert into tests (cell_id, name, score) values (?, ?, ?)",
                         [(cursor.lastrowid, name, score) for name, score in sorted(cell.tests.items())])
        conn.execute("update evaluations set n_done = n_done + 1 where id = ?", [evaluation_id])


def cell_rows(db: sqlite_utils.Database, evaluation_id: int) -> list[dict]:
    return list(db.query("select * from cells where evaluation_id = ? order by task_id, replicate",
                         [evaluation_id]))


def close_evaluation(db: sqlite_utils.Database, evaluation_id: int) -> None:
    """Every cell stored: the evaluation is done, with its per-cell means."""
    rows = cell_rows(db, evaluation_id)
    n = max(len(rows), 1)
    db["evaluations"].update(evaluation_id, {
        "status": "done", "n_done": len(rows), "finished_at": now(),
        "eval": sum(r["score"] or 0.0 for r in rows) / n, "cost": sum(r["cost_usd"] or 0.0 for r in rows) / n,
        "steps": sum(r["steps"] or 0 for r in rows) / n, "cost_usd_total": sum(r["cost_usd"] or 0.0 for r in rows)})
