"""Grader runners: how a finished cell is scored. A suite's `runner:` picks one by id.

- `script`: the suite's own run-eval(.py) process prints test name -> score (the original protocol).
- `expectations`: each task's declarative `expect` block (and optional `schema`) checked against the
  output file the task requires, in a separate time-capped process.
- `judge`: a rubric-scoring model call (fake in dry runs), costed and cached.
- `harbor`: an imported Harbor task's verifier, run in the task's container (eval/graders/harbor_runner.py).

Every runner sees the cell's working dir and the task, never the skill; each returns
(test name -> score in [0, 1], "") or (None, the grader error). Adding one = one file + one line here.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from eval.jobs import CellJob

REGISTRY = {
    "script": "eval.graders.script:ScriptRunner",
    "expectations": "eval.graders.expect_runner:ExpectationsRunner",
    "judge": "eval.graders.judge_runner:JudgeRunner",
    "harbor": "eval.graders.harbor_runner:HarborRunner",
}
RUNNER_IDS = tuple(REGISTRY)


class GraderRunner(Protocol):
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]: ...


def get_runner(runner_id: str) -> GraderRunner:
    if runner_id not in REGISTRY:
        raise KeyError(f"grader runner {runner_id!r} is not registered; use one of {', '.join(RUNNER_IDS)}")
    module, _, name = REGISTRY[runner_id].partition(":")
    return getattr(importlib.import_module(module), name)()
