"""--budget-usd: the run stops cleanly before committed spend would pass the cap, and resumes with a higher one."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutator.round.budget import Budget, BudgetStop
from mutator.store.db import connect_readonly
from tests.conftest import PLAIN_ARGS, environ_without, run_py

ROOT = Path(__file__).resolve().parents[3]
ARGS = PLAIN_ARGS   # the session fixture plain_run ran it once
OWN = ("SKILL_MUTATOR_", "SM_")   # run.py as if none of our variables were set


@pytest.mark.parametrize(("spent", "next_usd", "stops"), [
    (0.0, 0.0, False),     # the first evaluation: nothing known yet, nothing spent
    (0.5, 0.5, False),     # exactly at the cap is allowed
    (0.5, 0.51, True),
    (1.0, 0.0, True),      # the cap is reached: nothing more starts
    (0.2, 0.0, False),
])
def test_check(spent: float, next_usd: float, stops: bool) -> None:
    budget = Budget(1.0)
    if stops:
        with pytest.raises(BudgetStop, match=r"re-run the same command with a higher cap \(e.g. --budget-usd"):
            budget.check(spent=spent, next_usd=next_usd, what="the next step")
    else:
        budget.check(spent=spent, next_usd=next_usd, what="the next step")


def test_dry_run_stops_under_the_cap_then_resumes_with_a_higher_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cap = 0.05  # the seed's val evaluation fits; its train evaluation, priced by val's mean cell, would not
    first = run_py(*ARGS, "--data-dir", str(data), "--budget-usd", str(cap), env=environ_without(*OWN))
    assert first.returncode == 3, first.stderr[-2000:]
    assert "budget reached" in first.stderr and "--budget-usd" in first.stderr
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["status"] == "stopped" and "higher cap" in run["error"]
    assert 0 < run["cost_usd"] <= cap
    assert run["rounds_done"] == 0
    cells_before = next(iter(db.query("select count(*) as n from cells")))["n"]
    assert cells_before == 8  # clean-val only: the train evaluation never started

    second = run_py(*ARGS, "--data-dir", str(data), "--budget-usd", "10", env=environ_without(*OWN))
    assert second.returncode == 0, second.stderr[-2000:]
    db = connect_readonly(data / "mutator.db")
    runs = [dict(r) for r in db.query("select * from runs")]
    assert len(runs) == 1 and runs[0]["id"] == run["id"]  # the same run resumed: the cap is not its identity
    assert runs[0]["status"] == "finished" and runs[0]["rounds_done"] == 2 and runs[0]["error"] is None
    assert runs[0]["cost_usd"] > run["cost_usd"]
    total = next(iter(db.query("select count(*) as n from cells")))["n"]
    ran_now = int(second.stdout.split(" cells run by this command")[0].split()[-1])
    assert ran_now == total - cells_before  # the 8 cells finished before the stop were not re-run


def _spent(data: Path) -> tuple[float, int, float]:
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    cells = dict(next(iter(db.query("select count(*) as n, max(cost_usd) as top, sum(cost_usd) as total from cells"))))
    return run["cost_usd"], cells["n"], cells["top"] or 0.0


@pytest.mark.parametrize(("cap", "concurrency", "cells"), [
    (0.001, 4, 1),        # nothing known: one pilot cell alone, then nothing more starts
    (0.00608, 4, 1),      # exactly one cell's cost: the pilot spends it all
    (0.02, 4, 3),         # mid-evaluation: 2 more at the pilot's price fit, the next would pass the cap
])
def test_the_budget_is_a_hard_cap_before_every_cell(tmp_path: Path, cap: float, concurrency: int, cells: int) -> None:
    data = tmp_path / "data"
    done = run_py(*ARGS, "--data-dir", str(data), "--budget-usd", str(cap), "--concurrency", str(concurrency),
                  env=environ_without(*OWN))
    assert done.returncode == 3, done.stderr[-2000:]
    spent, n, top = _spent(data)
    assert n == cells
    assert spent <= cap + concurrency * top           # the stated bound: cap + the cells in flight
    assert spent <= cap or n == 1                     # uniform cells: never past the cap after the pilot
    assert "not started (the budget would pass the cap)" in done.stderr or "budget reached" in done.stderr


def test_raising_the_cap_resumes_without_paying_twice(plain_run, tmp_path: Path) -> None:
    capped, free = tmp_path / "capped", plain_run[0]   # free: the session's run of ARGS without a cap
    assert run_py(*ARGS, "--data-dir", str(capped), "--budget-usd", "0.02", env=environ_without(*OWN)).returncode == 3
    assert run_py(*ARGS, "--data-dir", str(capped), "--budget-usd", "0.2",
                  env=environ_without(*OWN)).returncode in (0, 3)
    resumed = run_py(*ARGS, "--data-dir", str(capped), "--budget-usd", "10", env=environ_without(*OWN))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert plain_run[1].returncode == 0 and plain_run[1].args[2:-2] == list(ARGS)
    (spent_capped, n_capped, _), (spent_free, n_free, _) = _spent(capped), _spent(free)
    assert n_capped == n_free                         # every cell exactly once across the three commands
    assert spent_capped == pytest.approx(spent_free, rel=1e-9)
    db = connect_readonly(capped / "mutator.db")
    dupes = list(db.query("select evaluation_id, task_id, replicate, count(*) as n from cells "
                          "group by evaluation_id, task_id, replicate having n > 1"))
    assert dupes == []


def test_the_mutator_estimate_ignores_zero_rows(tmp_path: Path) -> None:
    from mutator.round.budget import mean_mutation_cost
    from mutator.store.db import connect
    db = connect(tmp_path / "mutator.db")
    db["runs"].insert({"id": "r", "status": "running"})
    for round_no, cost in enumerate((0.0, 0.0, 0.00975, 0.0), 1):
        db["attempts"].insert({"run_id": "r", "round": round_no, "sibling": 0, "status": "rejected",
                               "mutator_cost_usd": cost})
    assert mean_mutation_cost(db, "r") == pytest.approx(0.00975)
