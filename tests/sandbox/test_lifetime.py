"""A sandboxed agent dies whole: nothing it started outlives it, so the grader never runs beside it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.evaluate import EvalRequest, evaluate
from eval.jobs import CellSettings
from eval.suite import load_suite
from sandbox import Launcher
from sandbox.bwrap import BwrapLauncher
from sandbox.none import NoneLauncher
from tests.conftest import ROOT, make_suite
from tests.sandbox.conftest import PRICE, needs_bwrap

# Leaves a daemon in a new session (out of reach of a process-group kill), then finishes or hangs.
AGENT = """import json, os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "{token}"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({{"type": "system", "subtype": "init"}}) + "\\n")
    f.flush()
    if os.environ.get("HANG") == "1":
        time.sleep(300)
    f.write(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "num_turns": 1}}) + "\\n")
"""

# Scores 1 only when no process of the agent's is alive while it grades.
GRADER = """import json, os
alive = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if b"{token}" in open(f"/proc/{{pid}}/cmdline", "rb").read():
            alive.append(pid)
    except OSError:
        pass
print(json.dumps({{"agent_gone": float(not alive)}}))
"""


def survivors(token: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(int(pid))
        except OSError:
            pass
    return pids


def run(tmp_path: Path, launcher: Launcher, *, hang: bool) -> tuple[str, list, list[int]]:
    token = f"sandbox-lifetime-{uuid.uuid4().hex}"
    suite = make_suite(tmp_path / "suites", tasks=1, grader=GRADER.format(token=token))
    agent = tmp_path / "agent" / "daemonising_agent.py"
    agent.parent.mkdir()
    agent.write_text(AGENT.format(token=token))
    contract = Contract(model="m", replicates=1, max_turns=5, agent="t", silence_ms=20_000, heartbeat_ms=1_500)
    request = EvalRequest(skill_dir=None, skill_name="none", suite=load_suite(suite), contract=contract, key="k",
                          cells_root=tmp_path / "cells", price=PRICE, concurrency=1,
                          settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=launcher,
                                                grader_timeout_s=30, env={"HANG": "1" if hang else "0"}))
    cells = evaluate(request)
    left = survivors(token)
    if hang:  # after a SIGKILL the kernel tears the pid namespace down just after bwrap is reaped
        deadline = time.monotonic() + 5
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = survivors(token)
    for pid in left:  # only the daemon this test started, found by its unique token
        os.kill(pid, signal.SIGKILL)
    return token, cells, left


@needs_bwrap
def test_bwrap_agent_leaves_nothing_for_the_grader_to_meet(tmp_path: Path) -> None:
    _, [cell], left = run(tmp_path, BwrapLauncher(), hang=False)
    assert cell.status == "ok" and cell.tests == {"agent_gone": 1.0}
    assert left == []


@needs_bwrap
def test_bwrap_watchdog_kill_takes_the_whole_sandbox(tmp_path: Path) -> None:
    _, [cell], left = run(tmp_path, BwrapLauncher(), hang=True)
    assert cell.status == "timeout"
    assert left == []


@pytest.mark.parametrize("hang", [False, True])
def test_bare_daemon_dies_with_its_agent_too(tmp_path: Path, hang: bool) -> None:
    """Under none, a daemon in its own session escapes the group kill, but not its cell's keeper
    (eval/cell_keeper.py, a subreaper): it is gone before the grader runs (tests/sandbox/test_none.py: double forks)."""
    _, [cell], left = run(tmp_path, NoneLauncher(), hang=hang)
    assert cell.status == ("timeout" if hang else "ok")
    assert hang or cell.tests == {"agent_gone": 1.0}
    assert left == []


# Ticks into a file beside it until killed; its argv carries the test's token.
TICKER = """import os, sys, time
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ticks"), "a") as f:
    while True:
        f.write("."); f.flush(); time.sleep(0.05)
"""

# A stand-in harness: spawns the ticker under bwrap through the agent call's own spawn, then waits to be killed.
HARNESS = """import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from eval import agent_call
from sandbox.bwrap import BwrapLauncher
here = Path({here!r})
seen = []
real = asyncio.create_subprocess_exec
async def spy(*argv, **kwargs):
    seen.append([list(argv), kwargs.get("preexec_fn") is None])
    (here / "spawned.json").write_text(json.dumps(seen))
    return await real(*argv, **kwargs)
asyncio.create_subprocess_exec = spy
asyncio.run(agent_call.spawn([sys.executable, str(here / "ticker.py"), {token!r}], cwd=here, env={{}}, prompt="",
                             stream=here / "stream.jsonl", log_dir=here, launcher=BwrapLauncher(), writable=(here,),
                             silence_ms=600_000, heartbeat_ms=600_000))
"""


@needs_bwrap
def test_a_bwrap_agent_dies_with_a_killed_harness_with_no_setpriv_exec(tmp_path: Path) -> None:
    """bwrap's --die-with-parent takes the sandbox down when the harness dies, so the agent is spawned as bwrap
    itself: no setpriv in front (an exec and ~1 ms of CPU per agent) and no preexec_fn (a full fork)."""
    token = f"bwrap-parent-death-{uuid.uuid4().hex}"
    (tmp_path / "ticker.py").write_text(TICKER)
    (tmp_path / "harness.py").write_text(HARNESS.format(root=str(ROOT), here=str(tmp_path), token=token))
    harness = subprocess.Popen([sys.executable, str(tmp_path / "harness.py")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    ticks = tmp_path / "ticks"
    try:
        deadline = time.monotonic() + 60
        while not (ticks.exists() and ticks.stat().st_size > 3) and time.monotonic() < deadline:
            assert harness.poll() is None, harness.stderr.read().decode()[-2000:]
            time.sleep(0.05)
        assert ticks.exists(), "the agent never ticked"
        [[argv, no_preexec]] = json.loads((tmp_path / "spawned.json").read_text())
        assert os.path.basename(argv[0]) == "bwrap" and "--die-with-parent" in argv and no_preexec
        assert not any("setpriv" in part for part in argv)
        assert survivors(token)
        harness.kill()
        harness.wait(30)
        deadline = time.monotonic() + 10
        while survivors(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert survivors(token) == []   # gone with the harness, not at the next start
        size = ticks.stat().st_size
        time.sleep(0.3)
        assert ticks.stat().st_size == size
    finally:
        harness.kill()
        for pid in survivors(token):
            os.kill(pid, signal.SIGKILL)
