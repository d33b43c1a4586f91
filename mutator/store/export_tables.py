"""One run's rows as pandas tables for `run.py --export`: its attempts and test runs, the evaluations
they used (a several-model evaluation's members too), their cells and tests. Reads only."""

from __future__ import annotations

import json

import pandas as pd
import sqlite_utils


def run_frames(db: sqlite_utils.Database, run_id: str) -> dict[str, pd.DataFrame]:
    """{attempts, evaluations, cells, tests, test_runs} of the run, each in a stable order."""
    conn = db.conn
    attempts = pd.read_sql_query("select * from attempts where run_id = ? order by round, sibling", conn,
                                 params=[run_id])
    test_runs = pd.read_sql_query("select * from test_runs where run_id = ? order by id", conn,
                                  params=[run_id])
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
    return {"attempts": attempts, "evaluations": evaluations, "cells": cells, "tests": tests,
            "test_runs": test_runs}
