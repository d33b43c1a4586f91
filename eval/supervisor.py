"""Progress-aware watchdog for an agent process: a silence budget, then a heartbeat budget.

Until the stream first grows the agent gets `silence_ms`; after that, `heartbeat_ms` between
growths. On expiry the whole process group is killed (a hung grandchild must not outlive it).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Watch:
    timed_out: bool
    returncode: int
    reason: str = ""


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


async def supervise(proc: asyncio.subprocess.Process, stream: Path, *, silence_ms: int, heartbeat_ms: int,
                    clock: Callable[[], float] = time.monotonic, poll_s: float = 0.05) -> Watch:
    """Wait for `proc` (started with start_new_session=True), killing its group on a stalled stream."""
    last_size = _size(stream)
    last_growth = clock()
    grown = False
    while True:
        try:
            returncode = await asyncio.wait_for(proc.wait(), timeout=poll_s)
            return Watch(False, returncode)
        except TimeoutError:
            pass
        size = _size(stream)
        now = clock()
        if size != last_size:
            last_size, last_growth, grown = size, now, grown or size > 0
        budget_ms = heartbeat_ms if grown else silence_ms
        if (now - last_growth) * 1000 >= budget_ms:
            kill_group(proc.pid)
            returncode = await proc.wait()
            what = "heartbeat" if grown else "silence"
            return Watch(True, returncode, f"watchdog: no stream growth for {budget_ms} ms ({what} budget)")
