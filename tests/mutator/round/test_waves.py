"""Cheaper decisions in the loop: val in waves with early looks, the kill-only train screen, a run stopped
mid-wave resuming to the same decisions, and stores written before them (or before the tie rule and
evidenceReplicates) resuming as they were made."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
from pathlib import Path

import pytest

from eval.cells import Contract, evaluation_key
from eval.suite import load_suite
from mutator.config import load_settings
from tests.conftest import ROOT, built_once, keep_result, kept_result, run_cli

DEMO = ("--suite", "clean-train", "--val", "clean-val", "--replicates", "4")
FIXTURE = Path(__file__).with_name("fixtures") / "store-8175abe.tgz"


def attempts(data: Path) -> list[dict]:
    db = sqlite3.connect(data / "mutator.db")
    db.row_factory = sqlite3.Row
    found = [dict(r) for r in db.execute("select round, verdict, delta, gate_threshold, looks, screen, genome_hash, "
                                         "val_evaluation_id, gate from attempts where round > 0 order by round")]
    db.close()
    return found


def cell_count(data: Path) -> int:
    db = sqlite3.connect(data / "mutator.db")
    try:
        return db.execute("select count(*) from cells").fetchone()[0]
    finally:
        db.close()


@pytest.fixture(scope="session")
def waves_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One real `DEMO --rounds 3` run with the defaults (the screen on), built once."""
    def build(folder: Path) -> None:
        keep_result(folder, run_cli(*DEMO, "--rounds", "3", "--data-dir", str(folder / "data")))

    folder = built_once(tmp_path_factory, "waves-demo", build)
    return folder / "data", kept_result(folder)


def test_val_runs_in_waves_and_a_decisive_loss_stops_early(tmp_path):
    """Pins the demo's one draw, on purpose and only that: which wave decides round 3 (the second of four) rests
    on the fake agent's seeded skips. That draw is the same on every machine: a dry run's agent ids hash the
    fakes' bytes, never their argv (mutator/cli/agents.py), so no checkout path or interpreter enters a cell's
    seed. It moves only when the fakes, the demo suites or the seed function change (with eval/cells.py's seed
    salted, round 3 is a loss at wave 1 already: issue 49's sweep). A construction that needs no draw is still
    owed: with no noise at all (every cell fixed) SE is 0 and nothing is decided early."""
    # the screen off: on (screen.tasks 6, the default) it kills round 3's regression before val
    data = tmp_path / "d"
    done = run_cli(*DEMO, "--rounds", "3", "--data-dir", str(data),
                   env={**os.environ, "SKILL_MUTATOR_SCREEN_TASKS": "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = attempts(data)
    looks = {r["round"]: json.loads(r["looks"]) for r in rows}
    assert [r["verdict"] for r in rows] == ["KEEP", "KEEP", "REJECT"]
    assert [look["decision"] for look in looks[3]] == [None, "loss"]           # rejected after wave 2 of 4
    assert [look["replicates"] for look in looks[1]] == [1, 2, 3, 4]            # a small gain runs every wave
    assert rows[2]["delta"] == looks[3][-1]["gate"]["delta"]                    # the deciding look is the verdict's
    db = sqlite3.connect(data / "mutator.db")
    n = db.execute("select count(*) from cells where evaluation_id = ?", [rows[2]["val_evaluation_id"]]).fetchone()[0]
    db.close()
    assert n == 16                                                              # 8 tasks x 2 waves, not 32
    assert "wave 2/4" in done.stderr


def test_a_run_stopped_mid_wave_resumes_to_the_same_decisions_running_each_cell_once(waves_run, tmp_path):
    whole_data, whole = waves_run                                               # the same command, run whole
    assert whole.returncode == 0, whole.stderr[-3000:]
    stopped = run_cli(*DEMO, "--rounds", "3", "--data-dir", str(tmp_path / "cut"), "--budget-usd", "0.6")
    assert stopped.returncode == 3, stopped.stderr[-3000:]   # the budget stops it mid-run (0.6: the run costs less now)
    # after round 1's decision, before its train evidence: the resumed round is planned from the state the round
    # began with (not the incumbent it already wrote), so it selects the same genome for train evidence
    assert "round 1 · " in stopped.stderr.split("stopped: ")[-1] and " on train " in stopped.stderr.split("stopped: ")[-1]
    first = cell_count(tmp_path / "cut")
    resumed = run_cli(*DEMO, "--rounds", "3", "--data-dir", str(tmp_path / "cut"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    ran = int(resumed.stdout.split(" cells run by this command")[0].split()[-1])
    assert first + ran == cell_count(tmp_path / "cut") == cell_count(whole_data)
    keep = ("round", "verdict", "delta", "gate_threshold", "looks", "genome_hash")
    assert [{k: r[k] for k in keep} for r in attempts(tmp_path / "cut")] == \
        [{k: r[k] for k in keep} for r in attempts(whole_data)]


def test_the_screen_kills_a_decisive_loss_on_a_few_train_cells_that_a_survivor_reuses(tmp_path):
    data = tmp_path / "d"
    done = run_cli(*DEMO, "--rounds", "3", "--data-dir", str(data), env={**os.environ, "SKILL_MUTATOR_SCREEN_TASKS": "6"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = attempts(data)
    assert [r["verdict"] for r in rows] == ["KEEP", "KEEP", "SCREENED"]
    screen = json.loads(rows[2]["screen"])
    assert screen["decision"] == "loss" and len(screen["tasks"]) == 6 and screen["cells"] == 6
    assert rows[2]["val_evaluation_id"] is None and rows[2]["looks"] is None    # no val cell was spent on it
    assert screen["gate"]["delta"] == rows[2]["delta"]
    settings = load_settings(config_file=ROOT / "config.json")
    train = load_suite(settings.suites["clean-train"])
    contract = Contract(model=settings.model, replicates=4, max_turns=settings.max_turns,
                        agent=json.loads(sqlite3.connect(data / "mutator.db").execute(
                            "select config from runs").fetchone()[0])["contract"]["agent"],
                        silence_ms=settings.watchdog.silence_ms, heartbeat_ms=settings.watchdog.heartbeat_ms)
    db = sqlite3.connect(data / "mutator.db")
    survivor = db.execute("select id, n_done from evaluations where key = ?",
                          [evaluation_key(rows[0]["genome_hash"], train, contract)]).fetchone()
    killed = db.execute("select n_done from evaluations where key = ?",
                        [evaluation_key(rows[2]["genome_hash"], train, contract)]).fetchone()
    survivor_cells = set(db.execute("select task_id, replicate from cells where evaluation_id = ?", [survivor[0]]))
    db.close()
    # the survivor's train evidence (evidenceReplicates 1: replicate 0 of its 12 train tasks, under the full-depth
    # key) holds its 6 screen cells; the screened one holds just those 6
    assert survivor[1] == 12 and killed == (6,)
    assert survivor_cells == {(t.id, 0) for t in train.tasks} >= {(t, 0) for t in screen["tasks"]}


def test_a_store_written_before_the_tie_rule_resumes_with_no_cell_as_it_was_made(tmp_path):
    """A store of main 05d97d1 (sequential val, no tie rule in the loop, train evidence at every replicate): the
    same command resumes it with 0 cells; more rounds keep every tie and take the evidence at full depth."""
    with tarfile.open(FIXTURE.with_name("store-05d97d1.tgz")) as tar:   # --replicates 2 --rounds 2, KEEP, KEEP
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    before, verdicts = cell_count(data), [(r["verdict"], r["delta"]) for r in attempts(data)]
    args = ("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--data-dir", str(data))
    again = run_cli(*args, "--rounds", "2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "stored before the tie rule and evidenceReplicates: it resumes as it was made" in again.stderr
    assert "0 cells run by this command" in again.stdout and cell_count(data) == before
    assert [(r["verdict"], r["delta"]) for r in attempts(data)] == verdicts
    more = run_cli(*args, "--rounds", "6")
    assert more.returncode == 0, more.stderr[-3000:]
    db = sqlite3.connect(data / "mutator.db")
    assert db.execute("select count(*) from runs").fetchone()[0] == 1          # the same run, not a new id
    depths = db.execute("select e.n_done from attempts a join evaluations e on e.id = a.train_evaluation_id "
                        "where a.round > 2").fetchall()
    db.close()
    gates = [json.loads(r["gate"]) for r in attempts(data)[2:] if r.get("gate")]
    assert depths and all(n == 24 for (n,) in depths)                          # 12 train tasks x both replicates
    assert gates and all(g["tie"]["rule"] == "keep" for g in gates)            # every tie kept, as it was made
    shutil.rmtree(data)


def test_a_store_written_before_waves_resumes_with_no_cell_and_keeps_its_fixed_gate(tmp_path):
    with tarfile.open(FIXTURE) as tar:       # main 8175abe: --replicates 2 --rounds 2, migrations _v1.._v12
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    before = cell_count(data)
    again = run_cli("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--rounds", "2",
                    "--data-dir", str(data))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "stored before sequential val" in again.stderr and "0 cells run by this command" in again.stdout
    assert cell_count(data) == before
    more = run_cli("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--rounds", "3",
                   "--data-dir", str(data))
    assert more.returncode == 0, more.stderr[-3000:]
    last = attempts(data)[-1]
    assert last["round"] == 3 and "wave" not in more.stderr
    assert [look["replicates"] for look in json.loads(last["looks"])] == [2]    # one look at every cell
    shutil.rmtree(data)


def test_a_store_made_before_the_keep_rule_resumes_with_no_cell_under_another_rule(tmp_path):
    """A lenient store (the store of main 05d97d1, made before score.keepRule existed) asked to resume under
    --keep-rule eb is found again under its own decisions: 0 cells, the same verdicts, the same run."""
    with tarfile.open(FIXTURE.with_name("store-05d97d1.tgz")) as tar:   # --replicates 2 --rounds 2, KEEP, KEEP
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    before, verdicts = cell_count(data), [(r["verdict"], r["delta"]) for r in attempts(data)]
    again = run_cli("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--data-dir", str(data),
                    "--rounds", "2", "--keep-rule", "eb")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "it resumes as it was made" in again.stderr
    assert "0 cells run by this command" in again.stdout and cell_count(data) == before
    assert [(r["verdict"], r["delta"]) for r in attempts(data)] == verdicts
    db = sqlite3.connect(data / "mutator.db")
    assert db.execute("select count(*) from runs").fetchone()[0] == 1
    db.close()


def run_rows(data: Path) -> list[tuple[str, dict]]:
    db = sqlite3.connect(data / "mutator.db")
    try:
        return [(i, json.loads(c)) for i, c in db.execute("select id, config from runs order by id")]
    finally:
        db.close()


def test_a_store_made_under_the_lenient_default_resumes_with_no_cell_and_a_new_run_is_positive(tmp_path):
    """score.keepRule's default became 'positive'. A store made by main 72e17f8 (its default: the lenient gate;
    --replicates 2 --rounds 1, round 1 KEEP) resumes with 0 cells under --keep-rule lenient (its own id, no note)
    and under the new default (found under its lenient decisions, said so); going on from it keeps the lenient
    gate. A new data dir gets a new run id whose gates apply the positive rule."""
    with tarfile.open(FIXTURE.with_name("store-72e17f8.tgz")) as tar:
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    args = ("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--data-dir", str(data))
    (old_id, old_config), = run_rows(data)
    assert old_id == "run-a38cc07cec58" and "keep_rule" not in old_config
    assert cell_count(data) == 56 and [(r["round"], r["verdict"]) for r in attempts(data)] == [(1, "KEEP")]
    verdicts = [(r["verdict"], r["delta"], r["gate"]) for r in attempts(data)]

    named = run_cli(*args, "--rounds", "1", "--keep-rule", "lenient")
    assert named.returncode == 0, named.stderr[-3000:]
    assert f"Resuming {old_id}" in named.stderr and "as it was made" not in named.stderr
    assert "0 cells run by this command" in named.stdout and cell_count(data) == 56

    plain = run_cli(*args, "--rounds", "1")
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert (f"{old_id} was stored before score.keepRule's default became 'positive': it resumes as it was made "
            "(the lenient gate: keep unless a decisive loss; --keep-rule lenient resumes it without this note, a "
            "new --data-dir starts a run with keep rule 'positive')") in plain.stderr
    assert "0 cells run by this command" in plain.stdout and cell_count(data) == 56
    assert [(r["verdict"], r["delta"], r["gate"]) for r in attempts(data)] == verdicts
    assert run_rows(data) == [(old_id, old_config)]

    more = run_cli(*args, "--rounds", "2")       # round 2 under the stored run's lenient gate
    assert more.returncode == 0, more.stderr[-3000:]
    rows = attempts(data)
    assert [r["round"] for r in rows] == [1, 2] and run_rows(data) == [(old_id, old_config)]
    assert "keep_rule" not in json.loads(rows[1]["gate"])     # the lenient gate stores no keep_rule figures

    fresh = tmp_path / "fresh"
    new = run_cli(*args[:-1], str(fresh), "--rounds", "1")
    assert new.returncode == 0, new.stderr[-3000:]
    (new_id, new_config), = run_rows(fresh)
    assert new_id != old_id and new_config["keep_rule"] == "positive"
    assert {k: v for k, v in new_config.items() if k != "keep_rule"} == old_config
    gate = json.loads(attempts(fresh)[0]["gate"])
    assert gate["keep_rule"]["rule"] == "positive" and gate["keep_rule"]["keep"] is True
    assert gate["keep_rule"]["bar"] == 0.0 and gate["delta"] == verdicts[0][1]


def screened(delta: float, threshold: float) -> str:
    from mutator.round.waves import screen_fields
    record = {"decision": "loss", "tasks": ["a", "b", "c"], "cells": 6, "z": 1.5,
              "gate": {"delta": delta, "threshold": threshold}}
    return screen_fields(record)["error"]


def test_a_screen_at_its_threshold_is_worded_a_tie_and_a_near_miss_shows_the_digits_that_differ() -> None:
    at = screened(-0.0005, -0.0005)   # the sign-flip count rejects a Δ the threshold keeps
    assert "Δ -0.0005 vs threshold -0.0005" in at and "a tie at the threshold" in at
    assert "decisive" not in at.replace("not a decisive loss", "")
    near = screened(-0.00051, -0.00049)   # below by less than the 4th decimal shows
    assert "Δ -0.00051 vs threshold -0.00049" in near and near.endswith("a decisive loss")
    assert screened(-0.2, -0.1).endswith("Δ -0.2000 vs threshold -0.1000 at screen z 1.5, a decisive loss")
