"""Under `--sandbox none` nothing an agent starts outlives its cell: its keeper (eval/cell_keeper.py, a child
subreaper) keeps every descendant in its tree, setsid and double forks included, and kills them when the agent
ends; the harness kills the same tree when it ends the cell itself (the watchdog)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.evaluate import EvalRequest, evaluate
from eval.jobs import CellSettings
from eval.suite import load_suite
from sandbox.none import NoneLauncher
from tests.conftest import make_suite
from tests.sandbox.conftest import PRICE

# Leaves a grandchild in a session of its own (fork, setsid, fork, the middle one exits: the classic daemon),
# writes its pid beside the agent, then finishes or hangs.
AGENT = """import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(write, str(os.getpid()).encode()); os.close(write)
        while True:
            time.sleep(1)
    os._exit(0)
os.close(write)
daemon = int(os.read(read, 32))
open(os.path.join(here, "daemon.pid"), "w").write(str(daemon))
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "system", "subtype": "init"}) + "\\n")
    f.flush()
    if os.environ.get("HANG") == "1":
        time.sleep(300)
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1}) + "\\n")
"""

# Scores 1 only when the agent's daemon is gone while it grades.
GRADER = """import json, os, sys
pid = int(open({pidfile!r}).read())
try:
    state = open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[0]
except OSError:
    state = "gone"
print(json.dumps({{"daemon_gone": float(state in ("gone", "Z"))}}))
"""


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("hang", [False, True], ids=["agent-ends", "watchdog-kills"])
def test_a_setsid_double_forked_daemon_dies_with_its_cell(tmp_path: Path, hang: bool) -> None:
    agent = tmp_path / "agent" / "daemonising_agent.py"
    agent.parent.mkdir()
    agent.write_text(AGENT)
    pidfile = agent.parent / "daemon.pid"
    suite = make_suite(tmp_path / "suites", tasks=1, grader=GRADER.format(pidfile=str(pidfile)))
    contract = Contract(model="m", replicates=1, max_turns=5, agent="t", silence_ms=20_000, heartbeat_ms=1_500)
    request = EvalRequest(skill_dir=None, skill_name="none", suite=load_suite(suite), contract=contract, key="k",
                          cells_root=tmp_path / "cells", price=PRICE, concurrency=1,
                          settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=NoneLauncher(),
                                                grader_timeout_s=30, env={"HANG": "1" if hang else "0"}))
    [cell] = evaluate(request)
    daemon = int(pidfile.read_text())
    try:
        assert cell.status == ("timeout" if hang else "ok"), cell
        if not hang:
            assert cell.tests == {"daemon_gone": 1.0}          # gone before the grader ran
        assert not alive(daemon)                               # checked by pid, after the cell
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_the_keeper_passes_on_the_agents_exit_and_kills_what_it_left(tmp_path: Path) -> None:
    import subprocess
    script = ("import os, subprocess, sys, time\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
              "print(p.pid, flush=True)\nsys.exit(7)\n")
    done = subprocess.run(NoneLauncher().wrap([sys.executable, "-c", script], cwd=tmp_path, writable=[tmp_path],
                                              readable=[], network=False), capture_output=True, text=True, timeout=60)
    assert done.returncode == 7
    left = int(done.stdout.split()[0])
    deadline = time.monotonic() + 5
    while alive(left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(left)
    killed = subprocess.run(NoneLauncher().wrap([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), "
                                                 "signal.SIGTERM)"], cwd=tmp_path, writable=[tmp_path], readable=[],
                                                network=False), timeout=60)
    assert killed.returncode == -signal.SIGTERM
