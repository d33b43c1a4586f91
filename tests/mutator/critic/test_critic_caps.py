"""A parent already over a size cap may grow within the growth allowance (a warning, not a rejection), and
the caps and the room left are stated before a mutator call is paid: in the briefing and in `--lint`.

The skills here are built at the sizes of Anthropic's largest published ones (claude-api, docx, pptx, xlsx:
a SKILL.md of 578-593 lines and 0.8-1.1 MB of text in the folder)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mutator.critic.guards import GateLimits, passed, review
from mutator.critic.text import Tree
from tests.conftest import ROOT

NAME = "office-suite"
MIB = 1 << 20
LARGEST = [(578, int(0.8 * MIB)), (593, int(1.1 * MIB))]   # (SKILL.md lines, bytes of text in the folder)
RULE7 = "- rule 7: keep run properties of paragraph 7 as they are."
RULE7_EDITED = "- rule 7: keep run properties of paragraph 7, and its style id, exactly as they are."


def largest_published(root: Path, lines: int, text_bytes: int, name: str = NAME) -> Path:
    """A skill with a SKILL.md of exactly `lines` lines and `text_bytes` bytes of text, most of it in ten
    reference docs the SKILL.md links to."""
    skill = root / name
    (skill / "references").mkdir(parents=True)
    head = [f"---\nname: {name}\ndescription: Create, edit and review office documents with tracked changes.\n---",
            "# Office documents", "", *(f"- Part {k}: [reference {k}](references/part-{k}.md)." for k in range(10)), ""]
    head = "\n".join(head).splitlines()
    body = head + [f"- rule {n}: keep run properties of paragraph {n} as they are." for n in range(lines - len(head))]
    skill_md = "\n".join(body) + "\n"
    (skill / "SKILL.md").write_text(skill_md)
    rest = text_bytes - len(skill_md.encode())
    for k in range(10):
        size = rest // 10 + (rest % 10 if k == 9 else 0)
        para = "".join(f"Paragraph {n} of part {k}: keep the run properties exactly as they are.\n"
                       for n in range(size // 60 + 2))
        (skill / "references" / f"part-{k}.md").write_text(f"# Part {k}\n" + para[:size - len(f"# Part {k}\n") - 1]
                                                           + "\n")
    tree = Tree(skill)
    assert (tree.skill_md_lines, tree.text_bytes) == (lines, text_bytes)
    return skill


def copy(parent: Path, root: Path) -> Path:
    candidate = root / NAME
    shutil.copytree(parent, candidate)
    return candidate


def edit_rule7(skill: Path) -> None:
    """The one-line edit: a rule reworded, 27 bytes longer."""
    text = (skill / "SKILL.md").read_text()
    assert RULE7 in text
    (skill / "SKILL.md").write_text(text.replace(RULE7, RULE7_EDITED, 1))


def add_line(skill: Path, line: str = "- rule 999: keep the document's theme colours.") -> None:
    with (skill / "SKILL.md").open("a") as f:
        f.write(line + "\n")


def size_row(candidate: Path, parent: Path, limits: GateLimits | None = None) -> tuple[str, str]:
    found = {c.gate: c for c in review(candidate, parent, skill_name=NAME, limits=limits or GateLimits())}
    return found["size"].verdict, found["size"].reason


def lint(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "--lint", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module", params=LARGEST, ids=lambda size: f"{size[0]}-lines-{size[1]}-bytes")
def largest(request, tmp_path_factory) -> tuple[Path, int, int]:
    lines, text_bytes = request.param
    return largest_published(tmp_path_factory.mktemp("parent"), lines, text_bytes), lines, text_bytes


def test_a_one_line_edit_passes_review_with_a_warn_row(largest, tmp_path: Path) -> None:
    parent, lines, text_bytes = largest
    candidate = copy(parent, tmp_path)
    edit_rule7(candidate)
    checks = review(candidate, parent, skill_name=NAME)
    assert passed(checks), [c for c in checks if c.verdict == "fail"]
    assert [c.gate for c in checks if c.verdict == "warn"] == ["size"]
    reason = {c.gate: c.reason for c in checks}["size"]
    allowance = int(0.2 * text_bytes)
    assert (f"bytes of text: parent already over the cap ({text_bytes} > 262144); grew by 27 within the "
            f"allowance of {allowance}") in reason
    assert f"SKILL.md lines: parent already over the cap ({lines} > 500); not grown" in reason


def test_an_added_line_passes_review_with_a_warn_row(largest, tmp_path: Path) -> None:
    parent, lines, _ = largest
    candidate = copy(parent, tmp_path)
    add_line(candidate)
    verdict, reason = size_row(candidate, parent)
    assert verdict == "warn"
    assert (f"SKILL.md lines: parent already over the cap ({lines} > 500); grew by 1 within the allowance of "
            f"{int(0.2 * lines)}") in reason


def test_a_one_line_edit_passes_lint_against_its_parent(largest, tmp_path: Path) -> None:
    parent, lines, text_bytes = largest
    candidate = copy(parent, tmp_path)
    edit_rule7(candidate)
    done = lint(candidate, "--against", parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\nwarn  size " in done.stdout and "FAIL" not in done.stdout
    assert f"bytes of text: parent already over the cap ({text_bytes} > 262144); grew by 27" in done.stdout
    assert f"- SKILL.md: {lines} lines, already over the 500-line cap (critic.maxSkillLines)" in done.stdout
    assert "passes (1 warning(s)" in done.stdout


def test_lint_alone_states_the_caps_and_the_room_left(largest) -> None:
    parent, lines, text_bytes = largest
    done = lint(parent)
    assert done.returncode == 0, done.stdout + done.stderr
    allowance = int(0.2 * text_bytes)
    assert (f"- SKILL.md: {lines} lines, already over the 500-line cap (critic.maxSkillLines): a change may "
            f"still add up to {int(0.2 * lines)} lines (critic.maxGrowth 20% of {lines}), with a warning"
            in done.stdout)
    assert (f"- text: {text_bytes} bytes, already over the 262144-byte cap (critic.maxSkillBytes): a change may "
            f"still add up to {allowance} bytes, with a warning" in done.stdout)


def test_a_parent_under_the_line_cap_pushed_over_still_fails(tmp_path: Path) -> None:
    parent = largest_published(tmp_path / "p", 495, 200_000)
    candidate = copy(parent, tmp_path / "c")
    for n in range(6):
        add_line(candidate, f"- extra rule {n}.")
    verdict, reason = size_row(candidate, parent)
    assert verdict == "fail" and "SKILL.md has 501 lines, over the 500-line cap" in reason


def test_a_parent_under_the_byte_cap_pushed_over_still_fails(tmp_path: Path) -> None:
    parent = largest_published(tmp_path / "p", 300, 261_000)
    candidate = copy(parent, tmp_path / "c")
    (candidate / "references" / "part-0.md").write_text((candidate / "references" / "part-0.md").read_text()
                                                        + "More about runs.\n" * 100)
    verdict, reason = size_row(candidate, parent, GateLimits(min_growth_bytes=100_000))
    assert verdict == "fail" and "the skill holds 262700 bytes of text, over the 262144-byte cap" in reason


def test_over_the_cap_growth_past_the_line_allowance_still_fails(largest, tmp_path: Path) -> None:
    parent, lines, _ = largest
    candidate = copy(parent, tmp_path)
    for n in range(int(0.2 * lines) + 1):
        add_line(candidate, f"- extra rule {n}.")
    verdict, reason = size_row(candidate, parent)
    assert verdict == "fail"
    assert (f"SKILL.md has {lines + int(0.2 * lines) + 1} lines, up from {lines} while already over the "
            f"500-line cap: more than this change's allowance of {int(0.2 * lines)} lines") in reason


def test_over_the_cap_growth_past_the_byte_allowance_still_fails(largest, tmp_path: Path) -> None:
    parent, _, text_bytes = largest
    candidate = copy(parent, tmp_path)
    allowance = int(0.2 * text_bytes)
    (candidate / "references" / "extra.md").write_text("x" * allowance + "\n")
    checks = {c.gate: c for c in review(candidate, parent, skill_name=NAME)}
    assert not passed(list(checks.values()))
    assert checks["growth"].verdict == "fail" and checks["size"].verdict == "fail"
    assert (f"the skill holds {text_bytes + allowance + 1} bytes of text, up from {text_bytes} while already over "
            f"the 262144-byte cap: more than this change's allowance of {allowance} bytes") in checks["size"].reason


def test_the_briefing_states_the_caps_and_the_room_left(tmp_path: Path) -> None:
    from mutator.briefing.render import BriefingInput, render
    from mutator.critic.caps import caps_text, room
    big = largest_published(tmp_path / "big", 593, int(1.1 * MIB))
    small = largest_published(tmp_path / "small", 120, 40_000)

    def briefing(skill: Path) -> str:
        return render(BriefingInput(round=3, sibling=0, skill_name=NAME, formula="F", gate="G", incumbent={},
                                    train_tasks=[], attempts=[], caps=caps_text(room(Tree(skill), GateLimits()))))
    over = briefing(big)
    assert "## Size caps (the critic rejects a candidate past them before it is evaluated)" in over
    assert ("- SKILL.md: 593 lines, already over the 500-line cap (critic.maxSkillLines): a change may still add "
            "up to 118 lines (critic.maxGrowth 20% of 593), with a warning") in over
    assert ("- text: 1153433 bytes, already over the 262144-byte cap (critic.maxSkillBytes): a change may still "
            "add up to 230686 bytes, with a warning") in over
    assert ("- growth: one change may add at most 230686 bytes over all files, binary ones too "
            "(max(critic.maxGrowth 20% of 1153433 bytes of text, critic.minGrowthBytes 2048))") in over
    assert "This change may add at most 118 lines to SKILL.md and 230686 bytes in all" in over
    under = briefing(small)
    assert "- SKILL.md: 120 lines of the 500-line cap (critic.maxSkillLines): 380 lines left" in under
    assert "- text: 40000 bytes of the 262144-byte cap (critic.maxSkillBytes): 222144 bytes left" in under
    assert "This change may add at most 380 lines to SKILL.md and 8000 bytes in all" in under
