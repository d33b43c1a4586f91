"""Null controls per round (issue 32 item 4): byte-identical copies of the incumbent under a fresh salt, evaluated
beside the candidates and gated as one would be; each round stores its noise floor; a null never becomes an
attempt, a champion or part of the gate's pooled noise. nullControls 0 (the default) changes nothing: an old store
resumes with no cell."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
import tarfile
from pathlib import Path

from eval.cells import evaluation_key
from eval.suite import load_suite
from mutator.config import load_settings
from mutator.round.loop import Loop
from mutator.round.progress import Progress
from mutator.round.session import Agents, Suites
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import CellFigures, per_task
from mutator.store.db import connect_readonly
from sandbox.none import NoneLauncher
from strategies import make_strategy
from tests.conftest import ROOT, run_cli

OLD_STORE = ROOT / "tests" / "mutator" / "round" / "fixtures" / "store-05d97d1.tgz"   # main 05d97d1: --replicates 2 --rounds 2


def figures(db, evaluation_id: int) -> tuple[CellFigures, ...]:
    return tuple(CellFigures(task_id=r["task_id"], replicate=r["replicate"], score=r["score"] or 0.0,
                             cost_usd=r["cost_usd"] or 0.0, steps=r["steps"] or 0, ok=r["status"] == "ok")
                 for r in db.query("select * from cells where evaluation_id = ? order by id", [evaluation_id]))


def test_a_dry_run_stores_each_rounds_null_controls_and_never_keeps_one(tmp_path: Path) -> None:
    settings = load_settings({"data_dir": tmp_path / "data", "rounds": 1, "replicates": 1, "solve": "off",
                              "null_controls": 2}, environ={})
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"))
    agents = Agents(build_argv=(sys.executable, str(ROOT / "fakes" / "fake_agent.py")), build_id="fake-agent@1",
                    mutator_argv=(sys.executable, str(ROOT / "fakes" / "fake_mutator.py")), mutator_id="fake-mutator@1")
    said = io.StringIO()
    loop = Loop(settings, suites, agents, NoneLauncher(), make_strategy("greedy", {}), progress=Progress(said))
    run_id = loop.execute()
    db = connect_readonly(settings.db_path)
    run = dict(next(iter(db.query("select * from runs where id = ?", [run_id]))))
    seed, contract = run["seed_hash"], loop.session.contract
    seed_val = db.execute("select id from evaluations where key = ?",
                          [evaluation_key(seed, suites.val, contract)]).fetchone()[0]
    nulls = [dict(r) for r in db.query("select * from null_controls order by copy")]
    assert [(n["run_id"], n["round"], n["copy"], n["genome_hash"], n["salt"], n["incumbent_evaluation_id"])
            for n in nulls] == [(run_id, 1, c, seed, f"null:{run_id}:1:{c}", seed_val) for c in (1, 2)]
    norm = stored_normalisers(run, "val")
    for n in nulls:
        evaluation = dict(db["evaluations"].get(n["evaluation_id"]))
        salted = {**json.loads(db["evaluations"].get(seed_val)["contract"]), "salt": n["salt"]}
        assert (evaluation["genome_hash"], evaluation["suite"], evaluation["status"], evaluation["n_done"]) == (
            seed, "clean-val", "done", 8)
        assert json.loads(evaluation["contract"]) == salted        # the seed's contract, a fresh salt only
        # the stored Δ re-derives from the stored cells: mean over tasks of null − incumbent composites
        null_tasks = per_task(figures(db, n["evaluation_id"]), loop.session.weights, norm)
        base_tasks = per_task(figures(db, seed_val), loop.session.weights, norm)
        delta = sum(null_tasks[t].composite - base_tasks[t].composite for t in base_tasks) / len(base_tasks)
        assert abs(n["delta"] - delta) < 1e-9 and json.loads(n["gate"])["delta"] == n["delta"]
        assert n["call"] in ("win", "loss", "tie") and (n["call"] == "loss") == (not n["keep"])
        assert (f"  null control {n['copy']} (the incumbent again, salt {n['salt']}): Δcomposite {n['delta']:+.4f} "
                f"vs gate threshold {n['threshold']:+.4f} → the gate would call it {n['call']}") in said.getvalue()
    # a null is no attempt: never integrated, kept or proposed, and its evaluation is no candidate's
    attempts = [dict(a) for a in db.query("select * from attempts where run_id = ? and round = 1", [run_id])]
    assert len(attempts) == 1 and attempts[0]["val_evaluation_id"] not in {n["evaluation_id"] for n in nulls}
    assert run["incumbent_hash"] == (attempts[0]["genome_hash"] if attempts[0]["verdict"] == "KEEP" else seed)
    assert db.execute("select count(*) from cells where evaluation_id in (?, ?)",
                      [n["evaluation_id"] for n in nulls]).fetchone()[0] == 16
    # their cells were charged to the run, once each, and the spend names them
    from mutator.after.spend import run_spend
    charged = db.execute("select sum(usd) from charges where run_id = ? and evaluation_id in (?, ?)",
                         [run_id, *(n["evaluation_id"] for n in nulls)]).fetchone()[0]
    assert charged > 0 and abs(run_spend(db, run_id)["kinds"]["null controls"] - charged) < 1e-12
    # the dashboard's round view reads them beside the gate band, as stored
    from mutator.server.queries import attempt_detail
    shown = attempt_detail(db, attempts[0]["id"], "val")["attempt"]["nulls"]
    assert shown == [{k: n[k] for k in ("copy", "salt", "genome_hash", "evaluation_id", "delta", "threshold", "call")}
                     for n in nulls]


def test_an_old_store_resumes_with_no_cell_and_no_null_control(tmp_path: Path) -> None:
    with tarfile.open(OLD_STORE) as tar:
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    with sqlite3.connect(data / "mutator.db") as db:
        before = db.execute("select count(*) from cells").fetchone()[0]
    again = run_cli("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--rounds", "2",
                    "--data-dir", str(data))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 cells run by this command" in again.stdout and "null control" not in again.stderr
    db = sqlite3.connect(data / "mutator.db")
    assert db.execute("select count(*) from cells").fetchone()[0] == before
    assert db.execute("select count(*) from null_controls").fetchone()[0] == 0     # migrated, and empty
    assert db.execute("select count(*) from runs").fetchone()[0] == 1             # the same run id
    db.close()
