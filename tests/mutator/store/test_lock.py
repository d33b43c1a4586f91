"""One writer per run: two identical commands started together -> exactly one runs, the other exits 2
naming the first; a test run is refused while the run is held; a SIGKILLed holder frees the lock."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mutator.store.lock import LockHeld, RunLock, holder_of
from tests.conftest import ROOT

DEMO = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1")


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def verdicts(data: Path) -> list[tuple]:
    with sqlite3.connect(data / "mutator.db") as conn:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        return conn.execute("select round, sibling, verdict, genome_hash from attempts order by round, sibling").fetchall()


def test_two_identical_commands_one_runs_the_other_names_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first, second = start(*DEMO, "--data-dir", str(data)), start(*DEMO, "--data-dir", str(data))
    outcomes = {proc.pid: (proc.wait(timeout=600), *proc.communicate()) for proc in (first, second)}
    codes = sorted(code for code, _, _ in outcomes.values())
    assert codes == [0, 2], outcomes
    winner = next(pid for pid, (code, _, _) in outcomes.items() if code == 0)
    _, _, refused = next(value for value in outcomes.values() if value[0] == 2)
    lines = refused.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: this run is being written by"), refused
    assert f"pid {winner} " in lines[0] and "run.py" in lines[0] and "started " in lines[0]
    alone = tmp_path / "alone"
    lone = subprocess.run([sys.executable, str(ROOT / "run.py"), *DEMO, "--data-dir", str(alone)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert lone.returncode == 0, lone.stderr[-2000:]
    assert verdicts(data) == verdicts(alone)  # the runner's results are those of a lone run

    with sqlite3.connect(data / "mutator.db") as conn:
        (run_id,) = conn.execute("select id from runs").fetchone()
    held = RunLock.acquire(data, run_id, what="this run")   # stands in for a live loop of the run
    try:
        test = subprocess.run([sys.executable, str(ROOT / "run.py"), "--test-run", run_id, "--suite", "clean-test",
                               "--data-dir", str(data)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert test.returncode == 2 and f"pid {os.getpid()} " in test.stderr, test.stderr
        again = subprocess.run([sys.executable, str(ROOT / "run.py"), *DEMO, "--data-dir", str(data)], cwd=ROOT,
                               capture_output=True, text=True, timeout=600)
        assert again.returncode == 2 and f"pid {os.getpid()} " in again.stderr, again.stderr
    finally:
        held.release()
    assert holder_of(data, run_id) is None


def test_lock_names_its_holder_and_is_freed_when_the_holder_dies(tmp_path: Path) -> None:
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
            "from mutator.store.lock import RunLock; RunLock.acquire(Path(sys.argv[2]), 'run-abc', what='run-abc'); "
            "print('held', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert holder_of(tmp_path, "run-abc").pid == holder.pid
        with pytest.raises(LockHeld, match=f"pid {holder.pid} "):
            RunLock.acquire(tmp_path, "run-abc", what="run-abc")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 10
    while holder_of(tmp_path, "run-abc") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    lock = RunLock.acquire(tmp_path, "run-abc", what="run-abc")  # a dead writer's lock is free
    lock.release()
