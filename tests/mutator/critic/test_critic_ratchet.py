"""The critic judges the change, not the parent: real-skill-shaped parents pass a one-line edit, and a
problem the edit itself introduces still fails."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from mutator.critic.guards import GateLimits, lint, passed, review

NAME = "office-docs"
DESCRIPTION = ("Create, edit and review office documents with tracked changes, comments and templates. " * 12)[:1068]


def published_skill(root: Path) -> Path:
    """Shaped like Anthropic's published skills: a 590-line SKILL.md naming its scripts in prose and files
    the agent should write, a description over the spec's 1,024 characters, 300 KB of fonts, a reference doc with an
    unclosed fence and a `<...>` hole, and a script with a TODO."""
    skill = root / NAME
    (skill / "scripts").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "assets" / "fonts").mkdir(parents=True)
    body = ["# Office documents", "",
            "Run `python scripts/unpack.py input.docx unpacked/` first; then scripts/pack.py packs it again.",
            "Write the extracted fields to `fields.json` and the summary to `report.md` in the working dir.",
            "For the XML layout read [the OOXML notes](references/ooxml.md).", "",
            "```bash", "python scripts/unpack.py in.docx out/", "```", ""]
    body += [f"- rule {n}: keep run properties of paragraph {n} as they are." for n in range(586 - len(body))]
    (skill / "SKILL.md").write_text(f"---\nname: {NAME}\ndescription: {DESCRIPTION}\n---\n" + "\n".join(body) + "\n")
    (skill / "scripts" / "unpack.py").write_text("# TODO: handle .dotx templates\nprint('unpack')\n")
    (skill / "scripts" / "pack.py").write_text("print('pack')\n")
    (skill / "references" / "ooxml.md").write_text(
        "# OOXML\n\nReplace <paragraph text> with the new run.\n\n```xml\n<w:p><w:r><w:t>text</w:t></w:r></w:p>\n")
    rng = random.Random(7)
    (skill / "assets" / "fonts" / "Body.ttf").write_bytes(b"\0\1\0\0" + rng.randbytes(300_000))
    return skill


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    parent = published_skill(tmp_path / "parent")
    candidate = tmp_path / "candidate" / NAME
    shutil.copytree(parent, candidate)
    return parent, candidate


def replace_line(skill: Path, old: str, new: str, name: str = "SKILL.md") -> None:
    path = skill / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def append(skill: Path, text: str, name: str = "SKILL.md") -> None:
    path = skill / name
    path.write_text(path.read_text() + text)


def rows(candidate: Path, parent: Path, limits: GateLimits | None = None) -> dict[str, tuple[str, str]]:
    return {c.gate: (c.verdict, c.reason)
            for c in review(candidate, parent, skill_name=NAME, limits=limits or GateLimits())}


def test_the_parent_alone_has_every_false_reject_of_the_old_critic(pair) -> None:
    parent, _ = pair
    found = {c.gate: c.verdict for c in lint(parent)}
    assert found["spec"] == "fail"  # the over-long description is against the spec
    assert {gate for gate, verdict in found.items() if verdict == "warn"} == {
        "size", "fences", "placeholders", "leftovers"}
    assert (parent / "SKILL.md").read_text().count("\n") == 590


def test_a_one_line_edit_of_a_published_skill_passes(pair) -> None:
    parent, candidate = pair
    replace_line(candidate, "- rule 7: keep run properties of paragraph 7 as they are.",
                 "- rule 7: keep run properties of paragraph 7, and its style id, exactly as they are.")
    checks = review(candidate, parent, skill_name=NAME)
    assert passed(checks), [c for c in checks if c.verdict != "pass"]
    found = {c.gate: c.reason for c in checks}
    assert "binary files, not counted" in found["size"]
    assert "already over" in found["size"]
    assert "the parent already has" in found["fences"] and "the parent already has" in found["placeholders"]


@pytest.mark.parametrize("edit", [
    lambda c: append(c, "\nThen write the totals to `totals.json` and `out/summary.csv`.\n",
                     "references/ooxml.md"),                                  # files the agent writes
    lambda c: replace_line(c, "- rule 3:", "- rule 3: run `python scripts/pack.py --check` after it;"),
    lambda c: replace_line(c, "- rule 4:", "- rule 4: the fonts in assets/fonts/Body.ttf are embedded;"),
    lambda c: replace_line(c, "- rule 5:", "- rule 5: never edit `scripts/*.py` or assets/<name>.ttf by hand;"),
    lambda c: replace_line(c, "- rule 6:", "- rule 6: see https://example.com/scripts/missing.py for history;"),
    lambda c: (c / "scripts" / "pack.py").write_text("print('pack, faster')\n"),     # not SKILL.md at all
    lambda c: (c / "assets" / "fonts" / "Title.ttf").write_bytes(b"\0" * 1500),     # a small binary asset
    lambda c: append(c, "- one more rule.\n"),           # a line more on a SKILL.md already over the cap: a warning
], ids=["bare-file-names", "script-in-code", "asset-in-prose", "globs-and-holes", "url", "script-edit", "asset",
        "added-line"])
def test_ordinary_edits_of_a_published_skill_pass(pair, edit: Callable[[Path], None]) -> None:
    parent, candidate = pair
    edit(candidate)
    found = rows(candidate, parent)
    assert passed(review(candidate, parent, skill_name=NAME)), {g: r for g, r in found.items() if r[0] != "pass"}


@pytest.mark.parametrize("edit, gate, reason", [
    (lambda c: replace_line(c, "- rule 8:", "- rule 8: see [styles](references/styles.md);"), "references",
     "SKILL.md links to references/styles.md (not in the skill)"),
    (lambda c: replace_line(c, "- rule 8:", "- rule 8: run `python scripts/validate.py out.docx`;"), "references",
     "SKILL.md names `scripts/validate.py` (not in the skill)"),
    (lambda c: (c / "scripts" / "pack.py").unlink(), "references", "names `scripts/pack.py` (not in the skill)"),
    (lambda c: append(c, "\n```python\nprint('never closed')\n"), "fences", "SKILL.md:592 opens a code fence"),
    (lambda c: replace_line(c, "- rule 9:", "- rule 9: name it <output file name>;"), "placeholders",
     "'<output file name>'"),
    (lambda c: replace_line(c, "# OOXML", "# OOXML\n\nIn headers too, use <paragraph text>.", "references/ooxml.md"),
     "placeholders", "references/ooxml.md:3 has a <...> template hole"),   # a second copy of the parent's hole
    (lambda c: replace_line(c, "- rule 9:", "- rule 9: FIXME: check this;"), "leftovers", "leftover 'FIXME:'"),
    (lambda c: append(c, "- one more rule.\n" * 119), "size",     # over the cap: 20% of 590 lines may be added
     "709 lines, up from 590 while already over the 500-line cap: more than this change's allowance of 118 lines"),
    (lambda c: replace_line(c, f"name: {NAME}", "name: office-docs-2"), "frontmatter", "name changed"),
    (lambda c: append(c, "x" * 9000 + "\n", "scripts/pack.py"), "growth", "over this change's allowance"),
])
def test_a_problem_the_edit_introduces_still_fails(pair, edit, gate: str, reason: str) -> None:
    parent, candidate = pair
    edit(candidate)
    verdict, why = rows(candidate, parent)[gate]
    assert verdict == "fail" and reason in why, why


def test_a_cap_newly_crossed_fails_but_one_already_crossed_and_not_grown_passes(tmp_path: Path) -> None:
    parent = published_skill(tmp_path / "p")
    text = (parent / "SKILL.md").read_text().splitlines(keepends=True)
    (parent / "SKILL.md").write_text("".join(text[:400]))                 # the parent is under the line cap
    candidate = tmp_path / "c" / NAME
    shutil.copytree(parent, candidate)
    append(candidate, "".join(f"- extra rule {n}.\n" for n in range(120)))
    verdict, why = rows(candidate, parent, GateLimits(min_growth_bytes=100_000))["size"]
    assert verdict == "fail" and "SKILL.md has 520 lines, over the 500-line cap" in why
    shorter = tmp_path / "s" / NAME
    shutil.copytree(published_skill(tmp_path / "p2"), shorter)
    (shorter / "SKILL.md").write_text("".join((shorter / "SKILL.md").read_text().splitlines(keepends=True)[:-3]))
    assert rows(shorter, tmp_path / "p2" / NAME)["size"][0] == "pass"    # over, but shrinking is allowed


def test_binary_assets_do_not_count_against_the_size_cap(pair) -> None:
    parent, candidate = pair
    assert (candidate / "assets" / "fonts" / "Body.ttf").stat().st_size > GateLimits().max_bytes
    replace_line(candidate, "- rule 2:", "- rule 2 (checked):")
    verdict, why = rows(candidate, parent)["size"]
    assert verdict == "pass" and "bytes of binary files, not counted" in why


@pytest.mark.parametrize("size, grow, verdict", [(536, 1000, "pass"), (536, 2100, "fail"),
                                                  (40_000, 7_900, "pass"), (40_000, 8_200, "fail")])
def test_growth_allowance_is_a_fraction_with_a_floor(tmp_path: Path, size: int, grow: int, verdict: str) -> None:
    parent = tmp_path / "p" / "tiny"
    parent.mkdir(parents=True)
    head = "---\nname: tiny\ndescription: Extract invoice fields.\n---\n"
    (parent / "SKILL.md").write_text(head + "x" * (size - len(head) - 1) + "\n")
    assert os.path.getsize(parent / "SKILL.md") == size
    candidate = tmp_path / "c" / "tiny"
    shutil.copytree(parent, candidate)
    append(candidate, "Write the fields to `fields.json`.\n"[:grow] + "y" * (grow - 35))
    found = {c.gate: c.verdict for c in review(candidate, parent, skill_name="tiny")}
    assert found["growth"] == verdict and found["references"] == "pass"
