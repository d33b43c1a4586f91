"""Nothing outlives the harness: kill -9 of run.py takes its agents down at once (parent-death signal),
and what they started is reaped by the next start; a live harness's agents are never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from eval import reaper
from tests.conftest import ROOT, make_suite

# Hangs while a flag file beside it exists, after starting a helper in its own process group.
AGENT = """import json, os, pathlib, subprocess, sys, time
here = pathlib.Path(__file__).parent
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
(here / "pids").mkdir(exist_ok=True)
(here / "pids" / f"{os.getpid()}-{helper.pid}").write_text("")
while (here / "hang").exists():
    time.sleep(0.1)
helper.kill()
pathlib.Path("output.txt").write_text("done")
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1}) + "\\n")
"""


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_for(predicate, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_kill_9_of_run_py_leaves_no_agent_running(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    train, val = make_suite(suites, "k-train", split="train"), make_suite(suites, "k-val", split="val")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    (tmp_path / "hang").write_text("")
    argv = [sys.executable, str(ROOT / "run.py"), "--suite", str(train), "--val", str(val), "--rounds", "0",
            "--replicates", "1", "--real", "--agent", "command", "--agent-cmd", f"{sys.executable} {agent}",
            "--mutator-cmd", f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}", "--no-solve", "--sandbox", "none", "--concurrency", "2", "--data-dir", str(tmp_path / "data"),
            "--skill-dir", str(ROOT / "suites" / "csv-clean")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILL_MUTATOR_", "SM_"))}
    harness = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids_dir = tmp_path / "pids"
    try:
        assert wait_for(lambda: pids_dir.is_dir() and len(list(pids_dir.iterdir())) == 2), "agents never started"
        pairs = [tuple(map(int, p.name.split("-"))) for p in pids_dir.iterdir()]
        recorded = sorted(int(p.name) for p in (tmp_path / "data" / "pids").iterdir())
        assert recorded == sorted(a for a, _ in pairs)            # each agent's group is on record while it runs
        harness.send_signal(signal.SIGKILL)
        harness.wait(30)
        assert wait_for(lambda: all(gone(a) for a, _ in pairs), 30)  # the agents died with the harness
        helpers = [h for _, h in pairs]
        assert not any(gone(h) for h in helpers)                    # what they started lingers until the next start
        (tmp_path / "hang").unlink()
        again = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        assert "reaped 2 agent process(es) left running by a harness that died" in again.stderr
        assert wait_for(lambda: all(gone(h) for h in helpers), 30)
        assert list((tmp_path / "data" / "pids").iterdir()) == []   # every record cleared
    finally:
        if harness.poll() is None:
            harness.kill()
        for p in pids_dir.glob("*-*"):
            for pid in map(int, p.name.split("-")):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_a_live_harness_keeps_its_agents(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        reaper.use(tmp_path / "pids")
        reaper.register(child.pid)                 # recorded by this (live) process
        assert reaper.reap(tmp_path / "pids") == [] and not gone(child.pid)
        record = tmp_path / "pids" / str(child.pid)
        started = record.read_text().split()[0]
        record.write_text(f"{started} 999999999 0")   # a harness that no longer exists
        assert reaper.reap(tmp_path / "pids") == [child.pid]
        child.wait(10)
        assert not record.exists()
    finally:
        reaper._registry = None
        if child.poll() is None:
            child.kill()
