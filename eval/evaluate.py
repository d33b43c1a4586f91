"""evaluate(skill, suite, contract) -> cells: the stateless evaluation core.

It knows nothing of runs, attempts or the database: the caller says which cells are already done
(`skip`) and receives each finished cell through `on_cell` the moment it is graded, so a crash
loses only the cells still running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.cells import CellSpec, Contract, enumerate_cells
from eval.cost import Price
from eval.jobs import CellJob, CellResult
from eval.runner import run_cell
from eval.scheduler import pump
from eval.suite import Suite, check_unchanged
from sandbox import Launcher


@dataclass(frozen=True)
class EvalRequest:
    skill_dir: Path | None     # None = bare (no skill), e.g. the solve phase
    skill_name: str
    suite: Suite
    contract: Contract
    key: str                   # evaluation key (genome + suite + contract), seeds every cell
    cells_root: Path
    agent_argv: Sequence[str]
    launcher: Launcher
    price: Price
    concurrency: int
    grader_timeout_s: float
    env: dict[str, str] = field(default_factory=dict)
    prune: bool = True         # keep only trajectory.md + logs of each cell, not its working dir
    network: bool = False      # the agent needs the model API (real backends); fakes run offline


def pending_cells(request: EvalRequest, skip: set[tuple[str, int]]) -> list[CellSpec]:
    return [spec for spec in enumerate_cells(request.suite, request.contract, request.key)
            if (spec.task_id, spec.replicate) not in skip]


async def evaluate_async(request: EvalRequest, *, skip: set[tuple[str, int]] = frozenset(),
                         on_cell: Callable[[CellResult], None] = lambda cell: None) -> list[CellResult]:
    check_unchanged(request.suite)  # recomputed before every evaluation: a changed suite stops the run
    tasks = {task.id: task for task in request.suite.tasks}

    async def work(spec: CellSpec) -> CellResult:
        return await run_cell(CellJob(
            spec=spec, task=tasks[spec.task_id], suite=request.suite, skill_dir=request.skill_dir,
            skill_name=request.skill_name, contract=request.contract, agent_argv=request.agent_argv,
            launcher=request.launcher, cell_root=request.cells_root / spec.name, price=request.price,
            grader_timeout_s=request.grader_timeout_s, env=request.env,
            prune=request.prune, network=request.network))

    return await pump(pending_cells(request, set(skip)), work, concurrency=request.concurrency,
                      on_done=on_cell)


def evaluate(request: EvalRequest, *, skip: set[tuple[str, int]] = frozenset(),
             on_cell: Callable[[CellResult], None] = lambda cell: None) -> list[CellResult]:
    return asyncio.run(evaluate_async(request, skip=skip, on_cell=on_cell))
