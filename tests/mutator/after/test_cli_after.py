"""End to end through run.py on a real dry run: the finished run's automatic proposal, --propose,
--accept/--reject refusals, --rollback, and --audit as JSON and CSV."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3

from tests.conftest import copy_store, run_py

from .conftest import SEED, snapshot


def test_finished_run_proposes_then_accept_rollback_and_refusals(dry_run, tmp_path):
    data = tmp_path / "data"
    copy_store(dry_run["data"], data)
    assert "New proposal 1 (proposed)" in dry_run["stdout"]
    again = run_py("--propose", dry_run["run_id"], "--data-dir", str(data))
    assert again.returncode == 0 and again.stdout.startswith("Proposal 1 (proposed)")   # not duplicated
    target = tmp_path / "skills" / "csv-clean"
    shutil.copytree(SEED, target)
    before = snapshot(target)
    assert run_py("--accept", "1", "--data-dir", str(data)).returncode == 2             # --to is required
    done = run_py("--accept", "1", "--to", str(target), "--note", "reviewed", "--data-dir", str(data))
    assert done.returncode == 0 and "previous version kept at" in done.stdout
    refused = run_py("--reject", "1", "--reason", "late", "--data-dir", str(data))
    assert refused.returncode == 2 and "proposal 1 is deployed" in refused.stderr
    back = run_py("--rollback", str(target), "--data-dir", str(data))
    assert back.returncode == 0 and snapshot(target) == before
    with sqlite3.connect(data / "mutator.db") as conn:
        steps = conn.execute("select action, status_to from proposal_decisions where proposal_id = 1 order by id").fetchall()
    assert steps == [("propose", "proposed"), ("accept", "accepted"), ("deploy", "deployed"), ("rollback", "rolled_back")]
    with sqlite3.connect(data / "mutator.db") as conn:   # the run recorded its own skill folder (migration _v14)
        assert conn.execute("select skill_dir from runs").fetchone()[0] == str(SEED.resolve())


def test_audit_json_and_csv(dry_run, tmp_path):
    out_json, out_csv = tmp_path / "audit.json", tmp_path / "audit.csv"
    assert run_py("--audit", dry_run["run_id"], "--out", str(out_json), "--data-dir", str(dry_run["data"])).returncode == 0
    record = json.loads(out_json.read_text())
    attempts = record["attempts"]
    assert [a["round"] for a in attempts][:1] == [0] and len(attempts) >= 4
    scored = [a for a in attempts if a["round"] > 0 and a["verdict"] in ("KEEP", "REJECT")]
    assert scored and all(a["gate_threshold"] is not None and a["critic"] for a in scored)
    assert sum(a["cost_usd"] for a in attempts) > 0
    assert record["decisions"][0]["action"] == "propose"
    assert run_py("--audit", dry_run["run_id"], "--out", str(out_csv), "--data-dir", str(dry_run["data"])).returncode == 0
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["kind"] for r in rows].count("attempt") == len(attempts) and rows[-1]["kind"] == "decision"
    bad = run_py("--audit", dry_run["run_id"], "--out", str(tmp_path / "a.txt"), "--data-dir", str(dry_run["data"]))
    assert bad.returncode == 2 and ".json or .csv" in bad.stderr
    missing = run_py("--audit", "run-ffffffffffff", "--out", str(out_csv), "--data-dir", str(dry_run["data"]))
    assert missing.returncode == 2 and "is not in" in missing.stderr
