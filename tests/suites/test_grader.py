"""The demo suites' grader (run-eval.py) as a subprocess: perfect, missing, degraded and bad calls."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.csv_rules import apply_rules, read_csv, write_csv

ROOT = Path(__file__).resolve().parents[2]
SUITES = [ROOT / "suites" / name for name in ("clean-train", "clean-val", "clean-test")]
ALL_OPS = ["trim", "headers", "dates", "amounts", "booleans", "emails", "dedupe"]


def task_ids(suite: Path) -> list[str]:
    return [
        json.loads(line)["id"] for line in (suite / "tasks.jsonl").read_text().splitlines() if line.strip()
    ]


def grade(suite: Path, cell: Path, task_id: str) -> subprocess.CompletedProcess:
    env = {
        "SM_SUITE_DIR": str(suite),
        "SM_CELL_DIR": str(cell),
        "SM_TASK_ID": task_id,
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, "run-eval.py", str(cell), task_id],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def scores(suite: Path, cell: Path, task_id: str) -> dict[str, float]:
    proc = grade(suite, cell, task_id)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert all(0.0 <= v <= 1.0 for v in result.values())
    return result


@pytest.mark.parametrize("suite", SUITES, ids=lambda s: s.name)
def test_perfect_output_scores_one_everywhere(tmp_path, suite):
    for task_id in task_ids(suite):
        cell = tmp_path / task_id
        cell.mkdir()
        shutil.copy(suite / "answers" / f"{task_id}.csv", cell / "output.csv")
        result = scores(suite, cell, task_id)
        assert result and set(result.values()) == {1.0}, (task_id, result)


def test_missing_output_scores_zero_on_every_applicable_test(tmp_path):
    suite = SUITES[1]
    task_id = task_ids(suite)[0]
    result = scores(suite, tmp_path, task_id)
    assert {"parses", "headers", "rows", "text"} <= set(result)
    assert set(result.values()) == {0.0}


def test_tests_follow_the_answer_columns(tmp_path):
    for suite in SUITES:
        for task_id in task_ids(suite):
            header = read_csv(suite / "answers" / f"{task_id}.csv")[0]
            result = scores(suite, tmp_path, task_id)
            assert ("dates" in result) == any("date" in h for h in header)
            assert ("emails" in result) == any("email" in h.replace("_", "") for h in header)


def test_titlecase_scores_lower_than_the_clean_output(tmp_path):
    suite = SUITES[1]
    for task_id in task_ids(suite):
        cell = tmp_path / task_id
        cell.mkdir()
        rows = read_csv(suite / "fixtures" / task_id / "input.csv")
        write_csv(cell / "output.csv", apply_rules(rows, ALL_OPS + ["titlecase"]))
        result = scores(suite, cell, task_id)
        assert sum(result.values()) < len(result), (task_id, result)
        assert result["parses"] == 1.0 and result["headers"] == 1.0


def test_repeated_rows_cost_only_the_rows_test(tmp_path):
    suite = SUITES[0]
    task_id = task_ids(suite)[0]
    answer = read_csv(suite / "answers" / f"{task_id}.csv")
    write_csv(tmp_path / "output.csv", [answer[0], answer[1], answer[1], *answer[2:], [""] * len(answer[0])])
    result = scores(suite, tmp_path, task_id)
    assert result["rows"] < 1.0
    assert all(v == 1.0 for name, v in result.items() if name != "rows")


def test_headers_and_values_are_scored_as_fractions(tmp_path):
    suite = SUITES[0]
    task_id = task_ids(suite)[0]
    answer = read_csv(suite / "answers" / f"{task_id}.csv")
    wrong = [list(row) for row in answer]
    wrong[0][0] = "WRONG"
    text_column = 0  # the id column is graded as text
    wrong[1][text_column] = "WRONG"
    write_csv(tmp_path / "output.csv", wrong)
    result = scores(suite, tmp_path, task_id)
    assert result["headers"] == round(1 - 1 / len(answer[0]), 4)
    assert 0.0 < result["text"] < 1.0


def test_unparseable_output_scores_zero(tmp_path):
    suite = SUITES[0]
    task_id = task_ids(suite)[0]
    (tmp_path / "output.csv").write_bytes(b"\xff\xfe\x00garbage")
    assert set(scores(suite, tmp_path, task_id).values()) == {0.0}


def test_unknown_task_is_a_grader_error(tmp_path):
    proc = grade(SUITES[0], tmp_path, "no-such-task")
    assert proc.returncode == 2 and "no-such-task" in proc.stderr and proc.stdout == ""
    assert grade(SUITES[0], tmp_path, "../answers/x").returncode == 2
