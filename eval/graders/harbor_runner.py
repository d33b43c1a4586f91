"""The `harbor` runner: an imported Harbor task's verifier (tests/test.sh) scores the cell in the task's own
container (eval/harbor_run.py); its reward is the cell's test `reward`.

The container engine is the first of podman and docker that works here (the agent itself runs as the run's
`--sandbox` says, on the host, in the cell dir that holds the environment's files). An image that fails to build, or no engine at all, is a grader error naming why, never a score.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from eval.harbor import HarborError
from eval.harbor_run import image_of, suite_task, verify
from eval.jobs import CellJob
from sandbox import SandboxError
from sandbox.container import ContainerEngine, get_engine

_ENGINES: dict[str, ContainerEngine] = {}


def engine_for(engine_id: str = "auto") -> ContainerEngine:
    """The checked engine, checked once per process."""
    if engine_id not in _ENGINES:
        _ENGINES[engine_id] = get_engine(engine_id)
    return _ENGINES[engine_id]


def _grade(job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
    try:
        engine = engine_for()
        task = suite_task(job.suite.path, job.task.id)
        image = image_of(engine, task)
    except (SandboxError, HarborError) as err:   # BuildError is a SandboxError: its message holds the log tail
        return None, f"harbor verifier could not run: {err}"
    return verify(engine, task, image, work, job.cell_root / "verifier")


class HarborRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        return await asyncio.to_thread(_grade, job, work)
