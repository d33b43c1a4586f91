"""One writer per run: an exclusive OS lock (fcntl.flock) on `<data_dir>/locks/<key>.lock`.

The loop, --test-run and --check hold the lock of what they write for their whole life; a second
process refuses at once, naming the holder's pid, command and start time. The OS drops the lock when
the holder dies (even by SIGKILL), so a free lock is how a dead writer is told from a live one.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from eval.errors import SkillMutatorError

KEY = re.compile(r"^[A-Za-z0-9._-]+$")


class LockHeld(SkillMutatorError, RuntimeError):
    """Another live process writes this run; the message names it and what to do."""


@dataclass
class Holder:
    pid: int
    command: str
    started_at: float

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started_at))
        return f"pid {self.pid} (`{self.command}`, started {when})"


def lock_path(data_dir: Path, key: str) -> Path:
    if not KEY.match(key):
        raise ValueError(f"lock key {key!r} must match {KEY.pattern}")
    return data_dir / "locks" / f"{key}.lock"


def _read_holder(fd: int) -> Holder | None:
    for _ in range(20):  # the holder writes its record right after taking the lock: give it a moment
        try:
            raw = os.pread(fd, 65536, 0)
            record = json.loads(raw)
            return Holder(int(record["pid"]), str(record["command"]), float(record["started_at"]))
        except (ValueError, KeyError, TypeError, OSError):
            time.sleep(0.05)
    return None


def _try_exclusive(fd: int) -> bool:
    # A reader asking holder_of() holds a shared lock for a few microseconds: retry briefly before refusing.
    for attempt in range(6):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            time.sleep(0.02 * (attempt + 1))
    return False


class RunLock:
    """Held from acquire() until release() (or the process's death)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def acquire(cls, data_dir: Path, key: str, *, what: str) -> RunLock:
        return cls.acquire_file(lock_path(data_dir, key), what=what)

    @classmethod
    def acquire_file(cls, path: Path, *, what: str) -> RunLock:
        """The lock on one file, wherever it is (e.g. beside a folder every writer of it must agree on)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_exclusive(fd):
            holder = _read_holder(fd)
            os.close(fd)
            who = holder.describe() if holder else "another process"
            raise LockHeld(f"{what} is being written by {who}; only one process may write it: wait for it to "
                           f"finish (or stop it), then re-run this command") from None
        record = {"pid": os.getpid(), "command": " ".join(sys.argv) or sys.executable,
                  "started_at": time.time(), "host": socket.gethostname()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        return cls(path, fd)

    def release(self) -> None:
        if self.fd >= 0:
            try:
                os.ftruncate(self.fd, 0)
            finally:
                os.close(self.fd)  # closing drops the flock
                self.fd = -1


def holder_of(data_dir: Path, key: str) -> Holder | None:
    """The live holder of a lock, or None when the lock is free (no writer alive)."""
    try:
        path = lock_path(data_dir, key)
        fd = os.open(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd) or Holder(0, "unknown", 0.0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def lock_free(data_dir: Path, key: str) -> tuple[bool, bool]:
    """(free, died_here): whether no live process holds the lock, and whether its holder was a process of
    this machine that died holding it (free, with the record a release would have cleared still naming this
    host). A died_here lock tells a dead writer at once, without waiting for its heartbeat to age; a writer
    on another machine sharing the store (or one from before the record named its host) is not judged by
    it."""
    try:
        fd = os.open(lock_path(data_dir, key), os.O_RDONLY)
    except (OSError, ValueError):
        return True, False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False, False
        try:
            record = json.loads(os.pread(fd, 65536, 0) or b"{}")
        except (ValueError, OSError):
            record = {}
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return True, isinstance(record, dict) and record.get("host") == socket.gethostname()
    finally:
        os.close(fd)
