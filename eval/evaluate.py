"""evaluate(skill, suite, contract) -> cells: the stateless evaluation core.

It knows nothing of runs, attempts or the database: the caller says which cells are already done
(`skip`) and receives each finished cell through `on_cell` the moment it is graded, so a crash
loses only the cells still running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from eval.breaker import Breaker
from eval.cells import CellSpec, Contract, enumerate_cells
from eval.cost import Price
from eval.executors import Executor, ExecutorLost
from eval.executors.local import LocalExecutor
from eval.jobs import CellJob, CellResult, CellSettings
from eval.scheduler import pump
from eval.suite import Suite, check_unchanged


@dataclass(frozen=True)
class EvalRequest:
    skill_dir: Path | None     # None = bare (no skill), e.g. the solve phase
    skill_name: str
    suite: Suite
    contract: Contract
    key: str                   # evaluation key (genome + suite + contract), seeds every cell
    cells_root: Path
    price: Price
    concurrency: int
    # how each cell is run (agent, launcher, caps, retries), carried whole to each job
    settings: CellSettings


def pending_cells(request: EvalRequest, skip: set[tuple[str, int]]) -> list[CellSpec]:
    return [spec for spec in enumerate_cells(request.suite, request.contract, request.key)
            if (spec.task_id, spec.replicate) not in skip]


async def evaluate_async(request: EvalRequest, *, skip: set[tuple[str, int]] = frozenset(),
                         on_cell: Callable[[CellResult], None] = lambda cell: None,
                         regrade: set[tuple[str, int]] = frozenset(),
                         reuse: dict[tuple[str, int], Path] | None = None, limit: int | None = None,
                         may_start: Callable[[], bool] | None = None,
                         executor: Executor | None = None,
                         breaker: Breaker | None = None) -> list[CellResult]:
    """Run every cell not in `skip`; cells in `regrade` are graded again from their kept working dir
    (run afresh when it is gone); cells in `reuse` grade the kept agent run in the cell dir it names (another
    evaluation's, same agent key), run afresh when it cannot be graded. An infra_error cell is retried
    `infra_retries` times; the count is on its result (with the executor's own retries, e.g. Ray's for a lost
    node). `limit` runs only the first N pending cells (a budget's pilot). `executor` says where cells run
    (eval/executors; local by default): once it is lost (a Ray head gone), no further cell starts or is
    retried, and ExecutorLost is raised after the cells in flight are reported (as infra_error). `breaker`
    (eval/breaker.py) counts infra_error tries in a row across evaluations: once open, likewise no cell starts
    or is retried, and BreakerOpen is raised once the cells in flight are reported."""
    executor = executor or LocalExecutor()
    breaker = breaker or Breaker(limit=2**62)   # none given: never opens (every retry as configured)
    if breaker.open:
        raise breaker.stop()
    check_unchanged(request.suite)  # recomputed before every evaluation: a changed suite stops the run
    tasks = {task.id: task for task in request.suite.tasks}

    reuse = reuse or {}

    def job(spec: CellSpec) -> CellJob:
        return CellJob(
            spec=spec, task=tasks[spec.task_id], suite=request.suite, skill_dir=request.skill_dir,
            skill_name=request.skill_name, contract=request.contract,
            cell_root=request.cells_root / spec.name, price=request.price, settings=request.settings,
            reuse=reuse.get((spec.task_id, spec.replicate)))

    async def work(spec: CellSpec) -> CellResult:
        if (spec.task_id, spec.replicate) in regrade or (spec.task_id, spec.replicate) in reuse:
            regraded = await executor.regrade_cell(job(spec))
            if regraded is not None:
                return regraded
        tries, earlier = 0, 0   # our re-runs; the executor's own retries inside the earlier tries
        while True:
            result = await executor.run_cell(job(spec))
            breaker.record(result.status, result.error)
            settled = replace(result, retries=result.retries + earlier + tries)
            if result.status != "infra_error" or tries >= request.settings.infra_retries or executor.lost \
                    or breaker.open:
                return settled
            earlier += result.retries
            tries += 1
            await asyncio.sleep(request.settings.infra_backoff_s * tries)
            if breaker.open:   # opened by other cells meanwhile: this one waits for the resume too
                return settled

    def startable() -> bool:
        return not executor.lost and not breaker.open and (may_start is None or may_start())

    specs = pending_cells(request, set(skip))
    results = await pump(specs if limit is None else specs[:limit], work, concurrency=request.concurrency,
                         on_done=on_cell, may_start=startable)
    if executor.lost:
        raise ExecutorLost(executor.lost)
    if breaker.open:
        raise breaker.stop()
    return results


def evaluate(request: EvalRequest, *, skip: set[tuple[str, int]] = frozenset(),
             on_cell: Callable[[CellResult], None] = lambda cell: None,
             regrade: set[tuple[str, int]] = frozenset(),
             executor: Executor | None = None) -> list[CellResult]:
    return asyncio.run(evaluate_async(request, skip=skip, on_cell=on_cell, regrade=regrade,
                                      executor=executor))
