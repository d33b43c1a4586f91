"""--aa and --test-run pass the same budget as a run: --budget-usd stops them before the cap (dry runs, fakes)."""

from __future__ import annotations

from pathlib import Path

from mutator.store.db import connect_readonly
from tests.conftest import copy_store, run_cli


def test_an_aa_run_stops_at_the_budget_and_resumes_with_a_higher_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    args = ("--aa", "2", "--suite", "clean-train", "--val", "clean-val", "--replicates", "1", "--concurrency", "1",
            "--data-dir", str(data))
    stopped = run_cli(*args, "--budget-usd", "0.03")
    assert stopped.returncode == 3, stopped.stdout[-2000:] + stopped.stderr[-2000:]
    assert "budget reached" in stopped.stderr
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    cells = float(next(iter(db.query("select sum(cost_usd + prior_cost_usd) as usd from cells")))["usd"])
    assert run["status"] == "stopped" and 0 < run["cost_usd"] <= 0.03 and run["cost_usd"] == cells
    done = run_cli(*args, "--budget-usd", "5")
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_test_run_asks_the_budget_before_each_cell(demo_store, tmp_path: Path) -> None:
    data = copy_store(demo_store[0], tmp_path / "data")
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select id, cost_usd from runs"))))
    # the run's cap is already reached: no test cell may start
    result = run_cli("--test-run", run["id"], "--suite", "clean-test", "--budget-usd", str(run["cost_usd"]),
                     "--data-dir", str(data))
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-2000:]
    assert next(iter(db.query("select status from test_runs order by id desc limit 1")))["status"] == "stopped"
    assert dict(next(iter(db.query("select cost_usd from runs"))))["cost_usd"] == run["cost_usd"]
