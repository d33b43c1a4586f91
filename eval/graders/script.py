"""The `script` runner: the suite's run-eval(.py) prints one JSON object of test name -> score.

It runs as a helper process (timeout, process-group kill, logs) from a private copy of the suite's folder,
made for this cell and removed after: a grader that writes (a log, a cache) never changes the suite the run
hashed, nor another cell's grading. It gets the cell's working dir and the task id, never the skill.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import shutil
import stat
import tempfile
from pathlib import Path

from eval.environment import allowed_env
from eval.graders.process import run_helper
from eval.jobs import CellJob
from eval.snapshot import copy_file


class ScriptRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        return await run_script_grader(job, work)


def parse_grades(stdout: str) -> dict[str, float]:
    """The grader's stdout must be one JSON object of test name -> score in [0, 1]."""
    text = stdout.strip()
    if not text:
        raise ValueError("grader printed nothing; it must print one JSON object of test name -> score")
    try:
        obj = json.loads(text.splitlines()[-1]) if not text.startswith("{") else json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"grader output is not JSON ({err.msg}): {text[:200]!r}") from None
    if isinstance(obj, dict) and isinstance(obj.get("tests"), dict):
        obj = obj["tests"]
    if not isinstance(obj, dict) or not obj:
        raise ValueError("grader output must be a non-empty JSON object of test name -> score")
    grades: dict[str, float] = {}
    for name, value in obj.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0 <= value <= 1:
            raise ValueError(f"grader test {name!r} scored {value!r}; scores must be numbers in [0, 1]")
        grades[str(name)] = float(value)
    return grades


@functools.lru_cache(maxsize=256)
def _listing(suite_dir: Path, content_hash: str, task_id: str) -> tuple[tuple[str, str, int], ...]:
    """What a grader's copy holds, walked once per suite version and task: (kind, relative path, mode or 0)."""
    found: list[tuple[str, str, int]] = []
    for folder, dirs, files in os.walk(suite_dir):
        here = Path(folder)
        # only this task's fixtures: one task's copy, not all
        dirs[:] = [d for d in dirs if d != "__pycache__" and (here != suite_dir / "fixtures" or d == task_id)]
        for name in dirs + [f for f in files if f != "__pycache__"]:
            path, rel = here / name, str((here / name).relative_to(suite_dir))
            if path.is_symlink():   # copied as the link, as copytree(symlinks=True) did
                found.append(("link", rel, 0))
            elif path.is_dir():
                found.append(("dir", rel, 0))
            else:
                found.append(("file", rel, stat.S_IMODE(path.stat().st_mode)))
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
    return tuple(sorted(found, key=lambda entry: entry[1]))   # a folder before what it holds


def private_suite(job: CellJob) -> tuple[Path, list[str]]:
    """A copy of the suite folder beside the cell (its root, argv for its grader): the grader's own folder."""
    root = Path(tempfile.mkdtemp(prefix="grader-suite-", dir=job.cell_root))
    copy = root / job.suite.path.name
    copy.mkdir()
    source, target = f"{job.suite.path}/", f"{copy}/"   # strings: a cell copies a dozen files, pathlib costs more
    for kind, rel, mode in _listing(job.suite.path, job.suite.content_hash, job.task.id):
        if kind == "dir":
            os.mkdir(target + rel)
        elif kind == "link":
            os.symlink(os.readlink(source + rel), target + rel)
        else:
            copy_file(source + rel, target + rel, mode)
    grader = job.suite.grader
    if grader is not None and grader.is_relative_to(job.suite.path):
        grader = copy / grader.relative_to(job.suite.path)
    return root, dataclasses.replace(job.suite, path=copy, grader=grader).grader_argv()


async def run_script_grader(job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
    root, argv = private_suite(job)
    suite_dir = root / job.suite.path.name
    try:
        env = allowed_env(home=job.cell_root, extra={"SM_SUITE_DIR": str(suite_dir), "SM_CELL_DIR": str(work),
                                                     "SM_TASK_ID": job.task.id})
        stdout, error = await run_helper([*argv, str(work), job.task.id], payload=b"",
                                         cwd=suite_dir, env=env, timeout_s=job.settings.grader_timeout_s,
                                         log_dir=job.cell_root, what="grader")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if stdout is None:
        return None, error
    try:
        return parse_grades(stdout), ""
    except ValueError as err:
        err_text = (job.cell_root / "grade.stderr").read_text(encoding="utf-8").strip()
        return None, f"{err}{'; stderr: ' + err_text if err_text else ''}"
