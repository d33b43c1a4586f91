"""The fake mutator's strategy modes: objective following, crossover from refs/, targeted tasks."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "suites" / "csv-clean"


def run_fake(ws: Path, briefing: str, round_no: int = 1, sibling: int = 0) -> dict:
    (ws / "briefing.md").write_text(briefing)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "FAKE_"))}
    env.update(SM_ROUND=str(round_no), SM_SIBLING=str(sibling), SM_STREAM=str(ws / "stream.jsonl"))
    proc = subprocess.run([sys.executable, str(ROOT / "fakes" / "fake_mutator.py")], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads((ws / "result.json").read_text())


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(SEED, ws / "skill")
    return ws


def ops(folder: Path) -> list[str]:
    return [r["op"] for r in json.loads((folder / "rules.json").read_text())]


def test_a_later_sibling_implements_the_objective_in_its_own_wording(tmp_path):
    ws = workspace(tmp_path)
    briefing = ("# Briefing\n\n## This round's objective (set by the first attempt)\n"
                "Add the `booleans` rule to rules.json and describe it in SKILL.md\n\n## Gate\n...\n")
    result = run_fake(ws, briefing, round_no=1, sibling=2)  # the round script alone would add dates
    assert ops(ws / "skill") == ["trim", "headers", "booleans"]
    assert json.loads((ws / "skill" / "rules.json").read_text())[-1]["id"] == "booleans-v3"
    assert "`booleans`" in result["summary"]


def test_crossover_takes_a_rule_the_reference_has_and_the_parent_lacks(tmp_path):
    ws = workspace(tmp_path)
    ref = ws / "refs" / "abcdef012345"
    shutil.copytree(SEED, ref)
    rules = json.loads((ref / "rules.json").read_text()) + [{"id": "emails", "op": "emails"}]
    (ref / "rules.json").write_text(json.dumps(rules))
    (ref / "SKILL.md").write_text((ref / "SKILL.md").read_text() + "\n- `emails`: lowercase e-mails, always.\n")
    result = run_fake(ws, "# Briefing\n", round_no=1)
    assert ops(ws / "skill") == ["trim", "headers", "emails"]
    assert "- `emails`: lowercase e-mails, always." in (ws / "skill" / "SKILL.md").read_text()
    assert result["summary"] == "Cross over the `emails` rule from reference abcdef012345"
    assert ops(ref) == ["trim", "headers", "emails"]  # the reference is read, never edited


def test_a_reference_with_nothing_new_falls_back_to_the_round_script(tmp_path):
    ws = workspace(tmp_path)
    shutil.copytree(SEED, ws / "refs" / "abcdef012345")
    run_fake(ws, "# Briefing\n", round_no=2)
    assert ops(ws / "skill") == ["trim", "headers", "amounts"]


def test_target_tasks_pick_the_rule_that_fixes_their_failing_train_tests(tmp_path):
    ws = workspace(tmp_path)
    briefing = ("# Briefing\n\n## Tasks to target\nYour parent trails other candidates on these train tasks: "
                "`orders-1`, `users-2`. Aim this change at them.\n\n"
                "## Your parent on train tasks (worst composite first)\n"
                "| task | eval | cost | steps | composite | failing tests |\n|---|---|---|---|---|---|\n"
                "| orders-1 | 0.5 | 0.006 | 4.0 | 0.4 | dates, emails, text |\n"
                "| users-2 | 0.6 | 0.006 | 4.0 | 0.5 | emails, flags |\n"
                "| other-3 | 0.6 | 0.006 | 4.0 | 0.5 | dates, amounts |\n\n## Last attempts\n")
    result = run_fake(ws, briefing, round_no=1)  # the round script alone would add dates
    assert ops(ws / "skill") == ["trim", "headers", "emails"]
    assert result["summary"].endswith("aimed at orders-1, users-2")
