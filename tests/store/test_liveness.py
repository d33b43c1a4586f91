"""Liveness: a run killed with SIGKILL shows as `stale` in GET /api/runs and the CLI summary once its
heartbeat is old and its lock free; re-running the same command resumes it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mutator.report import summary
from mutator.server.app import create_app
from mutator.store.db import connect_readonly
from mutator.store.liveness import STALE_AFTER_S, is_stale
from tests.conftest import ROOT

ARGS = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1")


@pytest.mark.parametrize("status, beat_age, lock_free, stale", [
    ("running", STALE_AFTER_S + 1, True, True),        # dead writer: old beat, free lock
    ("running", None, True, True),                     # never beat (a store from before heartbeats), free lock
    ("running", 1.0, True, False),                     # just died: not stale until a few beats are missed
    ("running", STALE_AFTER_S + 1, False, False),      # beat late but its lock is held: alive (a long stall)
    ("finished", STALE_AFTER_S + 1, True, False),      # only a running record can be stale
])
def test_stale_needs_an_old_heartbeat_and_a_free_lock(status, beat_age, lock_free, stale) -> None:
    now = 1_000_000.0
    beat = None if beat_age is None else now - beat_age
    assert is_stale(status, beat, lock_free=lock_free, now=now) is stale


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
    assert "status running" in summary(db, run["id"], data_dir=data)   # beat too recent to call it dead
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
