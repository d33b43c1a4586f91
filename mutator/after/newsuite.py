"""`run.py new-suite NAME --skill-dir SKILL`: a skill's first train, val and test suites in one command.

The tasks come from the skill's eval set (SKILL/evals/evals.json, or `--from-evals`) when there is one, else
they are placeholders: a task, or a part of one, that holds PLACEHOLDER. A run, a test and `validate-suite`
refuse a suite holding one (exit 2, naming the file and line) until the user has replaced it. The grader is of
the chosen kind: a starter run-eval.py (script), an `expect` block per task (expectations) or expectation
sentences (judge).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from eval.graders.script import grader_env, parse_grades
from eval.suite import Suite, SuiteError, load_suite, name_problem
from mutator.after.importer import (
    EvalsImportError,
    Imported,
    is_trigger_set,
    read_evals,
    read_json,
    seeded_splits,
    to_task,
)

PLACEHOLDER = "[new-suite placeholder]"
GRADERS = ("script", "expectations", "judge")
PLACEHOLDERS = {"train": 3, "val": 2, "test": 2}
ANSWER = {"script": "answer.md", "expectations": "answer.json"}

STARTER_GRADER = '''"""Starter grader written by `run.py new-suite`: replace its tests with your own.

Run as `run-eval.py <cell_dir> <task_id>` in the suite folder; print one JSON object of test name -> score in
[0, 1] (docs/reference/suite-format.md). It scores only what any task can be checked for without knowing it:
that the agent wrote the task's required files, and that they are not empty.
"""
import json
import pathlib
import sys

cell, task_id = pathlib.Path(sys.argv[1]), sys.argv[2]
task = next(t for t in map(json.loads, open("tasks.jsonl", encoding="utf-8")) if t["id"] == task_id)
files = [cell / name for name in task.get("required", [])]
print(json.dumps({
    "wrote_required": float(all(f.is_file() for f in files)),
    "not_empty": float(all(f.is_file() and f.stat().st_size > 0 for f in files)),
}))
'''


class NewSuiteError(SuiteError):
    """new-suite cannot write the suites; the message names the flag or file and the fix (exit 2)."""


def placeholder_problem(suite: Suite) -> str | None:
    """The first line of the suite's tasks.jsonl that still holds a placeholder, as an error, or None."""
    tasks_file = suite.path / "tasks.jsonl"
    for number, line in enumerate(tasks_file.read_text(encoding="utf-8").splitlines(), start=1):
        if PLACEHOLDER in line:
            task = json.loads(line).get("id", "?")
            return (f"{tasks_file}:{number}: task {task!r} is a placeholder `run.py new-suite` wrote; "
                    f"replace every text holding {PLACEHOLDER} with a real task "
                    f"(docs/tutorials/first-suite.md)")
    return None


def refuse_placeholders(suite: Suite) -> None:
    if problem := placeholder_problem(suite):
        raise NewSuiteError(problem)


def placeholder_task(number: int, split: str, grader: str) -> dict:
    task = {"id": f"{split}-example-{number}",
            "prompt": f"{PLACEHOLDER} A request a user of the skill makes, in their words "
                      f"(example {number}).",
            "inputs": [], "required": []}
    return graded(task, grader, [f"{PLACEHOLDER} A sentence a good answer makes true."])


def graded(task: dict, grader: str, sentences: list[str]) -> dict:
    """The task as the chosen grader reads it: expectation sentences (judge), an output file and an `expect`
    block (expectations), or an output file the starter run-eval.py checks (script)."""
    if grader == "judge":
        return {**task, "expectations": sentences}
    answer = ANSWER[grader]
    task = {**task, "prompt": f"{task['prompt']}\n\nWrite your answer to {answer}.", "required": [answer]}
    if grader == "expectations":
        task["expect"] = {"answer": f"{PLACEHOLDER} the value {answer} must hold at this field (or "
                                    f"~contains:WORD, ~gte:N, ...)"}
    return {**task, "expectations": sentences} if grader == "script" else task


def eval_tasks(evals_json: Path, skill_dir: Path, grader: str) -> list[tuple[dict, list]]:
    data = read_json(evals_json)
    if is_trigger_set(data):
        raise NewSuiteError(f"--from-evals {evals_json}: a trigger eval set (query / should_trigger); import "
                            f"it with `run.py import-evals {evals_json} --out suites/NAME`")
    _, evals = read_evals(evals_json, data)
    made = []
    for index, entry in enumerate(evals):
        task, files = to_task(entry, index, skill_dir, evals_json)
        sentences = task.pop("expectations")
        made.append((graded(task, grader, sentences), files))
    return made


def suite_md(name: str, split: str, grader: str, origin: str) -> str:
    how = {"script": "`run-eval.py` grades each cell: the starter checks only that the required files were "
                     "written; replace its tests with your own.",
           "expectations": "Each task's `expect` block is checked against its first `required` file.",
           "judge": "Each task is graded by the judge against its expectation sentences."}[grader]
    return (f"---\nname: {name}\nsplit: {split}\nrunner: {grader}\n---\n\n# {name}\n\n{origin} {how}\n"
            f"See docs/reference/suite-format.md for every field.\n")


def write(path: Path, split: str, grader: str, tasks: list[tuple[dict, list]], origin: str) -> Imported:
    (path / "fixtures").mkdir(parents=True)
    for task, files in tasks:
        (path / "fixtures" / task["id"]).mkdir()
        for source, name in files:
            (path / "fixtures" / task["id"] / name).write_bytes(source.read_bytes())
    (path / "tasks.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t, _ in tasks),
                                      encoding="utf-8")
    if grader == "script":
        (path / "run-eval.py").write_text(STARTER_GRADER, encoding="utf-8")
    (path / "suite.md").write_text(suite_md(path.name, split, grader, origin), encoding="utf-8")
    suite = load_suite(path)   # it must load like any hand-written suite
    return Imported(split, path, tuple(t.id for t in suite.tasks))


def check_names(name: str, skill_dir: Path | None, out: Path) -> None:
    if problem := name_problem(f"{name}-train"):
        raise NewSuiteError(f"new-suite {name}: {problem}; pick a name of letters, digits, '.', '_' and '-'")
    if skill_dir is None or not (skill_dir / "SKILL.md").is_file():
        raise NewSuiteError(f"new-suite needs --skill-dir SKILL, a folder holding the skill's SKILL.md"
                            f"{'' if skill_dir is None else f' ({skill_dir} has none)'}")
    taken = [str(out / f"{name}-{split}") for split in PLACEHOLDERS if (out / f"{name}-{split}").exists()]
    if taken:
        raise NewSuiteError(f"new-suite {name}: {', '.join(taken)} already exist(s); pick another NAME or "
                            f"--out, or remove them")


def new_suite(name: str, skill_dir: Path, out: Path, *, evals_json: Path | None = None,
              grader: str | None = None, seed: int = 0) -> tuple[list[Imported], bool]:
    """Write out/NAME-train, -val and -test; returns them and whether they hold placeholders."""
    check_names(name, skill_dir, out)
    if evals_json is None and (skill_dir / "evals" / "evals.json").is_file():
        evals_json = skill_dir / "evals" / "evals.json"
    if evals_json is not None and not evals_json.is_file():
        raise NewSuiteError(f"--from-evals {evals_json}: no such file")
    grader = grader or ("judge" if evals_json else "script")
    if evals_json is None:
        origin = "Written by `run.py new-suite` with placeholder tasks: replace them before a run."
        splits = {split: [(placeholder_task(i + 1, split, grader), []) for i in range(count)]
                  for split, count in PLACEHOLDERS.items()}
    else:
        try:
            tasks = eval_tasks(evals_json, skill_dir, grader)
            splits = seeded_splits(tasks, seed)
        except EvalsImportError as err:
            raise NewSuiteError(str(err)) from None
        origin = f"Written by `run.py new-suite` from `{evals_json}`, split by seed {seed}."
    made = [write(out / f"{name}-{split}", split, grader, tasks, origin)
            for split, tasks in splits.items() if tasks]
    return made, any(placeholder_problem(load_suite(suite.path)) for suite in made)


def grade_nothing(suite: Suite, task_id: str, cell: Path) -> tuple[dict | None, str]:
    """The suite's grader on a cell where the agent did nothing (only the task's inputs): its scores, or None
    and why they are not valid."""
    env = grader_env(cell, suite.path, cell, task_id)
    try:
        done = subprocess.run([*suite.grader_argv(), str(cell), task_id], cwd=suite.path, env=env,
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "the grader ran past 60 s"
    if done.returncode != 0:
        return None, f"the grader exited {done.returncode}: {done.stderr.strip()[-300:]}"
    try:
        return parse_grades(done.stdout), ""          # what a run accepts from it (eval/graders/script.py)
    except ValueError as err:
        return None, str(err)


def validate_plain(suite: Suite) -> list[tuple[str, float | None, str]]:
    """validate-suite for a suite that is not a Harbor import: no placeholder left, and per task what its
    grader gives a cell where the agent did nothing (script suites; the other runners are checked at load).
    Rows of (task, mean do-nothing score or None, problem)."""
    refuse_placeholders(suite)
    rows = []
    for task in suite.tasks:
        if suite.runner != "script":
            rows.append((task.id, None, ""))
            continue
        with tempfile.TemporaryDirectory(prefix="sm-validate-") as scratch:
            cell = Path(scratch)
            for rel in task.inputs:
                (cell / rel).parent.mkdir(parents=True, exist_ok=True)
                (cell / rel).write_bytes((suite.fixture_dir(task.id) / rel).read_bytes())
            scores, problem = grade_nothing(suite, task.id, cell)
        rows.append((task.id, sum(scores.values()) / len(scores) if scores else None, problem))
    return rows
