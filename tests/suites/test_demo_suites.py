"""The demo seed skill and the three demo suites: format, disjointness, answer keys, calibration."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from skills_ref import read_properties, validate

from fakes.csv_rules import apply_rules, load_rule_ops, read_csv, write_csv

ROOT = Path(__file__).resolve().parents[2]
SUITES_DIR = ROOT / "suites"
SEED_SKILL = SUITES_DIR / "csv-clean"
SPLITS = {"clean-train": ("train", 12), "clean-val": ("val", 8), "clean-test": ("test", 8)}
ALL_OPS = ["trim", "headers", "dates", "amounts", "booleans", "emails", "dedupe"]


def tasks(suite: str) -> list[dict]:
    text = (SUITES_DIR / suite / "tasks.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_seed_skill_is_a_valid_agent_skill():
    assert validate(SEED_SKILL) == []
    props = read_properties(SEED_SKILL)
    assert props.name == SEED_SKILL.name == "csv-clean"
    assert len(props.description) < 1024 and not re.search(r"[<>]", props.description)


def test_seed_skill_links_examples_and_has_only_the_basic_rules():
    body = (SEED_SKILL / "SKILL.md").read_text()
    assert "[examples](examples.md)" in body and "rules.json" in body
    assert (SEED_SKILL / "examples.md").is_file()
    assert load_rule_ops(SEED_SKILL / "rules.json") == ["trim", "headers"]


@pytest.mark.parametrize("suite", SPLITS)
def test_suite_layout(suite):
    split, count = SPLITS[suite]
    folder = SUITES_DIR / suite
    front = (folder / "suite.md").read_text().split("---")[1]
    assert dict(line.split(": ", 1) for line in front.strip().splitlines()) == {
        "name": suite,
        "split": split,
        "runner": "script",
    }
    items = tasks(suite)
    assert len(items) == count
    for task in items:
        assert set(task) == {"id", "prompt", "inputs", "required"}
        assert re.fullmatch(r"[A-Za-z0-9._-]+", task["id"])
        assert task["inputs"] == ["input.csv"] and task["required"] == ["output.csv"]
        names = re.findall(r"[\w./-]*\w\.csv", task["prompt"])
        assert names[0] == "input.csv" and names[-1] == "output.csv"
        rows = read_csv(folder / "fixtures" / task["id"] / "input.csv")
        assert 5 <= len(rows) - 1 <= 15
        assert (folder / "answers" / f"{task['id']}.csv").is_file()
    assert (folder / "run-eval.py").read_bytes() == (SUITES_DIR / "csv_grader.py").read_bytes()


def test_task_ids_and_data_are_disjoint_across_suites():
    ids = [task["id"] for suite in SPLITS for task in tasks(suite)]
    assert len(ids) == len(set(ids)) == 28
    inputs = [
        (SUITES_DIR / suite / "fixtures" / t["id"] / "input.csv").read_bytes()
        for suite in SPLITS
        for t in tasks(suite)
    ]
    assert len(set(inputs)) == len(inputs)


@pytest.mark.parametrize("suite", SPLITS)
def test_answer_keys_are_all_rules_but_titlecase(suite):
    for task in tasks(suite):
        rows = read_csv(SUITES_DIR / suite / "fixtures" / task["id"] / "input.csv")
        assert read_csv(SUITES_DIR / suite / "answers" / f"{task['id']}.csv") == apply_rules(rows, ALL_OPS)


def test_tasks_differ_in_which_rules_matter():
    useful = set()
    for suite in SPLITS:
        for task in tasks(suite):
            rows = read_csv(SUITES_DIR / suite / "fixtures" / task["id"] / "input.csv")
            full = apply_rules(rows, ALL_OPS)
            useful.add(
                frozenset(op for op in ALL_OPS if apply_rules(rows, [o for o in ALL_OPS if o != op]) != full)
            )
    assert len(useful) >= 4


def mean_cell_score(suite: str, ops: list[str], tmp_path: Path) -> float:
    folder = SUITES_DIR / suite
    cells = []
    for task in tasks(suite):
        cell = tmp_path / f"{suite}-{task['id']}-{len(ops)}"
        cell.mkdir()
        rows = read_csv(folder / "fixtures" / task["id"] / "input.csv")
        write_csv(cell / "output.csv", apply_rules(rows, ops))
        proc = subprocess.run(
            [sys.executable, "run-eval.py", str(cell), task["id"]],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        result = json.loads(proc.stdout)
        cells.append(sum(result.values()) / len(result))
    return sum(cells) / len(cells)


def test_calibration_seed_is_mediocre_full_is_perfect_titlecase_hurts(tmp_path):
    seed = mean_cell_score("clean-val", ["trim", "headers"], tmp_path)
    full = mean_cell_score("clean-val", ALL_OPS, tmp_path)
    harmed = mean_cell_score("clean-val", ALL_OPS + ["titlecase"], tmp_path)
    assert 0.4 <= seed <= 0.65
    assert full == 1.0
    assert harmed < full - 0.15
