"""The demo dry run under every strategy (small settings), and a population run killed mid-generation."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def command(data_dir: Path, strategy: str, opts: dict, rounds: int = 2, replicates: int = 1) -> list[str]:
    return [sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val",
            "--rounds", str(rounds), "--replicates", str(replicates), "--strategy", strategy,
            "--strategy-opts", json.dumps(opts), "--data-dir", str(data_dir), "--seed", "3"]


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def query(db: Path, sql: str, params=()) -> list[dict]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def ops(data_dir: Path, genome_hash: str) -> set[str]:
    return {rule["op"] for rule in json.loads((data_dir / "genomes" / genome_hash / "rules.json").read_text())}


def workspace(data_dir: Path, round_no: int, sibling: int) -> Path:
    (run_dir,) = (data_dir / "workspaces").iterdir()
    return run_dir / f"round-{round_no}-{sibling}"


@pytest.mark.parametrize("strategy, opts", [
    ("greedy", {}),
    ("branching", {"width": 2}),
    ("population", {"pool": 3, "children": 2, "crossoverRate": 1.0}),
    ("pareto", {"targets": 2}),
])
def test_dry_run_finishes_under_every_strategy(tmp_path, strategy, opts):
    proc = run(command(tmp_path, strategy, opts))
    assert f"· {strategy} ·" in proc.stdout and "status finished" in proc.stdout
    db = tmp_path / "mutator.db"
    attempts = query(db, "select * from attempts where round > 0 order by round, sibling")
    per_round = {"greedy": 1, "branching": 2, "population": 2, "pareto": 1}[strategy]
    assert len(attempts) == 2 * per_round
    assert all(a["status"] in ("kept", "rejected", "screened", "critic_rejected", "failed") for a in attempts)

    if strategy == "branching":
        for r in (1, 2):
            verdicts = [a["verdict"] for a in attempts if a["round"] == r and a["verdict"] in ("KEEP", "REJECT")]
            assert verdicts.count("KEEP") <= 1
        later = (workspace(tmp_path, 1, 1) / "briefing.md").read_text()
        first = attempts[0]["summary"]
        assert "## This round's objective" in later and first in later
        assert f"### Attempt 1 implemented it as: {first}" in later and "```diff" in later
        assert "This round's objective" not in (workspace(tmp_path, 1, 0) / "briefing.md").read_text()
    if strategy == "population":
        round_1 = [a for a in attempts if a["round"] == 1]
        pool = json.loads(round_1[0]["pool_snapshot"])
        assert 1 < len(pool) <= 3
        for a in (a for a in attempts if a["round"] == 2):
            refs = json.loads(a["ref_hashes"])
            assert a["parent_hash"] in pool and len(refs) == 1 and refs[0] in pool and refs[0] != a["parent_hash"]
            assert (workspace(tmp_path, 2, a["sibling"]) / "refs" / refs[0][:12] / "SKILL.md").is_file()
            lends = ops(tmp_path, refs[0]) - ops(tmp_path, a["parent_hash"]) - {"titlecase"}
            assert a["summary"].startswith("Cross over the `") == bool(lends)  # the fake merges when it can
        # lineage stays single-parent: a cross child's genome row names only its parent
        for a in (a for a in attempts if a["round"] == 2 and a["genome_hash"]):
            (genome,) = query(db, "select parent_hash from genomes where hash = ?", [a["genome_hash"]])
            assert genome["parent_hash"] == a["parent_hash"]
    if strategy == "pareto":
        briefing = (workspace(tmp_path, 1, 0) / "briefing.md").read_text()
        assert "## Tasks to target" in briefing
        val_tasks = {json.loads(line)["id"] for line in (ROOT / "suites/clean-val/tasks.jsonl").open()}
        assert not any(f"`{t}`" in briefing for t in val_tasks)  # targets are train tasks, never val
        assert "aimed at" in attempts[0]["summary"]


def scored_first_child(db: Path) -> bool:
    try:
        return bool(query(db, "select 1 from attempts where round = 1 and sibling = 0 and gate is not null"))
    except sqlite3.OperationalError:  # not created yet, or mid-migration
        return False


def snapshot(db: Path) -> dict:
    return {
        "done": {r["id"]: r["n"] for r in query(
            db, "select e.id, count(c.id) as n from evaluations e left join cells c on c.evaluation_id = e.id "
                "where e.status = 'done' group by e.id")},
        "cells": {r["id"]: (r["evaluation_id"], r["task_id"], r["replicate"]) for r in query(
            db, "select id, evaluation_id, task_id, replicate from cells")},
        "scored": {(r["round"], r["sibling"]): (r["genome_hash"], r["gate"], r["parent_hash"], r["ref_hashes"])
                   for r in query(db, "select * from attempts where gate is not null")},
    }


def test_population_run_killed_mid_generation_resumes_without_rescoring(tmp_path):
    cmd = command(tmp_path, "population", {"pool": 3, "children": 2, "crossoverRate": 1.0}, rounds=3,
                  replicates=1)
    db = tmp_path / "mutator.db"
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if scored_first_child(db):
                break
            assert proc.poll() is None, "the run ended before its first generation was scored"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the loop and its agent children, mid-generation
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    (state,) = query(db, "select rounds_done from runs")
    assert state["rounds_done"] == 0, "killed too late: the first generation was already integrated"
    before = snapshot(db)
    assert before["scored"] and before["done"]

    resumed = run(cmd)
    assert "Resuming" in resumed.stdout + resumed.stderr and "status finished" in resumed.stdout
    after = snapshot(db)
    rescored = [e for e, n in before["done"].items() if after["done"].get(e) != n]
    assert rescored == [], "finished evaluations gained cells on resume"
    assert all(after["cells"].get(i) == key for i, key in before["cells"].items()), "a finished cell was lost"
    assert all(after["scored"][k] == v for k, v in before["scored"].items()), "a scored attempt was re-scored"
    new_cells = [key for i, key in after["cells"].items() if i not in before["cells"]]
    assert len(new_cells) == len(set(new_cells))
    assert not set(new_cells) & set(before["cells"].values())
    # each generation planned from the previous snapshot: its parents were pool members
    attempts = query(db, "select * from attempts where round > 0 order by round, sibling")
    for r in (2, 3):
        pool = json.loads(next(a["pool_snapshot"] for a in reversed(attempts)
                               if a["round"] == r - 1 and a["pool_snapshot"]))
        assert all(a["parent_hash"] in pool for a in attempts if a["round"] == r)
    again = run(cmd)
    assert "0 cells run by this command" in again.stdout
