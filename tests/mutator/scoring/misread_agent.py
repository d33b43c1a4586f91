"""A build agent for tests: the fake agent (fakes/fake_agent.py) with two changes that make a dry run's
verdicts a matter of construction, not of the cells' seeds (tests/mutator/scoring/test_holm.py):

- it never fumbles a rule (the fake's SKIP_PROBABILITY is 0 here), so a cell's output is fixed by the skill,
  the model and the task, whatever SM_CELL_SEED the harness hands it (the seed follows the evaluation key, and
  so the command line and this file's bytes);
- claude-sonnet-4-5 cannot use the `dates` rule: it skips it, and pays only for reading the longer skill.

So the change that adds `dates` helps haiku on the tasks with dates and costs sonnet the same small amount on
every task. It edits only its own cell's copy of the skill."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from fakes import fake_agent  # noqa: E402

skill = os.environ.get("SM_SKILL_DIR")
if skill and os.environ.get("SM_MODEL") == "claude-sonnet-4-5" and (Path(skill) / "rules.json").is_file():
    rules_file = Path(skill) / "rules.json"
    data = json.loads(rules_file.read_text(encoding="utf-8"))
    rules = data.get("rules", []) if isinstance(data, dict) else data
    rules[:] = [rule for rule in rules if not (isinstance(rule, dict) and rule.get("op") == "dates")]
    rules_file.write_text(json.dumps(data), encoding="utf-8")
fake_agent.SKIP_PROBABILITY = 0.0   # main() reads it per rule: no draw can change a cell
sys.exit(fake_agent.main())
