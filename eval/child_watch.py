"""Agents and graders are awaited through pid file descriptors, not a thread per child process.

Python 3.11's asyncio waits for each child with a thread of its own (ThreadedChildWatcher): a thread started
per spawn, the event loop held while it starts, ~0.3 ms of the harness's CPU per cell (two spawns: agent,
grader; bench/overhead.py). Linux 5.3+ gives a child a pid file descriptor that becomes readable when it
exits, which the event loop that spawned it polls with everything else; Python 3.12 does this itself.
`install()` puts such a watcher in place on 3.11 where the kernel has pidfds, before the first spawn;
elsewhere it changes nothing. The watcher belongs to no loop: each child is watched by the loop that spawned
it (as 3.12's), so loops in other threads (the dashboard's, a Ray worker's) are safe with it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import warnings

_installed = False
log = logging.getLogger(__name__)


class PidfdWatcher(asyncio.AbstractChildWatcher):
    """A child's exit read off its pidfd by the running loop that spawned it."""

    def __enter__(self) -> PidfdWatcher:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def is_active(self) -> bool:
        return True

    def close(self) -> None:
        return None

    def attach_loop(self, loop) -> None:
        return None   # each child is watched by the loop that spawned it

    def add_child_handler(self, pid: int, callback, *args) -> None:
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)
        loop._add_reader(pidfd, self._exited, loop, pid, pidfd, callback, args)

    def remove_child_handler(self, pid: int) -> bool:
        return False

    @staticmethod
    def _exited(loop, pid: int, pidfd: int, callback, args) -> None:
        loop._remove_reader(pidfd)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:   # reaped elsewhere: asyncio's own watchers report 255 then
            log.warning("child process %d: exit status already read; returncode 255", pid)
            returncode = 255
        else:
            returncode = os.waitstatus_to_exitcode(status)
        finally:
            os.close(pidfd)
        callback(pid, returncode, *args)


def install() -> bool:
    """Put the pidfd watcher in place (once; Python 3.11 on a kernel with
    pidfds); True when it is in place."""
    global _installed
    if _installed or sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return _installed
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        # a kernel before 5.3, or a seccomp filter that refuses it: keep asyncio's thread per child
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_child_watcher(PidfdWatcher())
    except (AttributeError, NotImplementedError, RuntimeError):
        # another event loop policy: its own way to wait
        return False
    _installed = True
    return True
