"""`run.py new-suite NAME --skill-dir SKILL` (issue 51): three suites a dry run accepts, from the skill's evals or
with placeholders a run refuses (exit 2, naming the file and line) until they are replaced, and a grader of the
chosen kind; validate-suite checks a suite that is not a Harbor import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.suite import load_suite
from mutator.after.newsuite import PLACEHOLDER, NewSuiteError, new_suite, validate_plain
from tests.conftest import run_cli
from tests.mutator.after.test_importer import make_skill

SPLITS = ("train", "val", "test")


def plain_skill(tmp_path: Path) -> Path:
    skill = tmp_path / "notes"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Summarise meeting notes into action items. "
                                    "Use when asked to summarise notes.\n---\n\n# Notes\n\n- One line per action "
                                    "item, with its owner.\n")
    return skill


def unplaceheld(suites: Path) -> None:
    """What a user does after new-suite: write the tasks (here: drop the placeholder marks)."""
    for tasks in suites.glob("*/tasks.jsonl"):
        tasks.write_text(tasks.read_text().replace(PLACEHOLDER + " ", ""))


def dry_run(suites: Path, name: str, skill: Path, data: Path):
    return run_cli("run", "--suite", str(suites / f"{name}-train"), "--val", str(suites / f"{name}-val"),
                   "--holdout", str(suites / f"{name}-test"), "--skill-dir", str(skill), "--rounds", "1",
                   "--replicates", "1", "--data-dir", str(data), "--sandbox", "none", cwd=data.parent)


def test_without_evals_it_writes_placeholders_a_run_refuses_until_they_are_replaced(tmp_path: Path) -> None:
    skill = plain_skill(tmp_path)
    made = run_cli("new-suite", "notes", "--skill-dir", str(skill), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    suites = tmp_path / "suites"                             # --out's default: ./suites
    for split in SPLITS:
        suite = load_suite(suites / f"notes-{split}")
        assert (suite.split, suite.runner) == (split, "script") and suite.grader.name == "run-eval.py"
        assert len(suite.tasks) == {"train": 3, "val": 2, "test": 2}[split]
    assert "Replace the placeholder tasks" in made.stdout and "validate-suite" in made.stdout
    assert f"--suite {suites / 'notes-train'} --val {suites / 'notes-val'}" in made.stdout

    refused = dry_run(suites, "notes", skill, tmp_path / "data")
    assert refused.returncode == 2
    assert f"{suites / 'notes-train' / 'tasks.jsonl'}:1: task 'train-example-1' is a placeholder" in refused.stderr
    assert not (tmp_path / "data" / "mutator.db").exists()            # refused before anything was written
    checked = run_cli("validate-suite", str(suites / "notes-val"), cwd=tmp_path)
    assert checked.returncode == 2 and "notes-val/tasks.jsonl:1" in checked.stderr

    unplaceheld(suites)
    checked = run_cli("validate-suite", str(suites / "notes-val"), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "val-example-1" in checked.stdout and "2 of 2 tasks valid" in checked.stdout
    ran = dry_run(suites, "notes", skill, tmp_path / "data")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "status finished" in ran.stdout


@pytest.mark.parametrize("grader", ["judge", "script", "expectations"])
def test_from_the_skills_evals_with_each_grader(tmp_path: Path, grader: str) -> None:
    skill = make_skill(tmp_path, n=5)
    made, placeholders = new_suite("csv", skill, tmp_path / "out", grader=grader)
    assert [s.split for s in made] == list(SPLITS) and [len(s.task_ids) for s in made] == [3, 1, 1]
    suites = {s.split: load_suite(s.path) for s in made}
    assert all(s.runner == grader for s in suites.values())
    task = suites["train"].tasks[0]
    assert task.inputs and (suites["train"].fixture_dir(task.id) / task.inputs[0]).is_file()
    if grader == "judge":
        assert not placeholders and "Headers are lowercase snake_case" in task.expectations
    if grader == "script":
        assert not placeholders and task.required == ("answer.md",)
        assert [row[2] for row in validate_plain(suites["val"])] == [""]       # its grader runs and is valid
    if grader == "expectations":   # an evals.json says nothing a field check could test: the user writes it
        assert placeholders and task.required == ("answer.json",)
        with pytest.raises(NewSuiteError, match=r"csv-val/tasks.jsonl:1: task 'eval-\d' is a placeholder"):
            validate_plain(suites["val"])


def test_suites_from_evals_pass_validation_and_a_dry_run(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, n=5)
    made = run_cli("new-suite", "csv", "--skill-dir", str(skill), "--out", str(tmp_path / "s"), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "Replace the placeholder" not in made.stdout
    for split in SPLITS:
        checked = run_cli("validate-suite", str(tmp_path / "s" / f"csv-{split}"), cwd=tmp_path)
        assert checked.returncode == 0 and "ok (runner judge: checked at load)" in checked.stdout
    ran = dry_run(tmp_path / "s", "csv", skill, tmp_path / "data")
    assert ran.returncode == 0, ran.stderr[-2000:]


def test_bad_input_is_refused_naming_the_fix(tmp_path: Path) -> None:
    skill = plain_skill(tmp_path)
    no_skill = run_cli("new-suite", "notes", cwd=tmp_path)
    assert no_skill.returncode == 2 and "new-suite needs --skill-dir SKILL" in no_skill.stderr
    bad_name = run_cli("new-suite", "no/te s", "--skill-dir", str(skill), cwd=tmp_path)
    assert bad_name.returncode == 2 and "new-suite no/te s:" in bad_name.stderr
    missing = run_cli("new-suite", "notes", "--skill-dir", str(skill), "--from-evals", "gone.json", cwd=tmp_path)
    assert missing.returncode == 2 and "--from-evals" in missing.stderr and "gone.json" in missing.stderr
    inside = run_cli("new-suite", "notes", "--skill-dir", str(skill), "--out", str(skill / "s"), cwd=tmp_path)
    assert inside.returncode == 2 and "inside the skill" in inside.stderr
    assert not (tmp_path / "suites").exists() and not (skill / "s").exists()       # nothing written
    assert run_cli("new-suite", "notes", "--skill-dir", str(skill), cwd=tmp_path).returncode == 0
    before = (tmp_path / "suites" / "notes-val" / "tasks.jsonl").read_text()
    again = run_cli("new-suite", "notes", "--skill-dir", str(skill), cwd=tmp_path)
    assert again.returncode == 2 and "already exist" in again.stderr
    assert (tmp_path / "suites" / "notes-val" / "tasks.jsonl").read_text() == before   # nothing lost
    trigger = tmp_path / "trigger.json"
    trigger.write_text(json.dumps([{"query": "a", "should_trigger": True}, {"query": "b", "should_trigger": False}]))
    refused = run_cli("new-suite", "t", "--skill-dir", str(skill), "--from-evals", str(trigger), cwd=tmp_path)
    assert refused.returncode == 2 and "import-evals" in refused.stderr


def test_validate_suite_flags_a_grader_that_prints_no_scores(tmp_path: Path) -> None:
    skill = plain_skill(tmp_path)
    new_suite("notes", skill, tmp_path / "s")
    unplaceheld(tmp_path / "s")
    (tmp_path / "s" / "notes-val" / "run-eval.py").write_text("print('looks fine')\n")
    checked = run_cli("validate-suite", str(tmp_path / "s" / "notes-val"), cwd=tmp_path)
    assert checked.returncode == 1
    assert "INVALID  grader output is not JSON" in checked.stdout and "fix the grader for" in checked.stdout
