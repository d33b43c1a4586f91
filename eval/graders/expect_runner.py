"""The `expectations` runner: grade the task's required output against its declared `expect`/`schema`.

No grader script: the checks run in `expect_main.py`, a separate process under the grader timeout,
given only the output file's path (never the skill, never the cell's other files).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eval.environment import allowed_env
from eval.graders.process import run_helper

if TYPE_CHECKING:
    from eval.jobs import CellJob

MAIN = Path(__file__).resolve().parent / "expect_main.py"


def payload(job: CellJob, work: Path) -> dict:
    task = job.task
    return {"output": str(work / task.required[0]),
            "expect": {e.field: json.loads(e.spec) for e in task.expect},
            "schema": {key: kind for key, kind in task.schema}}


class ExpectationsRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        from eval.graders.script import parse_grades
        stdout, error = await run_helper(
            [sys.executable, str(MAIN)], payload=json.dumps(payload(job, work)).encode(), cwd=job.cell_root,
            env=allowed_env(home=job.cell_root, extra={"SM_TASK_ID": job.task.id}),
            timeout_s=job.settings.grader_timeout_s, log_dir=job.cell_root, what="expectations grader")
        if stdout is None:
            return None, error
        try:
            grades = parse_grades(stdout)
        except ValueError as err:
            return None, str(err)
        notes = json.loads(stdout).get("notes") or {}
        (job.cell_root / "grade.json").write_text(json.dumps({"tests": grades, "notes": notes}, indent=1,
                                                             ensure_ascii=False), encoding="utf-8")
        return grades, ""
