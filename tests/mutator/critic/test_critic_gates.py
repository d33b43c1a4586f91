"""The critic's safety gates: each rejects a constructed bad candidate with its reason, and only that gate."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mutator.critic.guards import GateLimits, passed, review, safety_gates, unclosed_fences
from tests.conftest import ROOT

SEED = ROOT / "suites" / "csv-clean"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    parent, candidate = tmp_path / "parent", tmp_path / "candidate"
    shutil.copytree(SEED, parent)
    shutil.copytree(SEED, candidate)
    return parent, candidate


def append(candidate: Path, text: str, name: str = "SKILL.md") -> None:
    path = candidate / name
    path.write_text(path.read_text() + text)


@pytest.mark.parametrize("edit, gate, reason", [
    (lambda c: (c / "SKILL.md").write_text("  \n\n"), "non-empty", "SKILL.md is missing or empty"),
    (lambda c: append(c, "\n" + "- one more rule line\n" * 520), "size", "over the 500-line cap"),
    (lambda c: (c / "assets").mkdir() or (c / "assets" / "big.txt").write_text("x" * 300_000), "size",
     "over the 262144-byte cap"),
    (lambda c: append(c, "\n" + "Keep every value exactly as it is. " * 90 + "\n"), "growth",
     "over this change's allowance of 2048 bytes"),
    (lambda c: append(c, "\n```python\nprint('never closed')\n"), "fences", "SKILL.md:31 opens a code fence"),
    (lambda c: append(c, "\nWrite dates as {{date_format}}.\n"), "placeholders", "{{var}} template variable"),
    (lambda c: append(c, "\nThe delimiter is [PLACEHOLDER].\n"), "placeholders", "[PLACEHOLDER] label"),
    (lambda c: append(c, "\nSave the file as <output file name>.\n"), "placeholders", "<...> template hole"),
    (lambda c: append(c, "\nThen do <...> with it.\n", "examples.md"), "placeholders",
     "examples.md:"),
    (lambda c: append(c, "\nTODO: describe the date rule.\n"), "leftovers", "leftover 'TODO:' label"),
    (lambda c: (c / "rules.json").write_text('{"rules": [], "note": "FIXME: add rules"}'), "leftovers",
     "rules.json:1 has a leftover 'FIXME:'"),
    (lambda c: append(c, "\nXXX: is this right?\n"), "leftovers", "'XXX:'"),
])
def test_each_gate_rejects_a_bad_candidate_with_its_reason(pair, edit, gate: str, reason: str) -> None:
    parent, candidate = pair
    edit(candidate)
    checks = {c.gate: c for c in review(candidate, parent, skill_name="csv-clean")}
    assert checks[gate].verdict == "fail"
    assert reason in checks[gate].reason
    assert not passed(list(checks.values()))


def test_every_gate_row_has_gate_verdict_and_reason(pair) -> None:
    parent, candidate = pair
    append(candidate, "\nAlways keep the header row.\n")
    rows = [c.to_json() for c in safety_gates(candidate, parent)]
    assert [r["gate"] for r in rows] == ["non-empty", "size", "growth", "fences", "placeholders", "leftovers"]
    assert all(set(r) == {"gate", "verdict", "reason"} and r["verdict"] == "pass" for r in rows)


@pytest.mark.parametrize("text", [
    "\n```bash\necho {{not a placeholder in code}} <your file>\n```\n",   # fenced code is not prose
    "\nRun `sed 's/{{x}}/y/' <in-file>` to test.\n",                         # inline code neither
    "\nSee the [README](README.md#usage) and [docs][ref].\n\n[ref]: https://example.com\n",
    "\nThe `<available_skills>` block and <br> tags are fine; so is a < b > c.\n",
    "\n~~~\nindented ``` is inside a tilde fence\n~~~\n",
    "\nTodo lists and the word fixme are fine without a colon label.\n",
])
def test_ordinary_markdown_passes_every_safety_gate(pair, text: str) -> None:
    parent, candidate = pair
    (candidate / "README.md").write_text("# readme\n")
    append(candidate, text)
    failing = [c for c in safety_gates(candidate, parent) if c.verdict == "fail"]
    assert not failing, failing


def test_limits_are_configurable(pair) -> None:
    parent, candidate = pair
    append(candidate, "\nAlways keep the header row.\n")
    tight = GateLimits(max_lines=10, max_bytes=1000, max_growth=0.001, min_growth_bytes=0)
    failing = {c.gate for c in review(candidate, parent, skill_name="csv-clean", limits=tight) if c.verdict == "fail"}
    assert failing == {"size", "growth"}


@pytest.mark.parametrize("text, unclosed", [
    ("```\ncode\n```\n", []), ("```\ncode\n", [1]), ("````\n```\n````\n", []), ("````\n```\n", [1]),
    ("~~~\n```\n", [1]), ("```py\n```py\n```\n", []), ("a ```b``` c\n", []), ("    ```\n", []),
])
def test_fence_balance(text: str, unclosed: list[int]) -> None:
    assert unclosed_fences(text) == unclosed
