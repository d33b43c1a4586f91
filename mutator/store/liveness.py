"""Liveness: a long-running writer beats a heartbeat column; a record left
`running` by a dead process is `stale`.

A record is stale when its status says running and its lock (mutator/store/lock.py) is free, i.e. no live
process holds it, and either its heartbeat is older than a few intervals or the lock's record says its holder
was a process of this machine that died holding it (kill -9, a crash): then at once, on the next read.
Stale is shown, never written: re-running the same command resumes the record and sets it running again.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mutator.store.lock import lock_free as lock_state

HEARTBEAT_S = 5.0
STALE_AFTER_S = 4 * HEARTBEAT_S


class Heartbeat:
    """A daemon thread running one UPDATE (its first parameter is the time) every HEARTBEAT_S seconds."""

    def __init__(self, db_path: Path, sql: str, params: list, *, every_s: float = HEARTBEAT_S) -> None:
        self.db_path, self.sql, self.params, self.every_s = db_path, sql, params, every_s
        self._stop = threading.Event()
        self.beat()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()

    def beat(self) -> None:
        try:
            # never creates a store
            conn = sqlite3.connect(f"file:{self.db_path}?mode=rw", uri=True, timeout=5)
            try:
                with conn:
                    conn.execute(self.sql, [time.time(), *self.params])
            finally:
                conn.close()
        except sqlite3.Error:
            pass  # a missed beat is harmless; the next one (or the lock) tells the truth

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every_s + 5)


def check_key(skill_dir: str | Path) -> str:
    """The lock key of a health check of one skill folder (its writer holds it while it runs)."""
    return "check-" + hashlib.sha256(str(skill_dir).encode()).hexdigest()[:12]


def is_stale(status: str | None, heartbeat_at: float | None, *, lock_free: bool,
             now: float | None = None, died_here: bool = False) -> bool:
    """Pure: running by its record, no live holder of its lock, and either no beat for STALE_AFTER_S or a
    holder of this machine that died holding the lock."""
    now = time.time() if now is None else now
    return status == "running" and lock_free and (
        died_here or heartbeat_at is None or now - heartbeat_at > STALE_AFTER_S)


def _stale(data_dir: Path, key: str, heartbeat_at: float | None, now: float | None) -> bool:
    free, died_here = lock_state(data_dir, key)
    return is_stale("running", heartbeat_at, lock_free=free, now=now, died_here=died_here)


def stale_note(heartbeat_at: float | None) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC",
                         time.gmtime(heartbeat_at)) if heartbeat_at else "an unknown time"
    return f"process died at {when} (last heartbeat); re-run the same command to resume"


def run_status(data_dir: Path, run: dict, *, now: float | None = None) -> str:
    """A run's status as shown: `stale` for a dead writer, else the stored status."""
    if run.get("status") != "running":
        return run.get("status") or ""
    return "stale" if _stale(data_dir, run["id"], run.get("heartbeat_at"), now) else "running"


def mark_stale(conn: sqlite3.Connection, runs: list[dict], *, now: float | None = None) -> list[dict]:
    """For readers (dashboard, CLI): each `running` run whose writer is dead becomes `stale`, with a note."""
    running = [run for run in runs if run.get("status") == "running"]
    if not running:
        return runs
    files = [row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main" and row[2]]
    if not files:
        return runs
    try:
        beats = dict(conn.execute("select id, heartbeat_at from runs where status = 'running'").fetchall())
    except sqlite3.OperationalError:  # a store no newer writer has migrated: no heartbeats, the lock decides
        beats = {}
    data_dir = Path(files[0]).parent
    for run in running:
        beat = beats.get(run["id"])
        if _stale(data_dir, run["id"], beat, now):
            run.update(status="stale", alive=False, stale_note=stale_note(beat))
    return runs


def store_dir(conn: sqlite3.Connection) -> Path | None:
    """The data dir of the store `conn` reads (where its locks are), None for an in-memory one."""
    files = [row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main" and row[2]]
    return Path(files[0]).parent if files else None


def mark_stale_records(conn: sqlite3.Connection, records: list[dict], key_of: Callable[[dict], str], *,
                       now: float | None = None) -> list[dict]:
    """The same for test runs and health checks (rows holding their own heartbeat_at): a `running` record
    whose writer is dead becomes `stale`, with a note. key_of names the lock its writer holds."""
    data_dir = store_dir(conn) if any(r.get("status") == "running" for r in records) else None
    for record in records:
        if data_dir and record.get("status") == "running" and _stale(
                data_dir, key_of(record), record.get("heartbeat_at"), now):
            record.update(status="stale", stale_note=stale_note(record.get("heartbeat_at")))
    return records
