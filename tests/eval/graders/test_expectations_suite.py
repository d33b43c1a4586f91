"""Suites with `runner: expectations`: validated at load (with line numbers), graded per field in cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.evaluate import evaluate
from eval.graders import RUNNER_IDS, get_runner
from eval.suite import RUNNERS, SuiteError, load_suite
from tests.eval.graders.conftest import request, write_suite


def test_registry_and_suite_runners_agree() -> None:
    assert RUNNERS == RUNNER_IDS
    for runner_id in RUNNER_IDS:
        assert callable(get_runner(runner_id).grade)
    with pytest.raises(KeyError, match="not registered"):
        get_runner("nope")


@pytest.mark.parametrize("bad_task, message", [
    ({"expect": {"a": "~near:3"}}, r"tasks.jsonl:2: task 'b': field 'a': unknown operator '~near'"),
    ({"expect": {"a": "~regex:(x)\\1y"}}, r"tasks.jsonl:2: task 'b': field 'a': regex .* is refused"),
    ({"expect": {"a": 1}, "schema": {"a": "int"}}, r"tasks.jsonl:2: .*unknown type 'int'"),
    ({}, r"tasks.jsonl:2: task 'b': runner 'expectations' needs an 'expect' object"),
    ({"expect": {"a": 1}, "required": []}, r"tasks.jsonl:2: .*grades the first 'required' file"),
    ({"expect": {"a": 1}, "expectations": [""]}, r"tasks.jsonl:2: 'expectations' must be a list"),
])
def test_bad_tasks_are_refused_at_load_with_their_line(tmp_path: Path, bad_task: dict, message: str) -> None:
    good = {"id": "a", "prompt": "write out.json", "required": ["out.json"], "expect": {"x": 1}}
    bad = {"id": "b", "prompt": "write out.json", "required": ["out.json"], **bad_task}
    suite = write_suite(tmp_path, [good, bad], {})
    with pytest.raises(SuiteError, match=message):
        load_suite(suite)


def test_an_expectations_suite_needs_no_grader_script(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, [{"id": "a", "prompt": "write out.json", "required": ["out.json"],
                                               "expect": {"x": 1}}], {}))
    assert suite.runner == "expectations" and suite.grader is None
    assert suite.tasks[0].expect[0].field == "x" and suite.tasks[0].line == 1


TASKS = [
    {"id": "json", "prompt": "write out.json", "required": ["out.json"],
     "expect": {"_why": "note", "name": "Ada", "age": "~gte:18", "email": "~regex:@example\\.com$",
                "role": "~in:[admin,user]", "active": "~truthy", "error": "~falsy", "tags.0": "~contains:MATH"},
     "schema": {"name": "string", "age": "integer", "tags": "array"}},
    {"id": "csv", "prompt": "write out.csv", "required": ["out.csv"],
     "expect": {"row_count": 2, "columns": ["id", "amount"], "amount": "~gt:10", "rows.1.amount": "~lt:10"}},
    {"id": "md", "prompt": "write report.md", "required": ["report.md"],
     "expect": {"status": "done", "score": "~gte:0.5", "body": "~contains:summary"}},
    {"id": "none", "prompt": "write missing.json", "required": ["missing.json"], "expect": {"a": "~falsy"}},
]
ANSWERS = {
    "json": json.dumps({"name": "Ada", "age": 17, "email": "ada@example.com", "role": "admin", "active": True,
                        "error": None, "tags": ["math", "poetry"]}),
    "csv": "id,amount\n1,12.50\n2,9.99\n",
    "md": "---\nstatus: done\nscore: 0.5\n---\n# Summary\nAll good.\n",
    "none": "",
}


def test_cells_are_graded_field_by_field(tmp_path: Path, echo_agent: list[str]) -> None:
    suite = write_suite(tmp_path, TASKS, ANSWERS)
    (suite / "fixtures" / "none" / "answer.txt").write_text("")
    cells = {c.task_id: c for c in evaluate(request(suite, tmp_path, echo_agent))}
    assert all(c.status == "ok" for c in cells.values()), [c.error for c in cells.values()]
    assert cells["json"].tests == {"name": 1.0, "age": 0.0, "email": 1.0, "role": 1.0, "active": 1.0,
                                   "error": 1.0, "tags.0": 1.0, "(schema)": 1.0}
    assert cells["csv"].tests == {"row_count": 1.0, "columns": 1.0, "amount": 1.0, "rows.1.amount": 1.0}
    assert cells["md"].tests == {"status": 1.0, "score": 1.0, "body": 1.0}
    # the echo agent writes an empty missing.json: unparseable, so every test scores 0 (not a grader error)
    assert cells["none"].tests == {"a": 0.0} and cells["none"].score == 0.0
    notes = json.loads((Path(cells["json"].cell_dir) / "grade.json").read_text())["notes"]
    assert notes == {"age": "expected ~gte:18; got '17'"}


def test_a_grader_process_past_its_timeout_is_a_grader_error(tmp_path: Path, echo_agent: list[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.graders import expect_runner
    slow = tmp_path / "slow_main.py"
    slow.write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(expect_runner, "MAIN", slow)
    suite = write_suite(tmp_path, TASKS[:1], ANSWERS)
    cells = evaluate(request(suite, tmp_path, echo_agent, grader_timeout_s=1))
    assert cells[0].status == "grader_error"
    assert cells[0].error == "expectations grader timed out after 1 s and was killed"
