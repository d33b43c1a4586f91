"""The triggering fakes as real subprocesses: the build agent loads the skill only when the request meets its
description (streaming the load as Claude Code does, running the scripts SKILL.md names), and the mutator's
description rewrite makes a missed request trigger."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from eval.skill_use import NOT_USED, SkillUse, parse_skill_use
from eval.stream_metrics import read_stream
from fakes.csv_rules import read_csv

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = sorted((ROOT / "suites" / "clean-train" / "fixtures").iterdir())[0] / "input.csv"
MEETS = "The file input.csv is messy. Normalise it following the skill and write output.csv."
MISSES = "Summarise the quarterly sales figures in input.csv into output.csv."


def cell_with_skill(tmp_path: Path, name: str, skill: Path | None = None) -> tuple[Path, Path]:
    cell = tmp_path / name
    target = cell / ".claude" / "skills" / "csv-clean"
    shutil.copytree(skill or ROOT / "suites" / "csv-clean", target)
    shutil.copy(FIXTURE, cell / "input.csv")
    return cell, target


def run(script: str, cwd: Path, prompt: str = "", **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "FAKE_"))}
    return subprocess.run([sys.executable, str(ROOT / "fakes" / script)], cwd=cwd, input=prompt, text=True,
                          capture_output=True, timeout=60, env={**clean, "SM_CELL_SEED": "7", **env})


def agent(cell: Path, skill: Path, prompt: str, script: str = "trigger_agent.py") -> SkillUse:
    done = run(script, cell, prompt, SM_STREAM=str(cell / "stream.jsonl"), SM_SKILL_DIR=str(skill))
    assert done.returncode == 0, done.stderr
    return parse_skill_use(cell / "stream.jsonl", "csv-clean")


def test_a_request_meeting_the_description_loads_runs_the_named_script_and_does_the_same_work(tmp_path):
    cell, skill = cell_with_skill(tmp_path, "cell")
    (skill / "scripts").mkdir()
    (skill / "scripts" / "check.py").write_text("import sys\nprint('bad header')\nsys.exit(2)\n")
    with (skill / "SKILL.md").open("a") as f:
        f.write("\nRun `scripts/check.py` on the input first.\n")
    use = agent(cell, skill, MEETS)
    meta = f"Base directory for this skill: {skill}\n\n{(skill / 'SKILL.md').read_text()}"
    rules = json.loads((skill / "rules.json").read_text())
    summary = f"{len(read_csv(FIXTURE))} rows; rules: {', '.join(r['op'] for r in rules)}"
    assert use == SkillUse(loaded=True, loaded_turn=1, files_read=("SKILL.md", "rules.json"),
                           scripts_run=(("scripts/check.py", 2),),
                           read_tokens_est=len("Launching skill: csv-clean") // 4 + len(meta) // 4 + len(summary) // 4)
    # the work is fake_agent's own, and the result counts the load's two turns
    plain, plain_skill = cell_with_skill(tmp_path, "plain", skill)
    agent(plain, plain_skill, MEETS, script="fake_agent.py")
    assert (cell / "output.csv").read_text() == (plain / "output.csv").read_text()
    assert read_stream(cell / "stream.jsonl").steps == read_stream(plain / "stream.jsonl").steps + 2


def test_a_request_missing_the_description_is_worked_bare_until_the_description_is_rewritten(tmp_path):
    cell, skill = cell_with_skill(tmp_path, "cell")
    assert agent(cell, skill, MISSES) == NOT_USED
    assert read_csv(cell / "output.csv") == read_csv(FIXTURE)      # worked bare: no rule applied
    # the mutator reads the briefing's skill-use column and the task statement, and rewrites the description
    workspace = tmp_path / "workspace"
    shutil.copytree(ROOT / "suites" / "csv-clean", workspace / "skill")
    (workspace / "tasks").mkdir()
    (workspace / "tasks" / "sales-01.md").write_text(f"# sales-01\n\n{MISSES}\n\n## Input input.csv\nrows\n")
    (workspace / "briefing.md").write_text(
        "## Your parent on train tasks (worst composite first)\n| task | eval | cost | steps | composite | skill use | "
        "failing tests |\n|---|---|---|---|---|---|---|\n| sales-01 | 0.2 | 0.001 | 2.0 | 0.1 | NOT loaded (0/2) | rows |\n"
        "| orders-02 | 0.8 | 0.001 | 5.0 | 0.7 | loaded 2/2; read SKILL.md 2 | — |\n\n## Last attempts\n")
    done = run("trigger_mutator.py", workspace, SM_ROUND="1", SM_STREAM=str(tmp_path / "mutator.jsonl"))
    assert done.returncode == 0, done.stderr
    result = json.loads((workspace / "result.json").read_text())
    assert result["summary"] == "Rewrite the description so the skill triggers on sales-01"
    assert "Also use it for requests about summarise, quarterly, sales, figures, input, output." in \
        (workspace / "skill" / "SKILL.md").read_text()
    again, rewritten = cell_with_skill(tmp_path, "again", workspace / "skill")
    assert agent(again, rewritten, MISSES).loaded


def test_without_a_missed_task_the_trigger_mutator_is_the_fake_mutator(tmp_path):
    workspace = tmp_path / "workspace"
    shutil.copytree(ROOT / "suites" / "csv-clean", workspace / "skill")
    done = run("trigger_mutator.py", workspace, SM_ROUND="1")
    assert done.returncode == 0, done.stderr
    assert json.loads((workspace / "result.json").read_text())["summary"].startswith("Add the `dates` rule")
