"""A build agent for tests: the fake agent (fakes/fake_agent.py), except that claude-sonnet-4-5 cannot use the
`dates` rule: it skips it, and pays only for reading the longer skill. So the change that adds `dates` helps haiku
and costs sonnet a little (tests/mutator/scoring/test_holm.py). It edits only its own cell's copy of the skill."""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path

skill = os.environ.get("SM_SKILL_DIR")
if skill and os.environ.get("SM_MODEL") == "claude-sonnet-4-5" and (Path(skill) / "rules.json").is_file():
    rules_file = Path(skill) / "rules.json"
    data = json.loads(rules_file.read_text(encoding="utf-8"))
    rules = data.get("rules", []) if isinstance(data, dict) else data
    rules[:] = [rule for rule in rules if not (isinstance(rule, dict) and rule.get("op") == "dates")]
    rules_file.write_text(json.dumps(data), encoding="utf-8")
runpy.run_path(str(Path(__file__).resolve().parents[3] / "fakes" / "fake_agent.py"), run_name="__main__")
