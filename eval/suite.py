"""Load and validate a suite directory: suite.md, tasks.jsonl, the grader and fixtures/.

Every problem raises `SuiteError` naming the file (and line) and the fix, before any cell runs.
The suite's answer key never leaves the suite dir: only the task's declared inputs are copied out.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from eval.errors import SkillMutatorError
from eval.graders.expectations import Expectation, ExpectError, parse_expect, parse_schema
from eval.snapshot import hash_tree
from eval.suite_parts import agent_hash, needs_site

# (suite content hash, grader path in it) -> whether the grader needs `site` (needs_site), worked out once
_site: dict[tuple[str, str], bool] = {}

NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
DEVICE_NAMES = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                *(f"LPT{i}" for i in range(1, 10))}
SPLITS = ("train", "val", "test")
RUNNERS = ("script", "expectations", "judge", "harbor")   # ids of eval/graders REGISTRY
GRADER_NAMES = ("run-eval.py", "run-eval")


class SuiteError(SkillMutatorError, ValueError):
    """A suite on disk is malformed; the message names the file, the line and the fix."""


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    inputs: tuple[str, ...]
    required: tuple[str, ...]
    expect: tuple[Expectation, ...] = ()          # runner expectations: field -> literal or ~operator
    schema: tuple[tuple[str, str], ...] = ()      # optional structural check: (field, type)
    expectations: tuple[str, ...] = ()            # runner judge: what a good answer does, as sentences
    line: int = 0                                 # the task's line in tasks.jsonl
    trigger: bool = True                          # false: a near-miss request, the skill should NOT be loaded


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    split: str
    runner: str
    tasks: tuple[Task, ...]
    grader: Path | None                           # the run-eval script; None for expectations/judge suites
    # the whole folder: what a grade rests on (eval/suite_parts.py)
    content_hash: str
    meta: tuple[tuple[str, str], ...] = ()        # every suite.md frontmatter field, for runner options
    agent_hash: str = ""                          # what an agent in a cell sees: what its work rests on

    def option(self, key: str, default: str | float | None = None) -> str | float | None:
        return dict(self.meta).get(key, default)

    def fixture_dir(self, task_id: str) -> Path:
        return self.path / "fixtures" / task_id

    def grader_argv(self) -> list[str]:
        """A run-eval.py under the harness's Python, with -S when it needs nothing `site` adds (a
        standard-library
        grader: ~20 ms less per cell, eval/suite_parts.py::needs_site); an executable run-eval as itself."""
        if self.grader.suffix != ".py":
            return [str(self.grader)]
        inside = self.grader.is_relative_to(self.path)
        key = (self.content_hash, self.grader.relative_to(self.path).as_posix()) if inside else None
        site = _site.get(key) if key else None
        if site is None:
            site = needs_site(self.grader.read_text(encoding="utf-8", errors="replace"))
            if key:   # the content hash covers every file of the folder: an edited grader is another key
                _site[key] = site
        return [sys.executable, *(() if site else ("-S",)), str(self.grader)]


def name_problem(name: str) -> str | None:
    """Why `name` is not a valid suite or task name, or None when it is."""
    if not NAME_RE.match(name):
        return "use only letters, digits, '.', '_' and '-'"
    if "__" in name:
        return "'__' is reserved (cell dirs use it as a separator)"
    if name.endswith((".", " ")):
        return "a name may not end with '.' or a space"
    if name.split(".")[0].upper() in DEVICE_NAMES:
        return "reserved device name"
    return None


def parse_frontmatter(text: str, where: Path) -> dict[str, str]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SuiteError(f"{where}: must start with a '---' frontmatter block (name, split, runner)")
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return fields
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise SuiteError(f"{where}:{number}: expected 'key: value', got {line!r}")
        fields[key.strip()] = value.strip().strip("'\"")
    raise SuiteError(f"{where}: frontmatter is not closed with '---'")


def _task(raw: str, number: int, where: Path) -> Task:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        raise SuiteError(f"{where}:{number}: not valid JSON ({err.msg}); "
                         "each line must be one task object") from None
    if not isinstance(obj, dict):
        raise SuiteError(f"{where}:{number}: a task must be a JSON object")
    for key in ("id", "prompt"):
        if not isinstance(obj.get(key), str) or not obj[key].strip():
            raise SuiteError(f"{where}:{number}: task needs a non-empty string {key!r}")
    problem = name_problem(obj["id"])
    if problem:
        raise SuiteError(f"{where}:{number}: task id {obj['id']!r} is invalid: {problem}")
    lists = {}
    for key in ("inputs", "required"):
        value = obj.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SuiteError(f"{where}:{number}: {key!r} must be a list of relative file names")
        for rel in value:
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise SuiteError(f"{where}:{number}: {key} entry {rel!r} must stay inside the cell")
        lists[key] = tuple(value)
    try:
        expect = parse_expect(obj["expect"]) if "expect" in obj else ()
        schema = parse_schema(obj["schema"]) if "schema" in obj else ()
    except ExpectError as err:
        raise SuiteError(f"{where}:{number}: task {obj['id']!r}: {err}") from None
    sentences = obj.get("expectations", [])
    if not isinstance(sentences, list) or not all(isinstance(v, str) and v.strip() for v in sentences):
        raise SuiteError(f"{where}:{number}: 'expectations' must be a list of non-empty sentences")
    trigger = obj.get("trigger", True)
    if not isinstance(trigger, bool):
        raise SuiteError(f"{where}:{number}: 'trigger' must be true (the skill should be used, the default) "
                         f"or false (a near-miss request: it should not), got {trigger!r}")
    return Task(obj["id"], obj["prompt"], lists["inputs"], lists["required"], expect, schema,
                tuple(sentences), number, trigger)


def _runner_problem(runner: str, task: Task) -> str | None:
    """What a task lacks for its suite's runner, or None."""
    if runner == "expectations":
        if not task.expect and not task.schema:
            return ("runner 'expectations' needs an 'expect' object "
                    "(field -> value or '~operator') or a 'schema'")
        if not task.required:
            return "runner 'expectations' grades the first 'required' file; list the output file there"
    if runner == "judge" and not task.expectations and not task.required:
        return "runner 'judge' needs 'expectations' sentences or a 'required' output to judge"
    return None


def load_suite(path: Path) -> Suite:
    path = Path(path)
    if not path.is_dir():
        raise SuiteError(f"{path}: suite directory not found; pass a suite name from config.json 'suites' "
                         f"or a path to a folder holding suite.md and tasks.jsonl")
    problem = name_problem(path.name)
    if problem:
        raise SuiteError(f"{path}: suite folder name {path.name!r} is invalid: {problem}; rename the folder")
    suite_md = path / "suite.md"
    if not suite_md.is_file():
        raise SuiteError(f"{suite_md}: missing; create it with frontmatter name/split/runner")
    meta = parse_frontmatter(suite_md.read_text(encoding="utf-8"), suite_md)
    name = meta.get("name", "")
    if name != path.name:
        raise SuiteError(f"{suite_md}: frontmatter name {name!r} must equal the folder name {path.name!r}")
    split = meta.get("split", "")
    if split not in SPLITS:
        raise SuiteError(f"{suite_md}: split {split!r} must be one of {', '.join(SPLITS)}")
    runner = meta.get("runner", "script")
    if runner not in RUNNERS:
        raise SuiteError(f"{suite_md}: runner {runner!r} is not available; use one of {', '.join(RUNNERS)}")
    if runner == "judge":
        from eval.graders.judge import JudgeError, rubric_from_options
        try:
            rubric_from_options(meta)
        except JudgeError as err:
            raise SuiteError(f"{suite_md}: {err}") from None
    graders = [path / g for g in GRADER_NAMES if (path / g).is_file()]
    grader = graders[0] if graders else None
    if runner == "script" and grader is None:
        raise SuiteError(f"{path}: no grader; add run-eval.py (or an executable run-eval) that prints "
                         f"one JSON object of test name -> score for a cell dir")
    if runner == "script" and grader.suffix != ".py" and not os.access(grader, os.X_OK):
        raise SuiteError(f"{grader}: not executable; chmod +x it or name it run-eval.py")
    tasks_file = path / "tasks.jsonl"
    if not tasks_file.is_file():
        raise SuiteError(f"{tasks_file}: missing; one task per line: "
                         f'{{"id","prompt","inputs":[...],"required":[...]}}')
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(tasks_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        task = _task(raw, number, tasks_file)
        folded = task.id.lower()
        if folded in seen:
            raise SuiteError(f"{tasks_file}:{number}: task id {task.id!r} duplicates line {seen[folded]} "
                             f"(ids must differ by more than letter case)")
        seen[folded] = number
        problem = _runner_problem(runner, task)
        if problem:
            raise SuiteError(f"{tasks_file}:{number}: task {task.id!r}: {problem}")
        for rel in task.inputs:
            if (path / "fixtures" / task.id / rel).is_dir():
                raise SuiteError(f"{tasks_file}:{number}: input {rel!r} of task {task.id!r} is a folder "
                                 f"(fixtures/{task.id}/{rel}); inputs must be files: "
                                 "list each file of it in 'inputs'")
            if not (path / "fixtures" / task.id / rel).is_file():
                raise SuiteError(f"{tasks_file}:{number}: input {rel!r} of task {task.id!r} not found at "
                                 f"fixtures/{task.id}/{rel}; add the file or drop it from 'inputs'")
        tasks.append(task)
    if runner == "harbor":
        from eval.harbor import check_suite_tasks
        check_suite_tasks(path, [t.id for t in tasks])   # harbor/<id>/ of every task, read like a Harbor task
    if not tasks:
        raise SuiteError(f"{tasks_file}: holds no tasks")
    return Suite(name, path.resolve(), split, runner, tuple(tasks), grader.resolve() if grader else None,
                 suite_hash(path), tuple(sorted(meta.items())), agent_hash(path, name, meta))


def check_unchanged(suite: Suite) -> None:
    """Tamper evidence: the suite on disk must still be the one the run loaded (an edited answer key, or a
    grader writing into its own folder, would silently change what every later score means)."""
    if suite_hash(suite.path) != suite.content_hash:
        raise SuiteError(f"suite {suite.name} changed on disk while the run was using it ({suite.path}); "
                         "restore it and re-run the same command, or re-run it on the changed suite (a "
                         "change to grading only resumes the run and re-grades its cells; one to what the "
                         "agent sees starts a new run)")


def suite_hash(path: Path) -> str:
    """The suite's content hash: everything in the suite dir (tasks, fixtures, grader, answer key)."""
    return hashlib.sha256(hash_tree(path).encode()).hexdigest()[:16]
