"""--budget-usd: the run stops cleanly before committed spend would pass the cap, and resumes with a higher one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mutator.budget import Budget, BudgetStop
from mutator.store.db import connect_readonly

ROOT = Path(__file__).resolve().parents[2]
ARGS = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1")


def run_py(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILL_MUTATOR_", "SM_"))}
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


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
    first = run_py(*ARGS, "--data-dir", str(data), "--budget-usd", str(cap))
    assert first.returncode == 3, first.stderr[-2000:]
    assert "budget reached" in first.stderr and "--budget-usd" in first.stderr
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["status"] == "stopped" and "higher cap" in run["error"]
    assert 0 < run["cost_usd"] <= cap
    assert run["rounds_done"] == 0
    cells_before = next(iter(db.query("select count(*) as n from cells")))["n"]
    assert cells_before == 8  # clean-val only: the train evaluation never started

    second = run_py(*ARGS, "--data-dir", str(data), "--budget-usd", "10")
    assert second.returncode == 0, second.stderr[-2000:]
    db = connect_readonly(data / "mutator.db")
    runs = [dict(r) for r in db.query("select * from runs")]
    assert len(runs) == 1 and runs[0]["id"] == run["id"]  # the same run resumed: the cap is not its identity
    assert runs[0]["status"] == "finished" and runs[0]["rounds_done"] == 2 and runs[0]["error"] is None
    assert runs[0]["cost_usd"] > run["cost_usd"]
    total = next(iter(db.query("select count(*) as n from cells")))["n"]
    ran_now = int(second.stdout.split(" cells run by this command")[0].split()[-1])
    assert ran_now == total - cells_before  # the 8 cells finished before the stop were not re-run
