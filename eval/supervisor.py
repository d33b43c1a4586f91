"""Progress-aware watchdog for an agent process: a silence budget, then a heartbeat budget, and hard caps.

Until the stream first grows the agent gets `silence_ms`; after that, `heartbeat_ms` between
growths. On top, a wall-clock cap (an agent that writes forever is still stopped) and a size cap on
every output file. On expiry the whole process group is killed (a hung grandchild must not outlive it).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.cell_keeper import kill_tree


@dataclass(frozen=True)
class Watch:
    timed_out: bool
    returncode: int
    reason: str = ""
    overflow: bool = False      # killed for writing past the output cap (an agent error, not a timeout)


def kill_group(pid: int, *, tree: bool = True) -> None:
    """SIGKILL the process group led by `pid` and, first (`tree`), every process below `pid` that left it
    (setsid, double forks): under a keeper (eval/cell_keeper.py, a subreaper) all of them are still below it.
    `tree=False` when `pid` has already exited (its keeper swept its tree then)."""
    if tree:
        kill_tree(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def kill_and_reap(proc: asyncio.subprocess.Process) -> None:
    """Kill the process group and wait for the process itself, so its exit reaches the event loop before the
    loop
    closes: a cancelled evaluation (a budget stop, a full disk, Ctrl-C) otherwise ends with asyncio's warning
    "Loop ... that handles pid N is closed" as the run's last line."""
    kill_group(proc.pid, tree=proc.returncode is None)
    if proc.returncode is None:
        try:
            await asyncio.wait_for(proc.wait(), timeout=5)
        except TimeoutError:
            pass   # SIGKILLed and still not reaped: the reaper (eval/reaper.py) owns it from here


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


async def supervise(proc: asyncio.subprocess.Process, stream: Path, *, silence_ms: int, heartbeat_ms: int,
                    wall_ms: int = 0, outputs: Sequence[Path] = (), max_output_bytes: int = 0,
                    clock: Callable[[], float] = time.monotonic, poll_s: float = 0.05) -> Watch:
    """Wait for `proc` (started with start_new_session=True), killing its group on a stalled stream, past
    the wall-clock cap (`wall_ms`, 0 = none) or when the stream or an output
    file passes `max_output_bytes`."""
    # one waiter for the whole watch, not a task made and cancelled per poll (wait_for's): the poll is the
    # harness's only per-second cost of a running agent
    waiter = asyncio.ensure_future(proc.wait())
    try:
        return await _watch(proc, waiter, stream, silence_ms=silence_ms, heartbeat_ms=heartbeat_ms,
                            wall_ms=wall_ms, watched=[stream, *outputs], max_output_bytes=max_output_bytes,
                            clock=clock, poll_s=poll_s)
    finally:
        waiter.cancel()


async def _watch(proc: asyncio.subprocess.Process, waiter: asyncio.Future, stream: Path, *, silence_ms: int,
                 heartbeat_ms: int, wall_ms: int, watched: list[Path], max_output_bytes: int,
                 clock: Callable[[], float], poll_s: float) -> Watch:
    last_size = _size(stream)
    started = last_growth = clock()
    grown = last_size > 0   # a fast agent may have written its first event before the watch began
    while True:
        done, _ = await asyncio.wait((waiter,), timeout=poll_s)
        if done:
            return Watch(False, waiter.result())
        size = _size(stream)
        now = clock()
        if size != last_size:
            last_size, last_growth, grown = size, now, grown or size > 0
        if max_output_bytes:
            over = next((path for path in watched if _size(path) > max_output_bytes), None)
            if over is not None:
                kill_group(proc.pid)
                returncode = await proc.wait()
                return Watch(False, returncode, f"output over {max_output_bytes / 2**20:g} MB ({over.name}); "
                                                f"the agent was killed (raise --max-output-mb if it is "
                                                f"legitimately verbose)", overflow=True)
        if wall_ms and (now - started) * 1000 >= wall_ms:
            kill_group(proc.pid)
            returncode = await proc.wait()
            return Watch(True, returncode, f"wall-clock cap: still running after {wall_ms} ms "
                                           "(--cell-timeout-ms)")
        budget_ms = heartbeat_ms if grown else silence_ms
        if (now - last_growth) * 1000 >= budget_ms:
            kill_group(proc.pid)
            returncode = await proc.wait()
            what = "heartbeat" if grown else "silence"
            return Watch(True, returncode, f"watchdog: no stream growth for {budget_ms} ms ({what} budget)")
