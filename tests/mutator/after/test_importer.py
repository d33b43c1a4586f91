"""skill-creator evals.json -> judge-graded train/val/test suites, split by seed; and both new runners in dry runs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from eval.suite import load_suite
from mutator.after.importer import EvalsImportError, import_evals, split_counts
from tests.conftest import ROOT, run_cli

CSVS = sorted((ROOT / "suites" / "clean-val" / "fixtures").glob("*/input.csv"))


def make_skill(tmp_path: Path, n: int = 8, **overrides) -> Path:
    """The demo seed skill with a skill-creator eval set of `n` CSV-cleaning evals beside it."""
    skill = tmp_path / "csv-clean"
    shutil.copytree(ROOT / "suites" / "csv-clean", skill)
    files = skill / "evals" / "files"
    files.mkdir(parents=True)
    evals = []
    for i, source in enumerate(CSVS[:n]):
        name = f"{source.parent.name}.csv"
        shutil.copyfile(source, files / name)
        evals.append({"id": i + 1, "prompt": f"Clean {name} and write the cleaned table to clean.csv.",
                      "expected_output": "a tidy clean.csv", "files": [f"evals/files/{name}"],
                      "expectations": ["Headers are lowercase snake_case", "Dates use YYYY-MM-DD"], **overrides})
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "csv-clean", "evals": evals}))
    return skill


@pytest.mark.parametrize("n, counts", [
    (2, {"train": 1, "val": 1, "test": 0}), (3, {"train": 1, "val": 1, "test": 1}),
    (5, {"train": 3, "val": 1, "test": 1}), (8, {"train": 4, "val": 2, "test": 2}),
    (10, {"train": 6, "val": 2, "test": 2}),
])
def test_split_sizes(n: int, counts: dict) -> None:
    assert split_counts(n) == counts


def test_one_eval_cannot_be_split() -> None:
    with pytest.raises(EvalsImportError, match="at least 2 evals"):
        split_counts(1)


def test_import_is_deterministic_by_seed(tmp_path: Path) -> None:
    skill = make_skill(tmp_path)
    evals_json = skill / "evals" / "evals.json"
    first = import_evals(evals_json, tmp_path / "a" / "imp", seed=1)
    again = import_evals(evals_json, tmp_path / "b" / "imp", seed=1)
    other = import_evals(evals_json, tmp_path / "c" / "imp", seed=2)
    assert [(s.split, s.task_ids) for s in first] == [(s.split, s.task_ids) for s in again]
    assert [s.task_ids for s in first] != [s.task_ids for s in other]
    assert sorted(t for s in first for t in s.task_ids) == sorted(f"eval-{i}" for i in range(1, 9))
    suite = load_suite(first[1].path)
    assert suite.name == "imp-val" and suite.split == "val" and suite.runner == "judge" and suite.grader is None
    task = suite.tasks[0]
    assert task.expectations == ("Expected result: a tidy clean.csv", "Headers are lowercase snake_case",
                                 "Dates use YYYY-MM-DD")
    assert task.inputs and (suite.fixture_dir(task.id) / task.inputs[0]).is_file()
    assert "Input files in your working directory" in task.prompt


@pytest.mark.parametrize("overrides, message", [
    ({"files": ["../outside.csv"]}, "is not a file inside the skill folder"),
    ({"expectations": [], "expected_output": ""}, "needs 'expectations'"),
    ({"prompt": " "}, "needs a non-empty 'prompt'"),
    ({"id": 7}, "eval ids repeat"),
])
def test_bad_eval_sets_are_refused(tmp_path: Path, overrides: dict, message: str) -> None:
    (tmp_path / "outside.csv").write_text("a\n1\n")
    skill = make_skill(tmp_path, n=3, **overrides)
    with pytest.raises(EvalsImportError, match=message):
        import_evals(skill / "evals" / "evals.json", tmp_path / "out" / "imp")


def test_an_existing_import_is_not_overwritten(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, n=3)
    import_evals(skill / "evals" / "evals.json", tmp_path / "imp")
    with pytest.raises(EvalsImportError, match="already exists and is not empty"):
        import_evals(skill / "evals" / "evals.json", tmp_path / "imp")


def verdicts(data_dir: Path) -> list[str]:
    db = sqlite3.connect(data_dir / "mutator.db")
    return [r[0] for r in db.execute("select verdict from attempts where round > 0 order by round, sibling")]


def test_an_imported_eval_set_runs_a_dry_run(tmp_path: Path) -> None:
    skill = make_skill(tmp_path)
    out = tmp_path / "suites" / "imp"
    result = run_cli("--import-evals", str(skill / "evals" / "evals.json"), "--out", str(out), "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert "imp-train" in result.stdout and "Dry run: python run.py" in result.stdout
    assert ("warning: val suite imp-val has 2 task(s): a gate verdict on fewer than 5 tasks is mostly noise. Add "
            f"evals to {skill / 'evals' / 'evals.json'} (8 now; about 25 give val and test 5 each)") in result.stderr
    assert "warning: test suite imp-test has 2 task(s): a test report on fewer than 5 tasks" in result.stderr
    assert "train suite" not in result.stderr
    seed = tmp_path / "seed" / "csv-clean"          # the seed without its evals/ (the mutator must not see them)
    shutil.copytree(skill, seed, ignore=shutil.ignore_patterns("evals"))
    data = tmp_path / "data"
    run = run_cli("--suite", str(out / "imp-train"), "--val", str(out / "imp-val"), "--skill-dir", str(seed),
                  "--rounds", "2", "--replicates", "1", "--data-dir", str(data))
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(verdicts(data)) == 2
    db = sqlite3.connect(data / "mutator.db")
    names = {r[0] for r in db.execute("select distinct name from tests")}
    assert names == {"rubric"}
    assert list((data / "evals" / "judge-cache").glob("*.json"))


def test_the_demo_runs_with_the_expectations_variant_as_val(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run = run_cli("--suite", "clean-train", "--val", str(ROOT / "suites" / "clean-val-expect"), "--rounds", "2",
                  "--replicates", "1", "--data-dir", str(data))
    assert run.returncode == 0, run.stderr[-3000:]
    assert verdicts(data) == ["KEEP", "KEEP"]
    db = sqlite3.connect(data / "mutator.db")
    names = {r[0] for r in db.execute(
        "select distinct t.name from tests t join cells c on c.id = t.cell_id join evaluations e "
        "on e.id = c.evaluation_id where e.suite = 'clean-val-expect'")}
    assert {"row_count", "columns", "order_date", "rows.7.order_date"} <= names


def test_judge_spend_is_counted_everywhere_and_health_checks_ask_the_judge_afresh(tmp_path: Path) -> None:
    from mutator.after.spend import view
    from mutator.store.db import connect_readonly
    skill = make_skill(tmp_path)
    out = tmp_path / "suites" / "imp"
    assert run_cli("--import-evals", str(skill / "evals" / "evals.json"), "--out", str(out), "--seed", "3").returncode == 0
    seed = tmp_path / "seed" / "csv-clean"
    shutil.copytree(skill, seed, ignore=shutil.ignore_patterns("evals"))
    data = tmp_path / "data"
    run = run_cli("--suite", str(out / "imp-train"), "--val", str(out / "imp-val"), "--skill-dir", str(seed),
                  "--rounds", "1", "--replicates", "1", "--data-dir", str(data))
    assert run.returncode == 0, run.stderr[-3000:]
    db = connect_readonly(data / "mutator.db")
    one = lambda sql: next(iter(db.query(sql)))["v"] or 0.0  # noqa: E731
    cells, judge = one("select sum(cost_usd + prior_cost_usd) as v from cells"), one("select sum(grader_cost_usd) as v from cells")
    mutator = one("select sum(mutator_cost_usd) as v from attempts")
    assert judge > 0 and cells > 0 and mutator > 0
    assert view(db)["all_time"] == pytest.approx(cells + judge + mutator, rel=1e-9)
    assert one("select cost_usd as v from runs") == pytest.approx(cells + judge + mutator, rel=1e-9)
    assert {m["model"] for m in view(db)["models"]} >= {"judge"}
    for _ in range(2):   # the same check twice: each one asks the judge again (a fresh salt, a fresh judgement)
        check = run_cli("--check", str(seed), "--suite", str(out / "imp-val"), "--data-dir", str(data))
        assert check.returncode in (0, 6), check.stderr[-2000:]
    fresh = [r["v"] for r in connect_readonly(data / "mutator.db").query(
        "select sum(c.grader_cost_usd) as v from cells c join evaluations e on e.id = c.evaluation_id "
        "where e.contract like '%check-%' group by e.id order by e.id")]
    assert len(fresh) == 2 and all(v > 0 for v in fresh)


def test_the_judge_sees_the_file_the_agent_wrote_for_an_imported_task(tmp_path: Path) -> None:
    """An imported eval declares no output file ('required' is empty): the judge is shown every file the agent
    created in its working dir (never the inputs, never the skill)."""
    from types import SimpleNamespace

    from eval.graders.judge import user_message
    from eval.graders.judge_runner import read_attempt
    made = import_evals(make_skill(tmp_path, n=3) / "evals" / "evals.json", tmp_path / "s" / "imp")
    suite = load_suite(made[0].path)
    task = suite.tasks[0]
    assert task.required == () and task.inputs
    work = tmp_path / "cell" / "work"
    (work / ".claude" / "skills" / "csv-clean").mkdir(parents=True)
    (work / ".claude" / "skills" / "csv-clean" / "SKILL.md").write_text("the skill itself")
    for rel in task.inputs:
        shutil.copyfile(suite.path / "fixtures" / task.id / rel, work / rel)
    (work / "clean.csv").write_text("order_id,total\n1,2.50\n")
    attempt = read_attempt(SimpleNamespace(task=task, cell_root=tmp_path / "cell"), work)
    assert [name for name, _ in attempt.outputs] == ["clean.csv"]
    message = user_message(attempt)
    assert "order_id,total" in message and "the skill itself" not in message
