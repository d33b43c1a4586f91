"""THE SQLite store (sqlite-utils, WAL): runs, attempts, evaluations, cells, tests, genomes.

One writer (the loop); readers (dashboard, reports) open it read-only. Schema changes are named migrations
(mutator/store/migrations.py), applied when the writer connects; a released migration is never edited.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import sqlite_utils

from eval.errors import SkillMutatorError, Stop
from mutator.store.migrations import migrate, migration


def now() -> float:
    return time.time()


class StoreError(SkillMutatorError, RuntimeError):
    """The store cannot be used: its file is damaged or its folder not writable. The
    message says which, and the fix."""


DAMAGED = ("malformed", "not a database", "corrupt", "disk i/o error")
UNWRITABLE = ("readonly", "read-only", "unable to open", "permission", "access")


def store_problem(path: Path, err: BaseException) -> StoreError | None:
    """Name a sqlite/OS failure the user can act on: damaged (move it aside) or
    not writable; None otherwise."""
    text = str(err)
    if isinstance(err, sqlite3.DatabaseError) and any(word in text.lower() for word in DAMAGED):
        return StoreError(f"`mutator.db` is damaged: {path}: {text}; move it aside (or restore a backup) and "
                          "re-run, or pass another --data-dir")
    if isinstance(err, OSError) or any(word in text.lower() for word in UNWRITABLE):
        return StoreError(f"`mutator.db` is not writable: {path}: {text}; make {path.parent} writable or "
                          "pass a writable --data-dir")
    return None


class DiskFull(Stop, RuntimeError):
    """The disk under the data dir is full: the run stops (status `stopped`, with
    the reason) and resumes later."""


def disk_full_reason(err: BaseException, data_dir: Path) -> str | None:
    """The stop reason when err is a full disk (ENOSPC / EDQUOT, or SQLite's 'database or disk is full')."""
    full = (isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        isinstance(err, sqlite3.OperationalError) and "disk is full" in str(err))
    if not full:
        return None
    return f"disk full ({err}); free space under {data_dir}, then re-run the same command to resume"


RESERVE_BYTES = 256 * 1024


def keep_reserve(data_dir: Path) -> None:
    """A small file of zeros beside the store, given back when the disk fills so the run can still record that
    it stopped (SQLite needs room for a WAL frame even to write one row)."""
    reserve = data_dir / "locks" / "disk-reserve"
    if reserve.is_file() and reserve.stat().st_size == RESERVE_BYTES:
        return
    try:
        reserve.parent.mkdir(exist_ok=True)
        reserve.write_bytes(bytes(RESERVE_BYTES))
    except OSError:
        reserve.unlink(missing_ok=True)   # no room even for this: the run will say so when it writes


def release_reserve(data_dir: Path) -> None:
    (data_dir / "locks" / "disk-reserve").unlink(missing_ok=True)


@contextmanager
def store_lock(data_dir: Path) -> Iterator[None]:
    """A short lock while a store's parts are created: two processes opening a fresh store at once must not
    both create its tables (or its genome repository)."""
    (data_dir / "locks").mkdir(exist_ok=True)
    fd = os.open(data_dir / "locks" / "store.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
def connect(path: Path) -> sqlite_utils.Database:
    """Open (creating) the writer's connection: WAL, foreign keys, migrations applied.

    A damaged or unwritable store raises StoreError before anything is written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise PermissionError("permission denied")
        if path.exists():  # read it first: a damaged file is reported, never written to
            probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                probe.execute("select count(*) from sqlite_master").fetchone()
            finally:
                probe.close()
        with store_lock(path.parent):
            db = sqlite_utils.Database(path)
            db.execute("PRAGMA busy_timeout = 5000")
            db.enable_wal()
            db.execute("PRAGMA foreign_keys = ON")
            migrate(db)
    except (OSError, sqlite3.DatabaseError) as err:
        problem = store_problem(path, err)
        if problem is None:
            raise
        raise problem from None
    return db


def connect_readonly(path: Path) -> sqlite_utils.Database:
    """A reader's connection that can never take a write lock (dashboard, reports)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.OperationalError as err:
        if "unable to open" not in str(err) or not path.is_file():
            raise
        # A WAL store in a read-only folder cannot get its -shm file: no writer can be live there either, so
        # read it as the immutable file it is (an export or a look at an archived store still works).
        conn.close()
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    return sqlite_utils.Database(conn)


def upgrade(path: Path) -> None:
    """A reader's first look at a store an older version wrote: apply the missing migrations once (they fill
    in what they derive, e.g. stored_decisions), so the reader sees today's columns. A store that cannot be
    written (an archived export, a read-only folder) is left as it is."""
    try:
        probe = sqlite_utils.Database(sqlite3.connect(f"file:{path}?mode=ro", uri=True))
        try:
            behind = bool(list(migration.pending(probe)))
        finally:
            probe.conn.close()
    except sqlite3.Error:
        return
    if behind and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        with suppress(StoreError, sqlite3.Error, OSError):
            # then it is read as it is, like an unwritable one
            connect(path).conn.close()


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def loads(text: str | None, default: Any = None) -> Any:
    return json.loads(text) if text else default


def rows(db: sqlite_utils.Database, sql: str, params: Iterable[Any] | dict = ()) -> list[dict]:
    return [dict(row) for row in db.query(sql, params)]
