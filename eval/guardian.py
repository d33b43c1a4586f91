"""Agents die with the harness, whole, at once: one small watcher process per harness process
(eval/guardian_watch.py) is told of every agent group as it starts and ends, over a pipe only the harness
writes; when the harness ends in any way (kill -9 included) the pipe closes and the watcher kills every group
still running, its tool processes too.

It replaces a parent-death signal per agent (setpriv's exec in front of each: ~1 ms of CPU per cell,
bench/overhead.py), which reached only the agent itself (its tools lingered until the next start's reaper) and
fired when the *thread* that spawned it ended. Started on the first agent, in its own session (a Ctrl-C to the
terminal is the harness's to handle). The window left is the one setpriv had too: a harness killed between an
agent's fork and its record (here: the spawn's return; there: setpriv's prctl) leaves that agent to the
registry of eval/reaper.py, if any. A forked child of the harness holds no guardian (it starts its own). Where
the watcher cannot start or has died, `ready` is False and the spawn falls back
to setpriv (eval/reaper.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WATCH = Path(__file__).with_name("guardian_watch.py")
# (this process's pid, the pipe's write end, the watcher)
_state: tuple[int, int, subprocess.Popen] | None = None
_broken = False                                            # it could not start, or went away: never retried


def ready() -> bool:
    """Whether a guardian watches this process's agents (started on the first call)."""
    global _state, _broken
    if _state is not None and _state[0] == os.getpid():
        return True
    if _broken:
        return False
    read, write = os.pipe()
    try:
        watcher = subprocess.Popen([sys.executable, "-I", "-S", str(WATCH)], stdin=read,
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        os.close(write)
        _broken = True
        return False
    finally:
        os.close(read)
    os.set_blocking(write, False)   # a stalled watcher never stalls the event loop: it is dropped instead
    _state = (os.getpid(), write, watcher)
    return True


def _tell(line: str) -> None:
    global _state, _broken
    if _state is None or _state[0] != os.getpid():
        return
    try:
        os.write(_state[1], line.encode())
    except OSError:            # the watcher died or stalls: later agents get setpriv instead
        os.close(_state[1])
        _state, _broken = None, True


def watch(pgid: int, started: str | None) -> None:
    """An agent group started (`started`: its leader's start time, so a recycled pid is never killed)."""
    _tell(f"+{pgid} {started or ''}\n")


def forget(pgid: int) -> None:
    """An agent group was killed and reaped by the harness itself."""
    _tell(f"-{pgid}\n")


def _after_fork_in_child() -> None:
    global _state
    if _state is not None:
        os.close(_state[1])
        _state = None


os.register_at_fork(after_in_child=_after_fork_in_child)
