"""The winner's-curse guard and val accounting, on the demo."""

from __future__ import annotations

import json
from pathlib import Path

from mutator.db import connect_readonly
from tests.conftest import run_cli


def test_confirmation_overturns_a_lucky_keep(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1",
                     "--confirm", "--gate-z", "0", "--min-improvement", "0.02", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    db = connect_readonly(data / "mutator.db")
    rows = [dict(r) for r in db.query("select * from attempts order by round")]
    first, second = json.loads(rows[1]["confirm"]), json.loads(rows[2]["confirm"])
    assert rows[1]["verdict"] == "KEEP" and first["stands"] is True
    assert rows[2]["verdict"] == "REJECT" and second["stands"] is False
    # the original gate passed; only the fresh replicates failed it
    assert rows[2]["delta"] >= rows[2]["gate_threshold"] and second["gate"]["delta"] < second["gate"]["threshold"]
    assert "keep overturned by confirmation" in rows[2]["error"] and rows[2]["train_evaluation_id"] is None
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["incumbent_hash"] == rows[1]["genome_hash"] and run["confirm"] == 1
    salts = {json.loads(r["contract"])["salt"] for r in db.query(
        "select contract from evaluations where id in (?, ?)",
        [second["candidate_evaluation_id"], second["incumbent_evaluation_id"]])}
    assert salts == {second["salt"]} and second["salt"].endswith(":2")
    assert run["val_queries"] == 3 + 2 * 2  # seed + two candidates + two confirmations of two evaluations
    assert "2 keep(s) re-checked on fresh val replicates, 1 overturned" in result.stdout
    assert "val queried by 7 candidate evaluations" in result.stdout
