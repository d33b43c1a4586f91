"""Executors: where an evaluation's cells run. `local` (the default) runs each cell as a subprocess of this
machine; `ray` sends each cell, as a self-contained bundle, to a Ray cluster. Same cells, same results.

An executor runs one cell or re-grades one; bounded concurrency, the budget's say before each start and the
infrastructure retries stay in eval/evaluate.py for every executor alike. Never imports `mutator/`.
Adding one = one file + one line in REGISTRY.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

from eval.errors import EXIT_INCOMPLETE, SkillMutatorError, Stop

if TYPE_CHECKING:
    from eval.jobs import CellJob, CellResult

REGISTRY = {
    "local": "eval.executors.local:LocalExecutor",
    "ray": "eval.executors.ray:RayExecutor",
}
EXECUTOR_IDS = tuple(REGISTRY)


class ExecutorError(SkillMutatorError, RuntimeError):
    """An executor cannot be used (e.g. ray is not installed, or the cluster cannot be reached); the message
    says the fix."""


class ExecutorLost(Stop, RuntimeError):
    """Where cells run went away mid-evaluation (a Ray cluster's head): the cells in flight are stored as
    infra_error, no other starts, and the run stops (exit 8); the same command resumes once it is back."""
    exit_code = EXIT_INCOMPLETE


class Executor(Protocol):
    id: str
    lost: str   # "" while cells can run; once where they run is gone, why (one line naming it)

    async def run_cell(self, job: CellJob) -> CellResult:
        """Stage, run the agent, grade; the result's logs are in `job.cell_root` on
        this machine when it returns."""
        ...

    async def regrade_cell(self, job: CellJob) -> CellResult | None:
        """Grade again a grader_error cell from its kept working dir; None when there is nothing to grade."""
        ...


def get_executor(executor_id: str = "local", **options: Any) -> Executor:
    """An executor by id; `options` go to its constructor (ray: address, resources, max_retries)."""
    if executor_id not in REGISTRY:
        raise ExecutorError(f"unknown executor {executor_id!r}; choose one of: {', '.join(EXECUTOR_IDS)}")
    module, _, name = REGISTRY[executor_id].partition(":")
    return getattr(importlib.import_module(module), name)(**options)
