"""Disk full: the run stops with status `stopped` and the reason (exit 3), never a traceback or `running`.

The data dir is a 1.5 MB tmpfs inside bwrap, so the disk really fills up during round 0."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

REPORT = """import json, sqlite3
conn = sqlite3.connect("/mnt/full/data/mutator.db")
print("STATUS " + json.dumps(conn.execute("select status, error from runs").fetchone()))
"""


@pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bwrap for a small tmpfs")
def test_a_full_disk_stops_the_run_with_the_reason() -> None:
    run = [sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val", "--rounds", "3",
           "--replicates", "2", "--data-dir", "/mnt/full/data", "--sandbox", "none"]
    script = (f"{' '.join(run)}; echo EXIT $?; {sys.executable} -c '{REPORT}'")
    done = subprocess.run(["bwrap", "--bind", "/", "/", "--dev", "/dev", "--size", "1500000", "--tmpfs", "/mnt/full",
                           "/bin/sh", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert "EXIT 3" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("stopped: disk full (") and "re-run the same command to resume" in last
    assert "Traceback" not in done.stderr
    status, error = json.loads(done.stdout.split("STATUS ", 1)[1].splitlines()[0])
    assert status == "stopped" and error.startswith("disk full")
