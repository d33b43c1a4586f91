"""The first-paid-run trial, small: real anthropic-SDK agents and mutator against the local Messages-API server.
A first run measures this store's real calls; `--plan` then prices a second run from them; the second run, capped
at that figure, spends within it, and its stored spend (the ledger's sum, runs.cost_usd, Home's and the CLI's
figure) equals what the server served it, to 1e-6."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mutator.after.spend import run_spend
from mutator.store.db import connect_readonly
from tests.eval.agents.messages_server import demo_agent
from tests.eval.agents.test_real_run import demo_subset, run_py
from tests.eval.agents.test_spend_served import real_run, served_usd


def test_plan_cap_and_stored_spend_against_what_was_served(server, tmp_path: Path) -> None:
    server.responder = demo_agent
    data = tmp_path / "data"
    train, val = demo_subset(tmp_path, "clean-train", 2), demo_subset(tmp_path, "clean-val", 3)
    common, env = real_run(server, train, val, data)
    first = run_py(*common, "--seed", "1", "--budget-usd", "5", env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    served_first = served_usd(server)
    plan = run_py(*common, "--seed", "2", "--plan", env=env, timeout=300)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "a cell ≈" in plan.stdout and "(measured" in plan.stdout   # priced from the first run's real calls
    planned = float(re.search(r"per run ≤ \$([0-9.]+)", plan.stdout).group(1))
    second = run_py(*common, "--seed", "2", "--budget-usd", f"{planned:.4f}", env=env)
    assert second.returncode in (0, 3), second.stderr[-3000:]
    served_second = served_usd(server) - served_first
    db = connect_readonly(data / "mutator.db")
    runs = [r["id"] for r in db.query("select id from runs order by created_at")]
    assert len(runs) == 2
    for run_id, served in zip(runs, (served_first, served_second), strict=True):
        stored = run_spend(db, run_id)["total"]
        ledger = db.conn.execute("select sum(usd) from charges where run_id = ?", [run_id]).fetchone()[0]
        cost = db.conn.execute("select cost_usd from runs where id = ?", [run_id]).fetchone()[0]
        assert stored == pytest.approx(served, abs=1e-6) and ledger == pytest.approx(stored, abs=1e-12)
        assert cost == pytest.approx(stored, abs=1e-12)
    assert served_second <= planned + 1e-9                                  # within the cap --plan gave it
    spent_line = re.search(r"spend this run \$([0-9.]+)", second.stdout)
    if spent_line:
        assert float(spent_line.group(1)) == pytest.approx(served_second, abs=5e-5)
    print(f"\nplanned ${planned:.6f} for the second run; it spent ${served_second:.6f} "
          f"({served_second / planned:.0%} of the plan); the first ${served_first:.6f}", file=sys.stderr)
