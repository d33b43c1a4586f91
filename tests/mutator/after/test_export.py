"""run.py --export: a run's tables as CSV (parquet when pyarrow is installed), other runs left out."""

import sys

import pandas as pd
import pytest

from mutator.after.export import ExportError, export, frames
from mutator.store.db import connect


def fill(db_path):
    db = connect(db_path)
    for run_id in ("run-a", "run-b"):
        db["runs"].insert({"id": run_id, "status": "finished", "kind": "evolve", "created_at": 1.0})
    ev = {}
    for key in ("k1", "k2", "k3"):
        ev[key] = db["evaluations"].insert({"key": key, "status": "done", "genome_hash": key}).last_pk
        cell = db["cells"].insert({"evaluation_id": ev[key], "task_id": "t1", "replicate": 0, "status": "ok",
                                   "score": 0.5}).last_pk
        db["tests"].insert_all([{"cell_id": cell, "name": "dates", "score": 1.0},
                                {"cell_id": cell, "name": "rows", "score": 0.0}])
    db["attempts"].insert_all([
        {"run_id": "run-a", "round": 0, "sibling": 0, "status": "seed", "val_evaluation_id": ev["k1"]},
        {"run_id": "run-a", "round": 1, "sibling": 0, "status": "kept", "val_evaluation_id": ev["k2"],
         "pool_snapshot": '["x", "y"]', "ref_hashes": '["y"]'},
        {"run_id": "run-b", "round": 0, "sibling": 0, "status": "seed", "val_evaluation_id": ev["k3"]}])
    db.conn.close()


def test_a_runs_tables_hold_only_its_own_rows(tmp_path):
    fill(tmp_path / "mutator.db")
    tables = frames(tmp_path / "mutator.db", "run-a")
    assert len(tables["attempts"]) == 2 and set(tables["evaluations"]["key"]) == {"k1", "k2"}
    assert len(tables["cells"]) == 2 and len(tables["tests"]) == 4 and tables["test_runs"].empty


def test_csv_export_round_trips(tmp_path):
    fill(tmp_path / "mutator.db")
    written = export(tmp_path / "mutator.db", "run-a", "csv", tmp_path / "out")
    assert [p.name for p in written] == [f"run-a-{t}.csv" for t in
                                         ("attempts", "evaluations", "cells", "tests", "test_runs")]
    attempts = pd.read_csv(written[0])
    assert list(attempts["round"]) == [0, 1] and attempts["pool_snapshot"].iloc[1] == '["x", "y"]'
    assert sorted(pd.read_csv(written[3])["name"]) == ["dates", "dates", "rows", "rows"]


def test_unknown_run_and_missing_store_name_the_fix(tmp_path):
    fill(tmp_path / "mutator.db")
    with pytest.raises(ExportError, match="runs there: run-a, run-b"):
        export(tmp_path / "mutator.db", "run-z", "csv", tmp_path / "out")
    with pytest.raises(ExportError, match="--data-dir"):
        export(tmp_path / "nowhere.db", "run-a", "csv", tmp_path / "out")


def test_parquet_without_pyarrow_says_so(tmp_path, monkeypatch):
    fill(tmp_path / "mutator.db")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    with pytest.raises(ExportError, match="needs pyarrow.*--format csv"):
        export(tmp_path / "mutator.db", "run-a", "parquet", tmp_path / "out")


def test_parquet_export_when_pyarrow_is_installed(tmp_path):
    pytest.importorskip("pyarrow")
    fill(tmp_path / "mutator.db")
    written = export(tmp_path / "mutator.db", "run-a", "parquet", tmp_path / "out")
    assert len(pd.read_parquet(written[2])) == 2
