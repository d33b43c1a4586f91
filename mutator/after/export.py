"""Export one run's record as tables for notebooks: attempts, evaluations, cells, tests, test_runs.

Reads the store read-only (safe beside a running loop) and writes one file per table. Parquet needs
pyarrow; CSV needs nothing beyond pandas. Never writes to the database.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from eval.errors import SkillMutatorError
from mutator.store.db import connect_readonly

FORMATS = ("csv", "parquet")


class ExportError(SkillMutatorError, ValueError):
    """The export cannot be made as asked; the message says the fix."""


def frames(db_path: Path, run_id: str) -> dict[str, pd.DataFrame]:
    """The run's tables: its attempts, the evaluations they (and its test runs) used, their cells and tests."""
    if not db_path.is_file():
        raise ExportError(f"no store at {db_path}; pass the --data-dir the run was made with")
    db = connect_readonly(db_path)
    conn = db.conn
    try:
        runs = [r[0] for r in conn.execute("select id from runs order by created_at")]
        if run_id not in runs:
            raise ExportError(f"run {run_id!r} is not in {db_path}; runs there: {', '.join(runs) or '(none)'}")
        attempts = pd.read_sql_query("select * from attempts where run_id = ? order by round, sibling", conn,
                                     params=[run_id])
        test_runs = pd.read_sql_query("select * from test_runs where run_id = ? order by id", conn, params=[run_id])
        ids = sorted({int(i) for column in (attempts["val_evaluation_id"], attempts["train_evaluation_id"],
                                            test_runs["evaluation_id"]) for i in column.dropna()})
        grouped = any(r[1] == "members" for r in conn.execute("PRAGMA table_info(evaluations)"))   # _v9
        for group in list(ids) if grouped else []:   # a several-model evaluation: its members hold the cells
            found = conn.execute("select members from evaluations where id = ?", [group]).fetchone()
            ids += sorted(json.loads(found[0]).values()) if found and found[0] else []
        ids = sorted(set(ids))
        marks = ",".join("?" * len(ids)) or "null"
        evaluations = pd.read_sql_query(f"select * from evaluations where id in ({marks}) order by id", conn,
                                        params=ids)
        cells = pd.read_sql_query(f"select * from cells where evaluation_id in ({marks}) "
                                  "order by evaluation_id, task_id, replicate", conn, params=ids)
        tests = pd.read_sql_query(
            f"select t.*, c.evaluation_id, c.task_id, c.replicate from tests t join cells c on c.id = t.cell_id "
            f"where c.evaluation_id in ({marks}) order by t.cell_id, t.name", conn, params=ids)
    finally:
        conn.close()
    return {"attempts": attempts, "evaluations": evaluations, "cells": cells, "tests": tests, "test_runs": test_runs}


def export(db_path: Path, run_id: str, fmt: str, out_dir: Path) -> list[Path]:
    """Write each table as out_dir/<run>-<table>.<fmt>; returns the files written."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not supported; use one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ExportError("--format parquet needs pyarrow, which is not installed: `pip install 'pyarrow>=14'` "
                              "or use --format csv") from None
    tables = frames(db_path, run_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables.items():
        path = out_dir / f"{run_id}-{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        written.append(path)
    return written
