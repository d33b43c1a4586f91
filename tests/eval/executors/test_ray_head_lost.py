"""A Ray cluster's head lost mid-run (issue 29 item 2): the run stops cleanly with exit 8 and one line naming the
address, the cells in flight are stored as infra_error (never scores), nothing else starts, and the same command
resumes (here on this machine: the executor is not part of the run). Without the watch, Ray itself ends the driver
60 s later (exit 1, the run left `running`). The build agents hang (FAKE_AGENT_HANG), so which cells are in flight
when the head goes is known without timing: the two the head's two CPUs hold."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]'); the ray executor is optional")

from tests.conftest import ROOT  # noqa: E402
from tests.eval.executors.executor_support import PATIENCE_S, wait_for  # noqa: E402

HEAD = [sys.executable, str(ROOT / "tests" / "eval" / "executors" / "ray_head.py")]


def test_a_head_lost_mid_run_stops_it_resumably_with_exit_8(tmp_path: Path) -> None:
    workers_tmp = tmp_path / "worker-tmp"       # the head's workers build their cells here (their TMPDIR)
    workers_tmp.mkdir()
    head = subprocess.Popen([*HEAD, str(workers_tmp)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    data = tmp_path / "data"
    args = [sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val", "--rounds", "1",
            "--replicates", "1", "--concurrency", "2", "--data-dir", str(data)]
    try:
        address = head.stdout.readline().strip()
        assert address.startswith("127.0.0.1:"), address
        run = subprocess.Popen([*args, "--executor", "ray", "--ray-address", address], cwd=tmp_path, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "FAKE_AGENT_HANG": "1"})
        try:
            in_flight = lambda: list(workers_tmp.glob("skill-mutator-ray/**/stream.jsonl"))  # noqa: E731
            wait_for(lambda: len(in_flight()) >= 2 or run.poll() is not None, "two cells to start on the head")
            assert run.poll() is None, run.communicate()[1][-2000:]
            head.stdin.write("\n")
            head.stdin.flush()
            assert head.stdout.readline().strip() == "killed"
            out, err = run.communicate(timeout=PATIENCE_S)
        finally:
            if run.poll() is None:
                run.kill()
    finally:
        if head.poll() is None:
            head.communicate("\n", timeout=PATIENCE_S)
    assert run.returncode == 8, err[-3000:]
    stopped = [line for line in err.splitlines() if line.startswith("stopped:")]
    assert len(stopped) == 1 and f"lost the Ray cluster at {address} mid-run" in stopped[0], err[-3000:]
    assert "re-run the same command" in stopped[0] and "Traceback" not in out + err

    db = sqlite3.connect(data / "mutator.db")
    [(run_id, status, error)] = db.execute("select id, status, error from runs").fetchall()
    assert status == "stopped" and error == stopped[0].removeprefix("stopped: ")
    cells = db.execute("select status, score, error from cells").fetchall()
    assert len(cells) == 2                                      # the two in flight; nothing else started
    assert all(s == "infra_error" and f"at {address}" in e for s, _, e in cells), cells
    assert db.execute("select status from evaluations").fetchall() == [("running",)]
    assert db.execute("select count(*) from attempts where round > 0").fetchone() == (0,)
    db.close()

    resumed = subprocess.run([*args, "--executor", "local"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=PATIENCE_S)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"Resuming {run_id}: 0 of 1 rounds done" in resumed.stderr
    db = sqlite3.connect(data / "mutator.db")
    assert db.execute("select status from runs").fetchall() == [("finished",)]
    assert db.execute("select count(*) from cells where status = 'infra_error'").fetchone() == (0,)
    db.close()
