"""What the executor tests share: a driver's world (its own suite copy, skill and data dir) and its cells."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from eval.cells import Contract, enumerate_cells
from eval.cost import Price
from eval.jobs import CellJob, CellResult, CellSettings
from eval.snapshot import copy_tree
from eval.suite import load_suite
from sandbox import get_launcher
from tests.conftest import ROOT

FAKE = [sys.executable, str(ROOT / "fakes" / "fake_agent.py")]
CONTRACT = Contract(model="claude-haiku-4-5", replicates=1, max_turns=30, agent="fake", silence_ms=600_000,
                    heartbeat_ms=300_000)
PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.10)


@pytest.fixture
def driver(tmp_path: Path) -> dict:
    """A driver's world: its own copy of a demo suite and of the seed skill, and a data dir."""
    suites, data = tmp_path / "driver-suites", tmp_path / "driver-data"
    copy_tree(ROOT / "suites" / "clean-val", suites / "clean-val")
    copy_tree(ROOT / "suites" / "csv-clean", data / "genomes" / "csv-clean")
    return {"suite": load_suite(suites / "clean-val"), "skill": data / "genomes" / "csv-clean", "data": data}


def job_for(driver: dict, cells_root: Path, index: int = 0) -> CellJob:
    suite = driver["suite"]
    spec = enumerate_cells(suite, CONTRACT, "key")[index]
    task = next(t for t in suite.tasks if t.id == spec.task_id)
    return CellJob(spec=spec, task=task, suite=suite, skill_dir=driver["skill"], skill_name="csv-clean",
                   contract=CONTRACT, cell_root=cells_root / spec.name, price=PRICE,
                   settings=CellSettings(agent_argv=FAKE, launcher=get_launcher("none"), grader_timeout_s=60))


def same_outcome(a: CellResult, b: CellResult) -> tuple:
    pick = lambda c: (c.task_id, c.replicate, c.status, c.score, c.tests, c.cost_usd, c.steps, c.input_tokens,  # noqa: E731
                      c.output_tokens, c.error)
    return pick(a), pick(b)


PATIENCE_S = 300        # a bound on waiting for a condition (a hung test fails), never a measured duration


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.05)
