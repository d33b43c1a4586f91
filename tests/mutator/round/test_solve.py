"""The solve phase: an incapable mutator model aborts the run before any seed cell; a capable one
leaves graded demonstrations in solve/ for every later workspace."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mutator.store.db import connect_readonly
from tests.conftest import ROOT, run_cli

ARGS = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "1", "--replicates", "1", "--solve",
        "--solve-attempts", "2")


def test_abort_before_any_seed_cell(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cli(*ARGS, "--data-dir", str(data))
    assert result.returncode == 4
    assert "is not capable enough for this suite" in result.stderr and "orders-08 (" in result.stderr
    db = connect_readonly(data / "mutator.db")
    splits = [r["contract"] for r in db.query("select contract from evaluations")]
    assert len(splits) == 2 and all('"salt": "solve-' in c for c in splits)  # two solve passes, no seed eval
    run = dict(next(iter(db.query("select status, solve, error from runs"))))
    assert run["status"] == "failed" and json.loads(run["solve"])["aborted"] is True
    assert not list(db.query("select * from attempts"))


def test_capable_solver_stages_demonstrations(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cli(*ARGS, "--data-dir", str(data), env={**os.environ, "FAKE_AGENT_EXPERT": "1"})
    assert result.returncode == 0, result.stderr
    db = connect_readonly(data / "mutator.db")
    record = json.loads(next(iter(db.query("select solve from runs")))["solve"])
    assert record["aborted"] is False and len(record["tasks"]) == 12
    assert min(t["score"] for t in record["tasks"].values()) >= 0.7
    staged = sorted(p.name for p in next((data / "workspaces").glob("*/round-1-0")).joinpath("solve").iterdir())
    assert "orders-08.md" in staged and "solve.json" in staged
    # solve is not part of the run's identity: the same command without --solve resumes the same run
    again = run_cli(*ARGS[:-3], "--data-dir", str(data))
    assert "Resuming run-" in again.stderr and again.returncode == 0


def test_abort_says_the_cells_failed_rather_than_blaming_the_model(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cli(*ARGS, "--data-dir", str(data), env={**os.environ, "FAKE_AGENT_CRASH": "1"})
    assert result.returncode == 4
    assert "FAILED without a grade (agent_error: " in result.stderr
    assert "crashing on purpose" in result.stderr and "--no-solve" in result.stderr
    assert "not capable enough" not in result.stderr
    record = json.loads(next(iter(connect_readonly(data / "mutator.db").query("select solve from runs")))["solve"])
    assert {t["status"] for t in record["tasks"].values()} == {"agent_error"}


def test_solve_refused_for_a_command_mutator(tmp_path: Path) -> None:
    mutator = f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}"
    agent = f"{sys.executable} {ROOT / 'fakes' / 'fake_agent.py'}"
    result = run_cli(*ARGS, "--real", "--agent-cmd", agent, "--mutator-cmd", mutator, "--data-dir",
                     str(tmp_path / "data"))
    assert result.returncode == 2, result.stderr
    assert "--solve needs a mutator backend that can solve" in result.stderr and "--mutator-cmd" in result.stderr


def test_solve_is_off_unless_asked_for(tmp_path: Path) -> None:
    """The default (config `solve` off; an old config's `auto` is off too) runs no solve pass, and says so."""
    from mutator.config import load_settings
    from mutator.round.session import Agents
    from mutator.round.solve import solve_wanted
    agents = Agents(build_argv=("b",), build_id="b", mutator_argv=("m",), mutator_id="m", solve_argv=("s",))
    assert load_settings().solve == "off"
    assert not solve_wanted("off", agents) and not solve_wanted("auto", agents) and solve_wanted("on", agents)
    data = tmp_path / "data"
    result = run_cli(*ARGS[:-3], "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    assert "solve phase off (--solve turns it on)" in result.stderr
    db = connect_readonly(data / "mutator.db")
    assert next(iter(db.query("select solve from runs")))["solve"] is None
    assert not [r for r in db.query("select contract from evaluations") if '"salt": "solve-' in r["contract"]]


def test_solve_stops_at_the_budget_with_its_exit_code(tmp_path: Path) -> None:
    """--budget-usd caps the solve phase like any evaluation: exit 3 and the budget's message, the spend within
    the cap (a fake solve cell costs $0.045 at the mutator model's prices), never exit 4 'not capable'."""
    data, cap = tmp_path / "data", 0.1
    result = run_cli(*ARGS, "--data-dir", str(data), "--budget-usd", str(cap))
    assert result.returncode == 3, result.stderr
    assert "budget reached" in result.stderr and "solve pass 1/2" in result.stderr
    assert "not capable" not in result.stderr
    assert "solve phase on: up to 24 cells (2 pass(es) × 12 train tasks) at claude-opus-4-5 prices" in result.stderr
    run = dict(next(iter(connect_readonly(data / "mutator.db").query("select status, cost_usd, error from runs"))))
    assert run["status"] == "stopped" and "budget" in run["error"]
    assert 0 < run["cost_usd"] <= cap


def test_plan_shows_the_solve_phase_and_its_cost() -> None:
    on = run_cli("--plan", "--suite", "clean-train", "--val", "clean-val", "--solve", "--solve-attempts", "2")
    assert on.returncode == 0, on.stderr
    assert "solve phase on: up to 24 cells (2 pass(es) × 12 train tasks) at claude-opus-4-5 prices" in on.stdout
    assert "(the solve phase + round 0 + " in on.stdout
    off = run_cli("--plan", "--suite", "clean-train", "--val", "clean-val")
    assert "solve phase off (--solve turns it on)" in off.stdout


def judged_train(tmp_path: Path) -> Path:
    """clean-train graded by the LLM judge instead of its script."""
    import shutil
    suite = tmp_path / "judged" / "clean-train"
    shutil.copytree(ROOT / "suites" / "clean-train", suite)
    text = (suite / "suite.md").read_text(encoding="utf-8")
    (suite / "suite.md").write_text(text.replace("runner: script", "runner: judge", 1), encoding="utf-8")
    return suite


def test_a_judge_failing_every_cell_stops_the_solve_phase_after_pass_1_and_a_resume_pays_it_nothing(
        tmp_path: Path) -> None:
    from tests.eval.graders.messages_stub import MessagesStub
    stub = MessagesStub("I would rather not say.")   # no JSON: every judgement is unusable
    try:
        data = tmp_path / "data"
        args = ("--suite", str(judged_train(tmp_path)), "--val", "clean-val", "--rounds", "1", "--replicates",
                "1", "--solve", "--solve-attempts", "3", "--data-dir", str(data))
        env = {**os.environ, "SM_JUDGE": "anthropic", "ANTHROPIC_BASE_URL": stub.base_url,
               "ANTHROPIC_API_KEY": "test-key"}
        result = run_cli(*args, env=env)
        assert result.returncode == 4, result.stderr
        assert len(stub.requests) == 12                     # pass 1 only: one judgement per train task
        assert "stopped after pass 1: the suite's judge" in result.stderr
        assert "holds no JSON object" in result.stderr and "mutator backend" not in result.stderr
        db = connect_readonly(data / "mutator.db")
        assert [r["n"] for r in db.query("select count(*) n from evaluations")] == [1]
        record = json.loads(next(iter(db.query("select solve from runs")))["solve"])
        assert record["aborted"] is True and record["passes"] == 1
        again = run_cli(*args, env=env)                     # the resume re-grades from the cache
        assert again.returncode == 4 and len(stub.requests) == 12
        assert "stopped after pass 1: the suite's judge" in again.stderr
    finally:
        stub.close()
