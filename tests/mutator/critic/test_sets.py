"""The critic on a skill set: one skill changed per candidate, none added or removed, each skill's guards."""

from __future__ import annotations

import shutil
from pathlib import Path

from mutator.critic.guards import passed
from mutator.critic.sets import review_set
from tests.eval.test_skill_set import skill_set


def pair_and_child(tmp_path: Path) -> tuple[Path, Path]:
    parent = skill_set(tmp_path / "parent")
    return parent, Path(shutil.copytree(parent, tmp_path / "child"))


def test_a_change_to_one_skill_passes_and_names_it(tmp_path: Path) -> None:
    parent, child = pair_and_child(tmp_path)
    with open(child / "skills" / "notes" / "SKILL.md", "a") as f:
        f.write("\nKeep notes short.\n")
    rows = review_set(child, parent)
    assert passed(rows) and rows[0].to_json() == {"gate": "set", "verdict": "pass", "reason": "changes notes"}
    gates = [r.gate for r in rows]
    assert "notes: changed" in gates and "csv-clean: changed" not in gates and "csv-clean: frontmatter" in gates


def test_two_skills_changed_added_or_removed_fail(tmp_path: Path) -> None:
    parent, child = pair_and_child(tmp_path)
    for name in ("notes", "csv-clean"):
        with open(child / "skills" / name / "SKILL.md", "a") as f:
            f.write("\nMore.\n")
    [first, *_] = review_set(child, parent)
    assert first.verdict == "fail" and first.reason.startswith("one change per candidate: it edits 2 skills")
    shutil.rmtree(child / "skills" / "notes")
    rows = review_set(child, parent)
    assert not passed(rows) and "edit a skill, never add or remove one" in rows[0].reason
    assert [r.verdict for r in review_set(parent, parent)] == ["fail"]     # no change at all


def test_a_broken_member_fails_under_its_own_name(tmp_path: Path) -> None:
    parent, child = pair_and_child(tmp_path)
    (child / "skills" / "notes" / "SKILL.md").write_text("no frontmatter\n")
    failed = [r for r in review_set(child, parent) if r.verdict == "fail"]
    assert [r.gate for r in failed] == ["notes: frontmatter"]
