"""Bad suites fail at load time with the file, the line and the fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eval.suite import SuiteError, load_suite, name_problem
from tests.conftest import ROOT, make_suite


def test_demo_suites_load() -> None:
    for name, count in (("clean-train", 12), ("clean-val", 8), ("clean-test", 8)):
        suite = load_suite(ROOT / "suites" / name)
        assert suite.name == name and len(suite.tasks) == count
        assert suite.grader.name == "run-eval.py"


@pytest.mark.parametrize("name, ok", [("clean-train", True), ("a.b_c-1", True), ("bad name", False),
                                      ("a__b", False), ("trailing.", False), ("CON", False), ("nul.txt", False),
                                      ("ünï", False)])
def test_name_rules(name: str, ok: bool) -> None:
    assert (name_problem(name) is None) is ok


def test_bad_suite_folder_name(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, "good")
    bad = suite.rename(tmp_path / "bad__name")
    with pytest.raises(SuiteError, match=r"bad__name.*'__' is reserved.*rename the folder"):
        load_suite(bad)


def test_missing_grader(tiny_suite: Path) -> None:
    (tiny_suite / "run-eval.py").unlink()
    with pytest.raises(SuiteError, match=r"no grader; add run-eval.py"):
        load_suite(tiny_suite)


def test_malformed_tasks_line_names_the_line(tiny_suite: Path) -> None:
    tasks = tiny_suite / "tasks.jsonl"
    tasks.write_text(tasks.read_text() + '{"id": "t9", "prompt": oops}\n')
    with pytest.raises(SuiteError, match=re.escape(f"{tasks}:3: not valid JSON")):
        load_suite(tiny_suite)


def test_a_folder_as_an_input_is_named_a_folder_not_missing(tiny_suite: Path) -> None:
    inp = tiny_suite / "fixtures" / "t1" / "in.txt"
    inp.unlink()
    inp.mkdir()
    (inp / "part.txt").write_text("x")
    with pytest.raises(SuiteError, match=re.escape("tasks.jsonl:2: input 'in.txt' of task 't1' is a folder "
                                                   "(fixtures/t1/in.txt); inputs must be files: list each file of "
                                                   "it in 'inputs'")):
        load_suite(tiny_suite)


def test_missing_fixture_names_task_and_path(tiny_suite: Path) -> None:
    (tiny_suite / "fixtures" / "t1" / "in.txt").unlink()
    with pytest.raises(SuiteError, match=r"tasks.jsonl:2: input 'in.txt' of task 't1' not found at fixtures/t1/in.txt"):
        load_suite(tiny_suite)


def test_duplicate_ids_differing_by_case(tiny_suite: Path) -> None:
    tasks = tiny_suite / "tasks.jsonl"
    tasks.write_text(tasks.read_text() + json.dumps({"id": "T0", "prompt": "again"}) + "\n")
    with pytest.raises(SuiteError, match=r"tasks.jsonl:3: task id 'T0' duplicates line 1"):
        load_suite(tiny_suite)


@pytest.mark.parametrize("front, message", [
    ("---\nname: other\nsplit: val\n---\n", "must equal the folder name"),
    ("---\nname: tiny\nsplit: dev\n---\n", "split 'dev' must be one of train, val, test"),
    ("no frontmatter\n", "must start with a '---' frontmatter block"),
    ("---\nname: tiny\nsplit: val\nrunner: magic\n---\n", "runner 'magic' is not available"),
])
def test_frontmatter_problems(tiny_suite: Path, front: str, message: str) -> None:
    (tiny_suite / "suite.md").write_text(front)
    with pytest.raises(SuiteError, match=re.escape(message)):
        load_suite(tiny_suite)


def test_task_input_may_not_escape_the_cell(tiny_suite: Path) -> None:
    (tiny_suite / "tasks.jsonl").write_text(json.dumps({"id": "t0", "prompt": "p", "inputs": ["../x"]}) + "\n")
    with pytest.raises(SuiteError, match="must stay inside the cell"):
        load_suite(tiny_suite)


def test_content_hash_changes_with_answer_key(tiny_suite: Path) -> None:
    before = load_suite(tiny_suite).content_hash
    (tiny_suite / "answers").mkdir()
    (tiny_suite / "answers" / "t0.txt").write_text("key")
    assert load_suite(tiny_suite).content_hash != before
