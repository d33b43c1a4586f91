"""`run.py --lint SKILL_DIR [--against PARENT_DIR]`: the critic's rows before any spend, exit 0 when all pass."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.mutator.critic.test_critic_ratchet import NAME, published_skill

SEED = ROOT / "suites" / "csv-clean"


def lint(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "--lint", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_the_demo_seed_passes_alone() -> None:
    done = lint(SEED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok    spec" in done.stdout and "passes" in done.stdout and "FAIL" not in done.stdout


def test_a_broken_copy_fails_against_the_seed(tmp_path: Path) -> None:
    broken = tmp_path / "csv-clean"
    shutil.copytree(SEED, broken)
    (broken / "SKILL.md").write_text((broken / "SKILL.md").read_text() + "\nSee [dates](references/dates.md).\n"
                                     "```python\nunclosed\n")
    done = lint(broken, "--against", SEED)
    assert done.returncode == 1
    assert "FAIL  references    SKILL.md links to references/dates.md (not in the skill)" in done.stdout
    assert "FAIL  fences" in done.stdout and "2 guard(s) fail: references, fences" in done.stdout
    assert lint(SEED, "--against", SEED).returncode == 1          # identical: the `changed` guard fails


def test_a_published_skill_edited_by_one_line_passes_against_itself(tmp_path: Path) -> None:
    parent = published_skill(tmp_path / "parent")
    candidate = tmp_path / "candidate" / NAME
    shutil.copytree(parent, candidate)
    text = (candidate / "SKILL.md").read_text()
    (candidate / "SKILL.md").write_text(text.replace("rule 12: keep", "rule 12: always keep", 1))
    done = lint(candidate, "--against", parent)
    assert done.returncode == 0, done.stdout
    alone = lint(parent)
    assert alone.returncode == 1 and "FAIL  spec" in alone.stdout and "warn  fences" in alone.stdout


def test_a_folder_without_skill_md_is_bad_input(tmp_path: Path) -> None:
    done = lint(tmp_path)
    assert done.returncode == 2 and "no SKILL.md there" in done.stderr


def test_against_alone_is_refused() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "--against", str(SEED)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--against PARENT_DIR goes with --lint" in done.stderr


def test_a_reference_that_is_a_symlink_out_of_the_skill_fails_and_is_named(tmp_path: Path) -> None:
    """A symlink is never copied as a file: one leaving the skill would hand a cell (or a deployed skill) a file
    of this machine. --lint alone and the critic's review both refuse it and name the link and its target."""
    from mutator.critic.guards import review
    outside = tmp_path / "outside.md"
    outside.write_text("# notes kept elsewhere\n")
    skill = tmp_path / "csv-clean"
    shutil.copytree(SEED, skill)
    (skill / "references").mkdir(exist_ok=True)
    (skill / "references" / "notes.md").symlink_to(outside)
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text() + "\nSee [notes](references/notes.md).\n")
    done = lint(skill)
    assert done.returncode == 1, done.stdout
    assert "FAIL  links" in done.stdout and f"references/notes.md -> {outside}" in done.stdout
    rows = {row.gate: row for row in review(skill, SEED, skill_name="csv-clean")}
    assert rows["links"].verdict == "fail" and "references/notes.md" in rows["links"].reason
    inside = tmp_path / "inside" / "csv-clean"
    shutil.copytree(SEED, inside)
    (inside / "SKILL.md").rename(inside / "skill-text.md")
    (inside / "SKILL.md").symlink_to("skill-text.md")      # a link that stays in the folder is not refused
    assert {row.gate: row for row in review(inside, SEED, skill_name="csv-clean")}["links"].verdict == "pass"
