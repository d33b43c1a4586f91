"""The `script` runner: the suite's run-eval(.py) prints one JSON object of test name -> score.

The process handling (timeout, process-group kill, logs) lives in `eval.runner.run_script_grader`,
unchanged from the original protocol; this is its registry entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eval.runner import CellJob


class ScriptRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        from eval.runner import run_script_grader
        return await run_script_grader(job, work)
