"""The `script` runner: the suite's run-eval(.py) prints one JSON object of test name -> score.

It runs as a helper process (timeout, process-group kill, logs) from a private copy of the suite's folder,
made for this cell and removed after: a grader that writes (a log, a cache) never changes the suite the run
hashed, nor another cell's grading. It gets the cell's working dir and the task id, never the skill.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import tempfile
from pathlib import Path

from eval.environment import allowed_env
from eval.graders.process import run_helper
from eval.jobs import CellJob


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


def private_suite(job: CellJob) -> tuple[Path, list[str]]:
    """A copy of the suite folder beside the cell (its root, argv for its grader): the grader's own folder."""
    root = Path(tempfile.mkdtemp(prefix="grader-suite-", dir=job.cell_root))
    copy = root / job.suite.path.name
    fixtures = job.suite.path / "fixtures"

    def skip(folder: str, names: list[str]) -> set[str]:   # only this task's fixtures: one task's copy, not all
        return {"__pycache__"} & set(names) | ({n for n in names if n != job.task.id}
                                               if Path(folder) == fixtures else set())

    shutil.copytree(job.suite.path, copy, symlinks=True, ignore=skip)
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
