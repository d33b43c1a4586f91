"""The fake mutator's round script, run as a subprocess on a copy of the seed skill."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MUTATOR = ROOT / "fakes" / "fake_mutator.py"
SEED_SKILL = ROOT / "suites" / "csv-clean"


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(SEED_SKILL, ws / "skill")
    (ws / "briefing.md").write_text("# Briefing\n")
    return ws


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def mutate(ws: Path, round_number: int, sibling: int = 0, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "FAKE_"))}
    env.update(
        {
            "SM_STREAM": str(ws / "stream.jsonl"),
            "SM_MODEL": "fake-mutator",
            "SM_ROUND": str(round_number),
            "SM_SIBLING": str(sibling),
        }
    )
    env.update(extra)
    proc = subprocess.run(
        [sys.executable, str(MUTATOR)], cwd=ws, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def ops(ws: Path) -> list[str]:
    return [rule["op"] for rule in json.loads((ws / "skill" / "rules.json").read_text())]


def test_round_1_adds_dates_and_reports(tmp_path):
    ws = workspace(tmp_path)
    mutate(ws, 1)
    assert ops(ws) == ["trim", "headers", "dates"]
    assert "`dates`" in (ws / "skill" / "SKILL.md").read_text()
    result = json.loads((ws / "result.json").read_text())
    assert set(result) == {"summary", "reasoning"} and all(result.values())
    events = [json.loads(line) for line in (ws / "stream.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events] == ["system", "assistant", "user", "result"]
    assert events[-1]["usage"]["input_tokens"] == 3000 and events[-1]["usage"]["output_tokens"] == 400


def test_round_4_leaves_the_skill_byte_identical(tmp_path):
    ws = workspace(tmp_path)
    before = tree_digest(ws / "skill")
    mutate(ws, 4)
    assert tree_digest(ws / "skill") == before
    assert set(json.loads((ws / "result.json").read_text())) == {"summary", "reasoning"}


def test_round_3_adds_titlecase_to_whatever_parent_it_gets(tmp_path):
    ws = workspace(tmp_path)
    mutate(ws, 3)
    assert ops(ws) == ["trim", "headers", "titlecase"]


def test_round_5_links_a_reference_file_it_does_not_create(tmp_path):
    ws = workspace(tmp_path)
    mutate(ws, 5)
    assert "(references/date-formats.md)" in (ws / "skill" / "SKILL.md").read_text()
    assert not (ws / "skill" / "references").exists()


@pytest.mark.parametrize("round_number, op", [(2, "amounts"), (6, "dedupe"), (7, "booleans"), (8, "emails")])
def test_improving_rounds_add_their_rule(tmp_path, round_number, op):
    ws = workspace(tmp_path)
    mutate(ws, round_number)
    assert ops(ws) == ["trim", "headers", op]


def test_round_9_shortens_examples(tmp_path):
    ws = workspace(tmp_path)
    before = (ws / "skill" / "examples.md").stat().st_size
    mutate(ws, 9)
    assert 0 < (ws / "skill" / "examples.md").stat().st_size < before


def test_second_cycle_adds_a_missing_rule_instead_of_repeating(tmp_path):
    ws = workspace(tmp_path)
    mutate(ws, 1)
    mutate(ws, 10)  # the dates step again: dates is present, so the next missing improvement
    assert ops(ws) == ["trim", "headers", "dates", "amounts"]


def test_repeating_a_present_rule_in_the_first_cycle_is_a_no_op(tmp_path):
    ws = workspace(tmp_path)
    mutate(ws, 1)
    before = tree_digest(ws / "skill")
    mutate(ws, 1)
    assert tree_digest(ws / "skill") == before


def test_siblings_make_the_same_change_differently(tmp_path):
    first, second = workspace(tmp_path / "a"), workspace(tmp_path / "b")
    mutate(first, 1, sibling=0)
    mutate(second, 1, sibling=1)
    assert ops(first) == ops(second) == ["trim", "headers", "dates"]
    assert (first / "skill" / "SKILL.md").read_text() != (second / "skill" / "SKILL.md").read_text()


def test_rules_object_form_is_preserved(tmp_path):
    ws = workspace(tmp_path)
    (ws / "skill" / "rules.json").write_text(json.dumps({"version": 1, "rules": [{"id": "t", "op": "trim"}]}))
    mutate(ws, 2)
    data = json.loads((ws / "skill" / "rules.json").read_text())
    assert data["version"] == 1 and [r["op"] for r in data["rules"]] == ["trim", "amounts"]


def test_garbage_hook_writes_non_json(tmp_path):
    ws = workspace(tmp_path)
    mutate(ws, 1, FAKE_MUTATOR_GARBAGE="1")
    with pytest.raises(json.JSONDecodeError):
        json.loads((ws / "result.json").read_text())
