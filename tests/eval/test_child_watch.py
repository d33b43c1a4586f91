"""Agents and graders are awaited through pidfds: no thread per child process, exit codes as the kernel gave them."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from eval import child_watch
from eval.cells import Contract
from eval.evaluate import EvalRequest, evaluate
from eval.jobs import CellSettings
from eval.suite import load_suite
from sandbox.none import NoneLauncher
from tests.conftest import ROOT
from tests.sandbox.conftest import PRICE

pidfds = pytest.mark.skipif(sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"),
                            reason="Python 3.12+ waits on pidfds itself; 3.11 needs a kernel with pidfd_open")


@pidfds
def test_children_exit_codes_and_signals_come_back_through_pidfds() -> None:
    assert child_watch.install()
    assert isinstance(asyncio.get_child_watcher(), child_watch.PidfdWatcher)

    async def spawn_all() -> list[int | None]:
        procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", f"import sys; sys.exit({code})")
                 for code in range(6)]
        sleeper = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
        os.kill(sleeper.pid, signal.SIGKILL)
        return [await proc.wait() for proc in [*procs, sleeper]]

    assert asyncio.run(spawn_all()) == [0, 1, 2, 3, 4, 5, -signal.SIGKILL]
    # a loop in another thread is watched by its own loop, not the first one's
    found: list = []
    worker = threading.Thread(target=lambda: found.append(asyncio.run(spawn_all())))
    worker.start()
    worker.join(60)
    assert found == [[0, 1, 2, 3, 4, 5, -signal.SIGKILL]]


@pidfds
def test_an_evaluation_starts_no_thread_per_cell(monkeypatch, tmp_path: Path) -> None:
    """Python 3.11's own watcher starts a thread per child (two per cell: agent and grader), holding the event loop
    while each starts; the cells of a whole evaluation now start none."""
    started: list[str] = []
    real = threading.Thread.start

    def spy(self) -> None:
        started.append(self.name)
        real(self)

    monkeypatch.setattr(threading.Thread, "start", spy)
    contract = Contract(model="claude-haiku-4-5", replicates=1, max_turns=30, agent="fake-watch",
                        silence_ms=600_000, heartbeat_ms=300_000)
    request = EvalRequest(skill_dir=ROOT / "suites" / "csv-clean", skill_name="csv-clean",
                          suite=load_suite(ROOT / "suites" / "clean-train"), contract=contract, key="watch",
                          cells_root=tmp_path / "cells", price=PRICE, concurrency=4,
                          settings=CellSettings(agent_argv=[sys.executable, str(ROOT / "fakes" / "fake_agent.py")],
                                                launcher=NoneLauncher(), grader_timeout_s=60))
    cells = evaluate(request)
    assert len(cells) == 12 and all(cell.status == "ok" for cell in cells), [c.error for c in cells if c.error]
    assert started == []
