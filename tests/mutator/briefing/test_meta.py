"""The meta skill is distilled every N rounds, stored on the run, and shown in later briefings."""

from __future__ import annotations

import json
from pathlib import Path

from mutator.store.db import connect_readonly
from tests.conftest import run_cli


def test_meta_skill_every_two_rounds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "3", "--replicates", "1",
                     "--meta-skill-every", "2", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select meta_skill, cost_usd from runs"))))
    entries = json.loads(run["meta_skill"])
    assert [e["round"] for e in entries] == [2] and entries[0]["cost_usd"] > 0
    assert "Helped (kept): Add the `dates` rule" in entries[0]["lessons"]
    round3 = next((data / "workspaces").glob("*/round-3-0")) / "briefing.md"
    assert "## Lessons so far (meta skill)\n- 2 attempts so far" in round3.read_text()
    round2 = next((data / "workspaces").glob("*/round-2-0")) / "briefing.md"
    assert "Lessons so far" not in round2.read_text()


REPORTING_MUTATOR = r'''import json, os, pathlib, runpy, sys
if os.environ.get("SM_TASK") == "meta":
    pathlib.Path("result.json").write_text(json.dumps({"lessons": "- the header rule helped"}))
else:
    runpy.run_path(sys.argv[1])   # the plain command mutator: one rule, result.json
use = {"input_tokens": 2000, "output_tokens": 300}
with open(os.environ["SM_STREAM"], "a") as f:   # your own command knows what it really cost
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "usage": use,
                        "total_cost_usd": 0.0123}) + "\n")
'''


def test_the_meta_skill_call_is_charged_by_the_mutators_rule(tmp_path: Path) -> None:
    """One charging rule for every agent call (eval/agent_call.py::cost_of): a command mutator that reports its own
    total is charged that total for its meta-skill call too, as for its mutation (the meta call once priced its
    usage at config.json prices instead)."""
    import sys

    from tests.eval.agents.test_own_mutator import clean_env, own_setup, run_py
    own = own_setup(tmp_path)
    mutator = tmp_path / "reporting_mutator.py"
    mutator.write_text(REPORTING_MUTATOR)
    data = tmp_path / "data"
    done = run_py("--real", "--agent-cmd", f"{sys.executable} {own['agent']}",
                  "--mutator-cmd", f"{sys.executable} {mutator} {own['mutator']}", "--skill-dir", str(own["skill"]),
                  "--suite", str(own["train"]), "--val", str(own["val"]), "--rounds", "1", "--replicates", "1",
                  "--meta-skill-every", "1", "--data-dir", str(data), env=clean_env())
    assert done.returncode == 0, done.stderr[-4000:]
    db = connect_readonly(data / "mutator.db")
    [entry] = json.loads(next(iter(db.query("select meta_skill from runs")))["meta_skill"])
    [attempt] = [dict(r) for r in db.query("select mutator_cost_usd, mutator_priced_cost_usd from attempts "
                                           "where round = 1")]
    assert entry["lessons"] == "- the header rule helped" and entry["usage"]["input_tokens"] == 2000
    assert attempt["mutator_cost_usd"] == entry["cost_usd"] == 0.0123    # not the priced figure
    assert attempt["mutator_priced_cost_usd"] != 0.0123
