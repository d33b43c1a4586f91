"""Spend totals per window, run and model from constructed per-call costs; the daily budget's warning at
80 % and its stop at 100 % (in the loop's budget hooks, in a check, and at the start of run.py)."""

from __future__ import annotations

import io
import sqlite3
from datetime import UTC, datetime

import pytest

from mutator.after.spend import DailyBudget, budget_state, daily_guard, view
from mutator.config import load_settings
from mutator.round.budget import BudgetStop
from mutator.store import ledger
from mutator.store.db import connect, dumps
from tests.conftest import run_py

NOW = datetime(2026, 3, 12, 15, 0, tzinfo=UTC).timestamp()          # a Thursday
TODAY = datetime(2026, 3, 12, 9, 0, tzinfo=UTC).timestamp()
MONDAY = datetime(2026, 3, 9, 10, 0, tzinfo=UTC).timestamp()
LAST_MONTH = datetime(2026, 2, 1, 10, 0, tzinfo=UTC).timestamp()


def store(path, cells: list[tuple[str, str, float, float]], mutations: list[tuple[str, float, float]] = ()):
    """cells: (run, model, usd, at); mutations: (run, usd, at)."""
    db = connect(path / "mutator.db")
    for run in {c[0] for c in cells} | {m[0] for m in mutations}:
        db["runs"].insert({"id": run, "kind": "evolve", "status": "finished", "skill_name": "s", "strategy": "greedy",
                           "mutator_model": "opus", "config": dumps({"contract": {"model": run}}), "cost_usd": 0})
    for i, (run, model, usd, at) in enumerate(cells):
        eid = db["evaluations"].insert({"key": f"k{i}", "status": "done", "model": model, "genome_hash": f"g{i}",
                                        "contract": dumps({"model": "x", "salt": str(i)})}).last_pk
        db["attempts"].insert({"run_id": run, "round": i, "sibling": 0, "status": "kept", "val_evaluation_id": eid})
        db["cells"].insert({"evaluation_id": eid, "task_id": "t", "replicate": 0, "status": "ok", "cost_usd": usd,
                            "finished_at": at})
        with db.conn:
            ledger.charge(db.conn, run_id=run, usd=usd, kind="cell", evaluation_id=eid, at=at)
    for i, (run, usd, at) in enumerate(mutations):
        attempt = db["attempts"].insert({"run_id": run, "round": 100 + i, "sibling": 0, "status": "kept",
                                         "mutator_cost_usd": usd, "finished_at": at}).last_pk
        with db.conn:
            ledger.charge(db.conn, run_id=run, usd=usd, kind="mutator", attempt_id=attempt, at=at)
    return db


def test_today_week_all_time_per_run_and_per_model(tmp_path):
    db = store(tmp_path, [("run-a", "haiku", 1.0, TODAY), ("run-a", "haiku", 2.0, MONDAY),
                          ("run-b", "sonnet", 4.0, LAST_MONTH)], [("run-b", 0.5, TODAY)])
    v = view(db, at=NOW)
    assert (v["today"], v["week"], v["all_time"]) == (1.5, 3.5, 7.5)
    runs = {r["run"]: r for r in v["runs"]}
    assert (runs["run-a"]["today"], runs["run-a"]["week"], runs["run-a"]["all_time"]) == (1.0, 3.0, 3.0)
    assert (runs["run-b"]["today"], runs["run-b"]["all_time"]) == (0.5, 4.5)
    models = {m["model"]: m for m in v["models"]}
    assert models["haiku"]["all_time"] == 3.0 and models["sonnet"]["week"] == 0.0 and models["opus"]["today"] == 0.5
    days = {d["date"]: d["usd"] for d in v["daily"]}
    assert days["2026-03-12"] == 1.5 and days["2026-03-09"] == 2.0 and len(days) == 30
    assert v["budget"]["state"] == "none"


@pytest.mark.parametrize(("spent", "state"), [(0.79, "ok"), (0.8, "warn"), (0.99, "warn"), (1.0, "stop"), (3, "stop")])
def test_budget_states(spent, state):
    assert budget_state(spent, 1.0)["state"] == state


def test_the_daily_budget_stops_new_spending_at_100_percent(tmp_path):
    db = store(tmp_path, [("run-a", "haiku", 0.6, TODAY), ("run-a", "haiku", 0.1, TODAY), ("run-a", "haiku", 5, MONDAY)])
    budget = DailyBudget(1.0, clock=lambda: NOW)
    assert budget.spent_today(db) == pytest.approx(0.7)           # Monday's spend is not today's
    with pytest.raises(BudgetStop, match=r"\$0.7000 spent today .* a check \(2 cells\) would commit about \$3.8000"):
        budget.before_check(db, 2, "haiku", "a check")           # 2 cells x the model's mean cell cost (1.9)


def test_daily_budget_check_estimates_and_stops(tmp_path):
    db = store(tmp_path, [("run-a", "haiku", 0.6, TODAY), ("run-a", "haiku", 0.2, TODAY)])
    budget = DailyBudget(1.0, clock=lambda: NOW)
    budget.before_check(db, 0, "haiku", "nothing")                # 0.8 spent, nothing to commit: fine
    with pytest.raises(BudgetStop, match=r"daily budget reached: \$0.8000 spent today .* a check \(1 cells\)"):
        budget.before_check(db, 1, "haiku", "a check")            # 0.8 + 0.4 > 1.0
    db["cells"].insert({"evaluation_id": 1, "task_id": "u", "replicate": 0, "status": "ok", "cost_usd": 0.2,
                        "finished_at": TODAY})
    with db.conn:
        ledger.charge(db.conn, run_id="run-a", usd=0.2, kind="cell", evaluation_id=1, at=TODAY)
    with pytest.raises(BudgetStop, match="New spending is stopped until 2026-03-13 00:00 UTC"):
        budget.before_mutation(db, "run-a", "the next mutation")  # 100 % reached: nothing more, even at $0


def test_daily_guard_records_warns_and_stops(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    db = store(data, [("run-a", "haiku", 0.85, datetime.now(UTC).timestamp())])
    settings = load_settings({"data_dir": data}, environ={})
    out = io.StringIO()
    assert daily_guard(settings, None, stream=out) is None          # no budget recorded yet
    assert daily_guard(settings, 1.0, stream=out).limit_usd == 1.0
    assert "85%" in out.getvalue() and "new spending stops at 100 %" in out.getvalue()
    assert daily_guard(settings, None, stream=io.StringIO()).limit_usd == 1.0   # kept on the store
    with pytest.raises(BudgetStop):
        daily_guard(settings, 0.5, stream=io.StringIO())
    assert daily_guard(settings, 0, stream=io.StringIO()) is None   # 0 clears it
    assert db["spend_limits"].count == 0


def test_run_py_refuses_new_spending_once_the_daily_budget_is_used(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    store(data, [("run-a", "haiku", 2.0, datetime.now(UTC).timestamp())])
    done = run_py("--check", "suites/csv-clean", "--suite", "clean-val", "--replicates", "1", "--data-dir", str(data),
                  "--daily-budget-usd", "1")
    assert done.returncode == 3 and "daily budget reached" in done.stderr
    with sqlite3.connect(data / "mutator.db") as conn:
        assert conn.execute("select count(*) from cells").fetchone()[0] == 1      # nothing new was run
        assert conn.execute("select count(*) from health_checks").fetchone()[0] == 0
    shown = run_py("--daily-budget-usd", "5", "--data-dir", str(data))
    assert shown.returncode == 0 and "daily budget: $5" in shown.stdout and "(ok)" in shown.stdout


def test_a_run_starts_under_a_recorded_daily_budget(tmp_path):
    """The loop asks the daily budget as it asks the run's own (a wave's or a screen's cells named): it ran
    into a TypeError in round 0 once any daily budget was recorded."""
    data = tmp_path / "data"
    assert run_py("--daily-budget-usd", "50", "--data-dir", str(data)).returncode == 0
    done = run_py("--suite", "clean-train", "--val", "clean-val", "--rounds", "1", "--replicates", "1",
                  "--data-dir", str(data))
    assert done.returncode == 0, done.stderr[-2000:]
    with sqlite3.connect(data / "mutator.db") as conn:
        assert conn.execute("select rounds_done from runs").fetchone()[0] == 1
