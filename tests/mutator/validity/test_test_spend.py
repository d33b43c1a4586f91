"""--test-run says what it spent, as the store holds it (issue 49, item 5), and a no-skill control that fails
(an agent that cannot run without a skill) is reported as such, with its cause and cells, beside a complete and
stored champion-vs-seed report: exit 10, documented."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mutator.store.db import connect_readonly, loads
from tests.conftest import ROOT, environ_without, run_py

OFFLINE = ("SKILL_MUTATOR_", "SM_", "ANTHROPIC_")
# a foreign agent that reads its skill's files and cannot run without one: the fake agent, refusing bare cells
NEEDS_A_SKILL = f"""import os, runpy, sys
if not os.environ.get("SM_SKILL_DIR"):
    print("boom: no patterns.json: this agent reads its skill's files and none is installed", file=sys.stderr)
    sys.exit(1)
sys.argv = [{str(ROOT / "fakes" / "fake_agent.py")!r}]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def spent_in_store(data: Path, test_id: int) -> tuple[float, float]:
    """(the test's stored spend, the run's charges made while the test ran)."""
    db = connect_readonly(data / "mutator.db")
    row = dict(db["test_runs"].get(test_id))
    charged = db.conn.execute("select coalesce(sum(usd), 0) from charges where run_id = ? and at >= ? and at <= ?",
                              [row["run_id"], row["created_at"], row["finished_at"]]).fetchone()[0]
    return row["spent_usd"], charged


def test_a_control_that_fails_every_cell_is_reported_beside_a_complete_test_and_the_spend_is_printed(
        tmp_path: Path) -> None:
    agent, data = tmp_path / "agent.py", tmp_path / "data"
    agent.write_text(NEEDS_A_SKILL)
    done = run_py("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "1",
                  "--replicates", "1", "--real", "--agent", "command", "--agent-cmd", f"{sys.executable} {agent}",
                  "--mutator-cmd", f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}", "--no-solve",
                  "--sandbox", "none", "--data-dir", str(data), env=environ_without(*OFFLINE))
    assert done.returncode == 0, done.stderr[-3000:]
    run_id = re.search(r"Run (run-[0-9a-f]+)", done.stdout).group(1)

    test = run_py("--test-run", run_id, "--sandbox", "none", "--data-dir", str(data), env=environ_without(*OFFLINE))
    assert test.returncode == 10, test.stderr[-3000:]               # eval.errors.ControlFailed
    # the champion-vs-seed report, complete, and the control said failed with its cells
    assert "champion vs seed" in test.stdout.lower() or "Δ" in test.stdout
    assert "No-skill control on test: FAILED — 8 agent_error of its 8 cells" in test.stdout
    assert "no-skill control failed: the champion-vs-seed report above is complete and stored" in test.stderr
    assert "boom: no patterns.json" in test.stderr                       # the cause, in the agent's words
    printed = float(re.search(r"; \$([0-9.]+) spent \(added to " + run_id, test.stdout).group(1))
    db = connect_readonly(data / "mutator.db")
    row = dict(list(db.query("select * from test_runs order by id desc limit 1"))[0])
    assert row["status"] == "done" and row["composite"] is not None and row["control_evaluation_id"] is None
    report = loads(row["report"])
    assert report["splits"]["test"]["n_tasks"] == 8 and report["control"] is None
    failed = report["control_failed"]
    assert failed["failures"] == {"agent_error": 8} and failed["cells"] == 8 and "boom" in failed["cause"]
    stored, charged = spent_in_store(data, row["id"])
    assert stored > 0 and stored == pytest.approx(charged, abs=1e-9)     # what its cells were charged
    assert printed == pytest.approx(stored, abs=5e-5)                    # printed to 4 places, from the store
    print(f"\ntest run: printed ${printed:.4f}; stored {stored!r}; charged {charged!r}", file=sys.stderr)

    # run again without the control: everything cached, $0 spent, exit 0
    again = run_py("--test-run", run_id, "--no-control", "--sandbox", "none", "--data-dir", str(data),
                   env=environ_without(*OFFLINE))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 cells run (all cached); $0.0000 spent" in again.stdout
    last = list(db.query("select id, spent_usd from test_runs order by id desc limit 1"))[0]
    assert last["spent_usd"] == 0.0
