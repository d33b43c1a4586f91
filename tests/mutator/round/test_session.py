"""The Session: built once from the settings (or a stored run's contract), the one owner of a command's store,
evaluator, budget gate, spend and cell count."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from eval.cells import Contract
from mutator.config import load_settings
from mutator.round.budget import Budget
from mutator.round.session import Session
from mutator.scoring.score import Weights
from sandbox import get_launcher

ARGV = ("agent",)


def settings(tmp_path: Path, **extra):
    return load_settings({"data_dir": tmp_path / "data", "cell_timeout_ms": 4321, "infra_retries": 3, **extra})


def test_one_session_carries_the_settings_into_its_evaluator_and_its_budget_follows_the_run(tmp_path):
    session = Session.open(settings(tmp_path, replicates=3), build_argv=ARGV, build_id="fake",
                           launcher=get_launcher("none"), budget=Budget(limit_usd=1.0))
    ev = session.evaluator
    assert (ev.contract, ev.settings.cell_timeout_ms, ev.settings.infra_retries, tuple(ev.settings.agent_argv)) == (
        session.contract, 4321, 3, ARGV)
    assert session.contract.replicates == 3 and session.contract.agent == "fake"
    for run_id, spent in (("run-a", 0.25), ("run-b", 0.75)):
        session.db["runs"].insert({"id": run_id, "kind": "evolve", "status": "running", "cost_usd": spent})
    session.for_run("run-a")           # the gate asks about the run the session writes, once it opens
    assert ev.spend_gate.remaining(0.0) == 0.75
    run_b = session.for_run("run-b")
    run_b.spend(0.05)                  # counted once, on the session's run
    assert ev.spend_gate.remaining(0.0) == 1.0 - 0.80
    assert run_b.run()["cost_usd"] == 0.80
    with pytest.raises(dataclasses.FrozenInstanceError):   # a session never changes: the run's is another one
        run_b.run_id = "run-a"
    assert session.run_id == "" and run_b.tally is session.tally
    session.db.conn.close()


def test_a_stored_runs_session_measures_with_that_runs_contract_not_todays_settings(tmp_path):
    stored = Contract(model="claude-haiku-4-5", replicates=5, max_turns=7, agent="stored-agent",
                      silence_ms=1000, heartbeat_ms=2000)
    session = Session.open(settings(tmp_path, skill_dir=tmp_path / "no-skill-here"), build_argv=ARGV,
                           build_id=stored.agent, launcher=get_launcher("none"), contract=stored,
                           weights=Weights(0.5, 0.25), skill_name="stored-skill")
    assert (session.contract, session.evaluator.contract, session.weights, session.skill_name) == (
        stored, stored, Weights(0.5, 0.25), "stored-skill")
    assert session.evaluator.spend_gate is None and session.budget is None
    session.db.conn.close()
