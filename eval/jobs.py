"""What one cell is and what it gives back: the job handed to the runner and graders, and its result.

A small module of records only, so the runner and the grader registry both use it without importing
each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.cells import CellSpec, Contract
from eval.cost import Price
from eval.suite import Suite, Task
from sandbox import Launcher

STATUSES = ("ok", "agent_error", "timeout", "grader_error")


@dataclass(frozen=True)
class CellResult:
    task_id: str
    replicate: int
    status: str
    score: float
    tests: dict[str, float]
    cost_usd: float
    steps: int
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    duration_ms: int
    agent_subtype: str
    error: str
    cell_dir: str
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class CellJob:
    spec: CellSpec
    task: Task
    suite: Suite
    skill_dir: Path | None
    skill_name: str
    contract: Contract
    agent_argv: Sequence[str]
    launcher: Launcher
    cell_root: Path
    price: Price
    grader_timeout_s: float
    env: dict[str, str] = field(default_factory=dict)
    prune: bool = True          # drop work/ once trajectory.md is written (bounded disk per round)
    network: bool = False       # share the network with the agent (a real backend calls the model API)
