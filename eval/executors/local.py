"""The `local` executor: every cell is a subprocess of this machine (eval/runner.py), today's behaviour."""

from __future__ import annotations

from dataclasses import replace

from eval.jobs import CellJob, CellResult
from eval.runner import regrade_cell, run_cell

NODE = "local"


class LocalExecutor:
    id = "local"
    lost = ""   # this machine does not go away under its own cells

    async def run_cell(self, job: CellJob) -> CellResult:
        result = await run_cell(job)
        return replace(result, extra={**result.extra, "node": NODE})

    async def regrade_cell(self, job: CellJob) -> CellResult | None:
        result = await regrade_cell(job)
        return None if result is None else replace(result, extra={**result.extra, "node": NODE})
