"""The demo dry run end to end: what lands in the store, resume, extension, crash recovery.

The tests on `demo_store` pin the README demo's one draw, on purpose: its verdicts (test_demo_records_every_verdict),
which evaluations a round decided early (test_cells_and_tests_rows) and its champion (test_genome_history_in_git)
rest on the fake agent's seeded skips. That draw is the same on every machine: a dry run's agent ids hash the fakes'
bytes, never their argv (mutator/cli/agents.py), so no checkout path or interpreter enters a cell's seed. It moves
when the fakes, the demo suites or the seed function change (issue 49's sweep: with eval/cells.py's seed salted,
these three fail and the rest of this file passes), which is the regression these tests are there to show."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scipy import stats

from mutator.scoring import signflip
from mutator.store.db import connect_readonly, loads
from tests.conftest import DEMO_ARGS, ROOT, copy_store, run_cli


def attempts(data_dir: Path) -> list[dict]:
    db = connect_readonly(data_dir / "mutator.db")
    return [dict(r) for r in db.query("select * from attempts order by round, sibling")]


def test_demo_records_every_verdict(demo_store) -> None:
    data_dir, result = demo_store
    rows = attempts(data_dir)
    assert [r["round"] for r in rows] == [0, 1, 2, 3, 4, 5, 6]
    # round 6 (dedupe) at 2 replicates: Δeval +0.033 but dearer, Δ −0.002, a tie the gate keeps that adds cost, so
    # the tie rule (score.tieRule noAddedCost) rejects it; it was a KEEP before the loop applied the rule
    # round 3 (titlecase) is killed by the train screen (screen.tasks 6) before any val cell
    assert [r["verdict"] for r in rows] == ["SEED", "KEEP", "KEEP", "SCREENED", "CRITIC", "CRITIC", "REJECT"]
    assert [r["status"] for r in rows] == ["seed", "kept", "kept", "screened", "critic_rejected",
                                          "critic_rejected", "rejected"]
    assert rows[3]["val_evaluation_id"] is None and loads(rows[3]["screen"])["cells"] == 6
    tie = loads(rows[6]["gate"])["tie"]
    assert tie["gate_keep"] and tie["tie"] and tie["adds_cost"] and not tie["keep"] and rows[6]["delta"] < 0
    assert "identical to its parent" in rows[4]["error"] and "references/date-formats.md" in rows[5]["error"]
    assert rows[4]["val_evaluation_id"] is None and rows[5]["val_evaluation_id"] is None  # nothing spent
    db = connect_readonly(data_dir / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["status"] == "finished" and run["rounds_done"] == 6
    assert run["incumbent_hash"] == rows[2]["genome_hash"]
    champion = rows[2]
    assert champion["composite"] > rows[0]["composite"]
    assert "Run run-" in result.stdout and "KEEP 2 · REJECT 1 · SCREENED 1 · CRITIC 2 · FAILED 0" in result.stdout


def test_rejected_change_is_not_the_next_parent(demo_store) -> None:
    rows = attempts(demo_store[0])
    assert rows[4]["parent_hash"] == rows[2]["genome_hash"]  # round 3 was screened, round 4 mutates round 2's
    for row in rows[1:]:
        assert row["summary"] and row["reasoning"] is not None and row["mutator_cost_usd"] > 0


def test_gate_figures_rederive_from_the_row(demo_store) -> None:
    """Every stored figure from the row alone: the deltas, the split, t and the threshold, the sign-flip critical
    value from the deltas and the earlier full comparisons (an early look of val in waves pools them with their
    scale widened by √(K/k), and is itself never pooled later)."""
    prior: list[tuple[int, float]] = []
    flipped = early = 0
    for row in attempts(demo_store[0]):
        if row["gate"] is None:
            continue
        gate, looks = loads(row["gate"]), loads(row["looks"])
        last = looks[-1]
        assert last["gate"] == {k: v for k, v in gate.items() if k != "early_look"}   # the verdict is the last look's
        assert len(gate["deltas"]) == row["gate_n"] == 8
        assert row["delta"] == pytest.approx(sum(gate["deltas"].values()) / 8)
        assert row["delta"] == pytest.approx(row["delta_eval"] + row["delta_cost"] + row["delta_steps"])
        widen = (2 / last["replicates"]) ** 0.5 if last["decision"] else 1.0
        prior_weight, prior_df = sum((n - 1) * s_r * widen for n, s_r in prior), sum(n - 1 for n, _ in prior)
        assert row["gate_df"] == prior_df + 7
        t_student = stats.t.ppf(stats.norm.cdf(gate["gate_z"]), row["gate_df"]) if row["gate_df"] else 0.0
        assert gate["t_student"] == pytest.approx(t_student) and gate["method"] == "signflip"
        if gate["flip"] is None:
            t, keep = t_student, row["delta"] >= row["gate_threshold"]
        else:   # the sign-flip critical value, from the stored deltas and the earlier comparisons alone
            flip = signflip.critical([d - gate["min_improvement"] for d in gate["deltas"].values()], prior_weight,
                                     prior_df, stats.norm.sf(gate["gate_z"]))
            t, keep, flipped = flip.t, flip.keep, flipped + 1
            assert flip.to_json() == gate["flip"]
        assert row["gate_t"] == pytest.approx(t)
        assert row["gate_threshold"] == pytest.approx(gate["min_improvement"] - t * row["gate_se"])
        # then the tie rule (score.tieRule noAddedCost): a tie the gate keeps is rejected when it adds cost, the mean
        # change of the cost and steps terms below −t·SE at t = t.ppf(Φ(3), n − 1)
        tie = gate["tie"]
        assert tie["gate_keep"] == keep and tie["tie"] == (keep and row["delta"] < gate["min_improvement"])
        assert tie["delta_cost"] == pytest.approx(row["delta_cost"] + row["delta_steps"])
        assert tie["t"] == pytest.approx(stats.t.ppf(stats.norm.cdf(3.0), 7))
        assert tie["adds_cost"] == (tie["delta_cost"] < -tie["t"] * tie["se"] - 1e-12)
        final = keep and not (tie["rule"] == "noAddedCost" and tie["tie"] and tie["adds_cost"])
        assert (row["verdict"] == "KEEP") == final == gate["keep"]
        if last["decision"]:
            early += 1
            assert "early_look" in gate and last["z"] == gate["gate_z"] == 2.0
        else:
            prior.append((row["gate_n"], gate["s_r"]))
    # three val decisions (rounds 1, 2, 6), each at the last of 2 looks (the screen took round 3's regression)
    assert flipped == 3 and early == 0


def test_cells_and_tests_rows(demo_store) -> None:
    db = connect_readonly(demo_store[0] / "mutator.db")
    per_eval = [dict(r) for r in db.query("select e.id, e.suite, e.n_cells, e.n_done, count(c.id) as n from evaluations e "
                                          "join cells c on c.evaluation_id = e.id group by e.id")]
    assert all(r["n"] == r["n_done"] for r in per_eval)
    # every val evaluation is whole but those of attempts decided at an early look of val in waves (none here);
    # every train evidence holds evidenceReplicates (1) of the demo's 2 replicates, replicate 0; the screened
    # candidate's train evaluation holds its 6 screen cells
    rows = attempts(demo_store[0])
    early = {r["val_evaluation_id"]: loads(r["looks"])[-1]["cells"] for r in rows
             if r["looks"] and loads(r["looks"])[-1]["decision"]}
    assert all(r["n"] == early.get(r["id"], r["n_cells"]) for r in per_eval if r["suite"] == "clean-val")
    evidence = {r["train_evaluation_id"] for r in rows if r["train_evaluation_id"]}
    train = {r["id"]: r["n"] for r in per_eval if r["suite"] == "clean-train"}
    assert len(evidence) == 3 and all(train[e] == 12 for e in evidence)    # the seed and the 2 kept
    assert sorted(n for e, n in train.items() if e not in evidence) == [6, 6]  # round 3 (SCREENED), round 6 (passed
    # the screen, rejected on val): their 6 screen cells each
    assert {r["replicate"] for r in db.query("select distinct c.replicate from cells c join evaluations e on "
                                             "e.id = c.evaluation_id where e.suite = 'clean-train'")} == {0}
    assert {r["suite"] for r in per_eval} == {"clean-train", "clean-val"}  # the holdout is never evaluated
    names = {r["name"] for r in db.query("select distinct name from tests")}
    assert {"parses", "headers", "rows", "text", "dates"} <= names
    assert next(iter(db.query("pragma integrity_check")))["integrity_check"] == "ok"


def test_the_tie_rule_rests_on_the_last_look_only(demo_store) -> None:
    """score.tieRule (noAddedCost) is applied where a verdict rests: the last look of val; an early look, deciding
    nothing on a tie, never applies it."""
    last = early = 0
    for row in attempts(demo_store[0]):
        if row["looks"] is None:
            continue
        looks = loads(row["looks"])
        for look in looks:
            decisive = look is looks[-1] and look["decision"] is None
            assert look["gate"]["tie"]["rule"] == ("noAddedCost" if decisive else "keep")
            last, early = last + decisive, early + (not decisive)
        assert loads(row["gate"])["tie"] == looks[-1]["gate"]["tie"]
    assert last >= 1 and early >= 1


def test_genome_history_in_git(demo_store) -> None:
    data_dir = demo_store[0]
    run_id = next(iter(connect_readonly(data_dir / "mutator.db").query("select id from runs")))["id"]
    log = subprocess.run(["git", "-C", str(data_dir / "genomes.git"), "log", "-p", "--format=%s", run_id],
                         capture_output=True, text=True, check=True).stdout
    first = log.split("\n")[0]   # the champion's commit: round 2's (round 6, dedupe, was a tie adding cost)
    assert "amounts" in log and "+" in log and "amounts" in first and "titlecase" not in first


def test_same_command_resumes_without_new_cells(demo_store, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(demo_store[0], data_dir)
    before = attempts(data_dir)
    result = run_cli(*DEMO_ARGS, "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    assert "Resuming run-" in result.stderr and "0 cells run by this command" in result.stdout
    assert attempts(data_dir) == before


def test_more_rounds_extend_by_exactly_that_many(demo_store, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(demo_store[0], data_dir)
    args = [a if a != "6" else "8" for a in DEMO_ARGS]
    result = run_cli(*args, "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    rows = attempts(data_dir)
    assert [r["round"] for r in rows] == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert len({r["run_id"] for r in rows}) == 1


def test_test_run_is_cached_and_appended(demo_tested, tmp_path: Path) -> None:
    data_dir = copy_store(demo_tested[0], tmp_path / "data")   # the session's demo store after its first test run
    run_id = attempts(data_dir)[0]["run_id"]
    first = demo_tested[1]
    assert first.returncode == 0, first.stderr
    assert "48 cells run" in first.stdout  # champion + seed + the no-skill control, 8 tasks x 2 replicates each
    second = run_cli("--test-run", run_id, "--suite", "clean-test", "--data-dir", str(data_dir))
    assert "0 cells run (all cached)" in second.stdout
    db = connect_readonly(data_dir / "mutator.db")
    rows = [dict(r) for r in db.query("select * from test_runs order by id")]
    assert [r["status"] for r in rows] == ["done", "done"] and rows[0]["composite"] == rows[1]["composite"]
    refused = run_cli("--test-run", run_id, "--suite", "clean-val", "--data-dir", str(data_dir))
    assert refused.returncode == 2 and "held out" in refused.stderr


@pytest.mark.parametrize("args, message", [
    (("--suite", "clean-val", "--val", "clean-val"), "validation must be a different suite"),
    (("--suite", "clean-train"), "--val is required"),
    (("--suite", "clean-train", "--val", "no-such-suite"), "no-such-suite: suite directory not found"),
    (("--suite", "clean-train", "--val", "clean-val", "--replicates", "0"), "'replicates' must be an integer >= 1"),
    (("--suite", "clean-train", "--val", "clean-val", "--strategy", "anneal"), "unknown strategy 'anneal'"),
    (("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-train"), "is also used as train or val"),
])
def test_bad_invocations_exit_before_any_cell(tmp_path: Path, args: tuple, message: str) -> None:
    result = run_cli(*args, "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 2 and message in result.stderr
    assert not (tmp_path / "data" / "evals").exists()


def test_broken_suite_file_named(tmp_path: Path) -> None:
    suite = tmp_path / "broken-val"
    shutil.copytree(ROOT / "suites" / "clean-val", suite)
    (suite / "suite.md").write_text((suite / "suite.md").read_text().replace("clean-val", "broken-val"))
    with open(suite / "tasks.jsonl", "a") as f:
        f.write("{not json\n")
    result = run_cli("--suite", "clean-train", "--val", str(suite), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 2 and f"{suite}/tasks.jsonl:9: not valid JSON" in result.stderr


def test_garbage_from_the_mutator_is_a_failed_attempt(tmp_path: Path) -> None:
    env = {**os.environ, "FAKE_MUTATOR_GARBAGE": "1"}
    result = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "1", "--replicates", "1",
                     "--data-dir", str(tmp_path / "data"), env=env)
    assert result.returncode == 0, result.stderr
    rows = attempts(tmp_path / "data")
    assert rows[1]["verdict"] == "FAILED" and "mutator returned garbage: result.json is not JSON" in rows[1]["error"]
    assert rows[1]["genome_hash"] is None


def test_kill_9_mid_evaluation_reruns_only_unfinished_cells(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    args = [sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val", "--rounds", "1",
            "--replicates", "2", "--concurrency", "2", "--data-dir", str(data_dir)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    db_path = data_dir / "mutator.db"
    done_before = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and done_before < 6:
        time.sleep(0.05)
        if db_path.exists():
            try:
                done_before = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True).execute(
                    "select count(*) from cells").fetchone()[0]
            except sqlite3.OperationalError:
                pass
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    conn = sqlite3.connect(db_path)
    done_before = conn.execute("select count(*) from cells").fetchone()[0]
    assert 6 <= done_before < 16  # killed inside the seed's val evaluation (8 tasks x 2)
    assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
    conn.close()
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"{done_before}/16 cells already done" in result.stderr
    conn = sqlite3.connect(db_path)
    total = conn.execute("select count(*) from cells").fetchone()[0]
    ran = int(result.stdout.split(" cells run by this command")[0].split()[-1])
    assert ran == total - done_before
    dupes = conn.execute("select count(*) from (select evaluation_id, task_id, replicate from cells "
                         "group by 1, 2, 3 having count(*) > 1)").fetchone()[0]
    assert dupes == 0 and conn.execute("pragma integrity_check").fetchone()[0] == "ok"
