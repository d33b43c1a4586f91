"""What one cell is and what it gives back: the job handed to the runner and graders, and its result.

A small module of records only, so the runner and the grader registry both use it without importing
each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from eval.cells import CellSpec, Contract
from eval.cost import Price
from eval.suite import Suite, Task
from sandbox import Launcher

STATUSES = ("ok", "agent_error", "timeout", "grader_error", "infra_error")
# A verdict on the skill: the agent finished and was graded (ok), or the agent itself failed (agent_error,
# timeout) — possibly the skill's doing, so it scores 0. The others are nobody's verdict on the skill: a
# grader_error cell is re-graded and an infra_error cell (API outage, rate limits, network, a harness
# fault) is re-run; neither is ever a cached result.
FINAL = ("ok", "agent_error", "timeout")
NOT_FINAL = ("grader_error", "infra_error")
CELL_TIMEOUT_MS = 30 * 60 * 1000          # wall-clock cap per cell, on top of the watchdog
MAX_OUTPUT_BYTES = 20 * 1024 * 1024       # per agent output file (stream, stdout, stderr)


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
    retries: int = 0            # infrastructure retries inside this evaluation before this result
    # eval/skill_use.py::SkillUse as JSON; None in a bare cell or before a stream
    skill_use: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def write_record(self, cell_root: Path) -> None:
        """cell.json, the record beside the cell's files for whoever opens the folder (the store holds the
        result; nothing reads this back): orjson, ~5x faster than json's indented (pure-Python) encoder."""
        options = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        (cell_root / "cell.json").write_bytes(orjson.dumps(self.__dict__, option=options))

    @property
    def final(self) -> bool:
        return self.status in FINAL


@dataclass(frozen=True)
class CellSettings:
    """How every cell of an evaluation is run, whole: built once from a command's settings and carried
    unchanged through the Evaluator, the EvalRequest and each CellJob. None of it is
    part of the evaluation key."""
    agent_argv: Sequence[str]
    launcher: Launcher
    grader_timeout_s: float
    network: bool = False       # share the network with the agent (a real backend calls the model API)
    cell_timeout_ms: int = CELL_TIMEOUT_MS
    max_output_bytes: int = MAX_OUTPUT_BYTES
    infra_retries: int = 1      # an infra_error cell is tried again this many times, after a pause
    infra_backoff_s: float = 2.0
    env: dict[str, str] = field(default_factory=dict)   # more variables for the agent (tests' FAKE_* hooks)
    prune: bool = True          # drop work/ once trajectory.md is written (bounded disk per round)
    # --with-skills: the other skills' folders, installed read-only beside the evolved one in every cell; what
    # they are is keyed by Contract.with_skills (their digest), where they are is not
    with_skills: tuple[Path, ...] = ()


@dataclass(frozen=True)
class CellJob:
    spec: CellSpec
    task: Task
    suite: Suite
    skill_dir: Path | None
    skill_name: str
    contract: Contract
    cell_root: Path
    price: Price
    settings: CellSettings
    reuse: Path | None = None   # re-grading: the cell dir of the agent run graded again (eval/kept.py)
