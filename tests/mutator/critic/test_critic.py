"""The critic rejects broken candidates without spending an evaluation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mutator.critic.guards import passed, review
from tests.conftest import ROOT

SEED = ROOT / "suites" / "csv-clean"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    parent, candidate = tmp_path / "parent", tmp_path / "candidate"
    shutil.copytree(SEED, parent)
    shutil.copytree(SEED, candidate)
    return parent, candidate


def verdicts(candidate: Path, parent: Path) -> dict[str, str]:
    return {c.gate: c.verdict for c in review(candidate, parent, skill_name="csv-clean")}


def reasons(candidate: Path, parent: Path) -> str:
    return " ".join(c.reason for c in review(candidate, parent, skill_name="csv-clean"))


def test_seed_copy_is_identical_and_rejected(pair) -> None:
    parent, candidate = pair
    found = verdicts(candidate, parent)
    assert found["changed"] == "fail"
    assert {gate for gate, verdict in found.items() if verdict == "fail"} == {"changed"}
    assert {"frontmatter", "references", "data-files"} <= set(found)
    assert not passed(review(candidate, parent, skill_name="csv-clean"))


def test_a_real_change_passes(pair) -> None:
    parent, candidate = pair
    (candidate / "SKILL.md").write_text((candidate / "SKILL.md").read_text() + "\nAlways keep the header row.\n")
    checks = review(candidate, parent, skill_name="csv-clean")
    assert passed(checks) and {c.verdict for c in checks} == {"pass"}


@pytest.mark.parametrize("edit, gate, reason", [
    (lambda c: (c / "SKILL.md").write_text("no frontmatter here\n"), "frontmatter", "frontmatter"),
    (lambda c: (c / "SKILL.md").write_text((c / "SKILL.md").read_text().replace("name: csv-clean", "name: Other_Name")),
     "frontmatter", "must be lowercase"),
    (lambda c: (c / "SKILL.md").write_text((c / "SKILL.md").read_text() + "\nSee [more](references/more.md).\n"),
     "references", "SKILL.md links to references/more.md (not in the skill)"),
    (lambda c: (c / "SKILL.md").write_text((c / "SKILL.md").read_text() + "\nRun `scripts/fix.py` first.\n"),
     "references", "SKILL.md names `scripts/fix.py` (not in the skill)"),
    (lambda c: (c / "SKILL.md").write_text((c / "SKILL.md").read_text() + "\n[escape](../../etc/passwd)\n"),
     "references", "links to ../../etc/passwd"),
    (lambda c: (c / "rules.json").write_text("[{\"op\": \"trim\",]"), "data-files", "rules.json does not parse"),
    (lambda c: (c / "rules.json").write_text("{\"rules\": 3}"), "data-files", "must be a list of rule objects"),
])
def test_broken_candidates_fail_the_named_gate(pair, edit, gate: str, reason: str) -> None:
    parent, candidate = pair
    edit(candidate)
    assert verdicts(candidate, parent)[gate] == "fail"
    assert reason in reasons(candidate, parent)


def test_urls_and_anchors_are_not_files(pair) -> None:
    parent, candidate = pair
    (candidate / "SKILL.md").write_text((candidate / "SKILL.md").read_text()
                                        + "\n[spec](https://example.com/x.md) [top](#usage) [ex](examples.md#one)\n")
    assert verdicts(candidate, parent)["references"] == "pass"
