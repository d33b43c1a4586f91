"""Liveness: a run killed with SIGKILL shows as `stale` in GET /api/runs and the CLI summary once its
heartbeat is old and its lock free; re-running the same command resumes it."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mutator.round.summary import summary
from mutator.server.app import create_app
from mutator.store.db import connect_readonly
from mutator.store.liveness import STALE_AFTER_S, is_stale
from tests.conftest import ROOT

ARGS = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1")


@pytest.mark.parametrize("status, beat_age, lock_free, stale", [
    ("running", STALE_AFTER_S + 1, True, True),        # dead writer: old beat, free lock
    ("running", None, True, True),                     # never beat (a store from before heartbeats), free lock
    ("running", 1.0, True, False),                     # just died elsewhere: stale once a few beats are missed
    ("running", STALE_AFTER_S + 1, False, False),      # beat late but its lock is held: alive (a long stall)
    ("finished", STALE_AFTER_S + 1, True, False),      # only a running record can be stale
])
def test_stale_needs_an_old_heartbeat_and_a_free_lock(status, beat_age, lock_free, stale) -> None:
    now = 1_000_000.0
    beat = None if beat_age is None else now - beat_age
    assert is_stale(status, beat, lock_free=lock_free, now=now) is stale
    # a holder of this machine that died holding the lock: stale at once, whatever its beat
    assert is_stale(status, beat, lock_free=lock_free, now=now, died_here=lock_free) is (
        status == "running" and lock_free)


def run_row(data: Path) -> dict:
    db = connect_readonly(data / "mutator.db")
    try:
        return dict(next(iter(db.query("select * from runs"))))
    finally:
        db.conn.close()


def kill_mid_round(argv: list[str], data: Path) -> None:
    """Start the run and SIGKILL its process group once round 0 is done and round 1 under way."""
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    beat = None
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            with sqlite3.connect(f"file:{data / 'mutator.db'}?mode=ro", uri=True) as conn:
                started = conn.execute("select count(*) from attempts where round = 1").fetchone()[0]
                beat = conn.execute("select heartbeat_at from runs").fetchone()[0]
        except (sqlite3.OperationalError, TypeError):
            continue
        if started and beat:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert beat, "the loop never recorded a heartbeat"


def rerun(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.asyncio
async def test_a_killed_run_shows_stale_and_resumes(tmp_path: Path, aiohttp_client) -> None:
    data = tmp_path / "data"
    argv = [sys.executable, str(ROOT / "run.py"), *ARGS, "--data-dir", str(data)]
    kill_mid_round(argv, data)
    run = run_row(data)
    assert run["status"] == "running"      # the record still says so: nobody was left to update it

    db = connect_readonly(data / "mutator.db")
    # this machine's writer died holding its lock (the lock's record names this host): stale at once
    assert "status stale (process died at" in summary(db, run["id"], data_dir=data)
    db.conn.close()
    lock = data / "locks" / f"{run['id']}.lock"
    record = json.loads(lock.read_text())
    assert record["pid"] > 0 and record["host"] == socket.gethostname()
    lock.write_text(json.dumps({**record, "host": "another-machine"}))   # a writer elsewhere sharing the store
    db = connect_readonly(data / "mutator.db")
    assert "status running" in summary(db, run["id"], data_dir=data)   # its beat too recent to call it dead
    db.conn.close()
    with sqlite3.connect(data / "mutator.db") as conn:   # time passes: the beat is now a few intervals old
        conn.execute("update runs set heartbeat_at = heartbeat_at - ?", [STALE_AFTER_S + 5])
    db = connect_readonly(data / "mutator.db")
    text = summary(db, run["id"], data_dir=data)
    db.conn.close()
    assert "status stale (process died at" in text and "re-run the same command to resume" in text

    client = await aiohttp_client(create_app(data_dir=data, project_root=data.parent, token="t"))
    store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
    listed = await (await client.get("/api/runs", params={"store": store})).json()
    assert [(r["id"], r["status"]) for r in listed] == [(run["id"], "stale")]
    assert "re-run the same command" in listed[0]["stale_note"]
    detail = await (await client.get(f"/api/runs/{run['id']}", params={"store": store})).json()
    assert detail["run"]["status"] == "stale"

    resumed = rerun(argv)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"Resuming {run['id']}" in resumed.stdout + resumed.stderr
    assert run_row(data)["status"] == "finished"


@pytest.mark.asyncio
async def test_a_dead_test_run_and_health_check_show_stale_unless_their_lock_is_held(tmp_path: Path,
                                                                                     aiohttp_client) -> None:
    from mutator.store.db import connect
    from mutator.store.liveness import check_key
    from mutator.store.lock import RunLock
    data = tmp_path / "data"
    done = rerun([sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val", "--rounds",
                  "0", "--replicates", "1", "--data-dir", str(data)])
    assert done.returncode == 0, done.stderr[-3000:]
    run = run_row(data)
    old = time.time() - STALE_AFTER_S - 5
    db = connect(data / "mutator.db")
    db["test_runs"].insert({"run_id": run["id"], "suite": "clean-test", "genome_hash": run["seed_hash"], "round": 0,
                            "status": "running", "created_at": old, "heartbeat_at": old})
    db["health_checks"].insert({"skill_dir": "/skills/csv-clean", "fingerprint": "f1", "status": "running",
                                "suites": '["clean-val"]', "started_at": old, "heartbeat_at": old})
    db.conn.close()

    async def shown() -> tuple[str, str]:
        client = await aiohttp_client(create_app(data_dir=data, project_root=data.parent, token="t"))  # fresh cache
        store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
        detail = await (await client.get(f"/api/runs/{run['id']}", params={"store": store})).json()
        health = await (await client.get("/api/health-checks", params={"store": store})).json()
        assert ("re-run the same command to resume" in detail["tests"][0].get("stale_note", "")) is (
            detail["tests"][0]["status"] == "stale")
        return detail["tests"][0]["status"], health["latest"]["status"]

    assert await shown() == ("stale", "stale")
    held = [RunLock.acquire(data, run["id"], what="a test run"), RunLock.acquire(data, check_key("/skills/csv-clean"),
                                                                                  what="a health check")]
    try:
        assert await shown() == ("running", "running")   # a late beat with a live holder: a long stall, not dead
    finally:
        for lock in held:
            lock.release()


def test_a_second_aa_run_of_the_same_settings_refuses_naming_the_first(tmp_path: Path) -> None:
    from mutator.store.lock import RunLock
    data = tmp_path / "data"
    argv = [sys.executable, str(ROOT / "run.py"), "--aa", "1", "--val", "clean-val", "--replicates", "1",
            "--data-dir", str(data)]
    first = rerun(argv)
    assert first.returncode == 0, first.stderr[-3000:]
    aa_id = run_row(data)["id"]
    assert aa_id.startswith("aa-")
    lock = RunLock.acquire(data, aa_id, what="this A/A run")   # as if the first were still running
    try:
        second = rerun(argv)
    finally:
        lock.release()
    assert second.returncode == 2
    assert f"pid {os.getpid()}" in second.stderr
    with sqlite3.connect(data / "mutator.db") as conn:
        assert conn.execute("select status, pid from runs").fetchall() == [("finished", None)]   # untouched
