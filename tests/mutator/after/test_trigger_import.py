"""skill-creator's trigger eval set ([{"query", "should_trigger"}]) -> trigger suites, each kind split on its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eval.suite import load_suite
from mutator.after.importer import EvalsImportError, import_evals
from tests.conftest import run_cli

QUERIES = [{"query": f"clean the csv export number {i}", "should_trigger": True} for i in range(5)] + \
          [{"query": f"write a short poem about spring {i}", "should_trigger": False} for i in range(5)]


def test_a_trigger_set_becomes_script_graded_trigger_suites(tmp_path: Path) -> None:
    source = tmp_path / "trigger-evals.json"
    source.write_text(json.dumps(QUERIES))
    made = import_evals(source, tmp_path / "trig", seed=3)
    assert [(m.split, len(m.task_ids)) for m in made] == [("train", 6), ("val", 2), ("test", 2)]
    for m in made:
        suite = load_suite(m.path)
        assert suite.runner == "script" and suite.split == m.split
        kinds = sorted(t.trigger for t in suite.tasks)
        assert kinds == [False] * (len(kinds) // 2) + [True] * (len(kinds) // 2)   # both kinds, evenly
        assert {t.prompt for t in suite.tasks} <= {q["query"] for q in QUERIES}
    graded = subprocess.run([sys.executable, str(made[1].path / "run-eval.py"), str(tmp_path), made[1].task_ids[0]],
                            cwd=made[1].path, capture_output=True, text=True, check=True)
    assert json.loads(graded.stdout) == {"finished": 1.0}
    again = import_evals(source, tmp_path / "trig2", seed=3)
    assert [m.task_ids for m in again] == [m.task_ids for m in made]


@pytest.mark.parametrize("entries, message", [
    ([{"query": "x", "should_trigger": "yes"}], r"entry \[0\]: 'should_trigger' must be true or false"),
    ([{"query": "  ", "should_trigger": True}], r"entry \[0\]: needs a non-empty string 'query'"),
    ([{"query": "a", "should_trigger": True}, "b"], r"entry \[1\]: must be an object"),
    ([{"query": "a", "should_trigger": True}, {"query": "b", "should_trigger": False}], r"leave the val split empty"),
])
def test_bad_trigger_sets_are_refused_naming_the_file(tmp_path: Path, entries: list, message: str) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(entries))
    with pytest.raises(EvalsImportError, match=message) as err:
        import_evals(source, tmp_path / "out")
    assert str(source) in str(err.value) and not (tmp_path / "out").exists()


def test_the_cli_exits_2_naming_a_bad_trigger_set(tmp_path: Path) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps([{"query": "clean it", "should_trigger": 1}]))
    done = run_cli("--import-evals", str(source), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and f"error: {source}: entry [0]: 'should_trigger'" in done.stderr
