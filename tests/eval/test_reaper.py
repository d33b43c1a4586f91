"""Nothing outlives the harness: kill -9 of run.py takes its agents down at once (parent-death signal),
and what they started is reaped by the next start; a live harness's agents are never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval import reaper
from tests.conftest import ROOT, make_suite
from tests.eval.executor_support import driver, job_for  # noqa: F401 - the driver's world (a fixture)

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


# A Ray worker's cell, as eval/executors/bundle.py::run_bundle runs it: its agent container recorded and labelled
# under the driver's scope (carried in the bundle), by another process than the driver's.
WORKER = """import json, sys
from pathlib import Path
import pytest

from eval import reaper
scope, local, engine = json.loads(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
with reaper.adopted(scope, local):
    reaper.register_container("sm-agent-worker", engine)
    print(json.dumps(reaper.labels()))
"""
# A container engine that knows one container, and logs what it is asked to do.
ENGINE = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/engine.log"
[ "$1" = ps ] && echo c0ffee
exit 0
"""


def as_worker(scope: dict | None, local: Path, engine: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", WORKER, json.dumps(scope), str(local), str(engine)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_ray_workers_containers_are_the_drivers_and_go_when_it_dies(tmp_path: Path) -> None:
    engine = tmp_path / "engine"
    engine.write_text(ENGINE)
    engine.chmod(0o755)
    here, local = tmp_path / "data" / "pids", tmp_path / "worker" / "pids"
    here.parent.mkdir()                                            # the driver's data dir, on this machine
    previous = reaper._registry
    reaper.use(here)
    try:
        scope, mine = reaper.scope(), reaper.labels()
    finally:
        reaper.use(previous)
    # on the driver's machine: labelled as the driver's own cells are, recorded in its data dir, naming the driver
    assert as_worker(scope, local, engine) == mine == {reaper.DATA_DIR_LABEL: str((tmp_path / "data").resolve()),
                                                       reaper.HARNESS_LABEL: f"{os.getpid()}-{scope['harness_started']}"}
    record = json.loads((here / "container-sm-agent-worker").read_text())
    assert (record["harness"], record["engine"]) == (os.getpid(), [str(engine)]) and not local.exists()
    assert reaper.reap_containers(here) == []                      # the driver lives: its container is in use
    (here / "container-sm-agent-worker").write_text(json.dumps({**record, "harness": 999_999_999}))   # the driver died
    assert reaper.reap_containers(here) == ["sm-agent-worker"]     # its next start removes the worker's container
    assert "rm -f c0ffee" in (tmp_path / "engine.log").read_text() and not list(here.iterdir())
    # on another node: the node's own registry, owned by the worker process (Ray ends it with its driver)
    labels = as_worker({**scope, "boot": "another-machine"}, local, engine)
    assert labels[reaper.DATA_DIR_LABEL] == str(local.parent.resolve()) and labels[reaper.HARNESS_LABEL] != mine[
        reaper.HARNESS_LABEL]
    assert json.loads((local / "container-sm-agent-worker").read_text())["harness"] != os.getpid()
    as_worker({**scope, "boot": "another-machine"}, local, engine)  # the next cell there: the dead worker's goes first
    assert (tmp_path / "engine.log").read_text().count("rm -f c0ffee") == 2


def test_a_bundled_cell_runs_under_the_drivers_scope(driver: dict, tmp_path: Path, monkeypatch) -> None:  # noqa: F811 - the imported fixture
    """run_bundle (a Ray worker's cell) labels and records as the driver whose bundle it is, then stops."""
    import eval.runner
    from eval.executors.bundle import make_bundle, run_bundle, suite_tree
    seen = []

    async def cell(job):
        seen.append(reaper.labels())
        return "result"
    previous = reaper._registry
    reaper.use(driver["data"] / "pids")
    try:
        bundle, mine = make_bundle(job_for(driver, tmp_path / "cells"), ""), reaper.labels()
    finally:
        reaper.use(previous)
    assert bundle.reaper_scope["registry"] == str((driver["data"] / "pids").resolve())
    monkeypatch.setattr(eval.runner, "run_cell", cell)
    assert run_bundle(bundle, None, suite_tree(driver["suite"]), tmp_path / "worker") == ("result", {})
    assert seen == [mine] and reaper._registry is previous


# Says the parent-death signal it runs with (prctl PR_GET_PDEATHSIG), and keeps the stream contract.
DEATH_SIGNAL = """import ctypes, json, os
sig = ctypes.c_int(0)
ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(sig))
open(os.environ["SM_STREAM"], "a").write(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                                                     "num_turns": 1, "pdeathsig": sig.value}) + "\\n")
"""


def test_an_agent_dies_with_the_harness_without_a_fork_of_it(tmp_path: Path, monkeypatch) -> None:
    """The agent gets SIGKILL as its parent-death signal, and the spawn passes no preexec_fn: one would force a
    full fork of the harness (~4 ms of CPU in the parent and as much in the child per agent) instead of a vfork."""
    import asyncio

    from eval import agent_call
    from sandbox.none import NoneLauncher
    if reaper._setpriv() is None:
        pytest.skip("util-linux's setpriv is not installed")
    seen: list[dict] = []
    real = asyncio.create_subprocess_exec

    async def spy(*argv, **kwargs):
        seen.append({"argv": argv, "preexec_fn": kwargs.get("preexec_fn")})
        return await real(*argv, **kwargs)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spy)
    script = tmp_path / "agent.py"
    script.write_text(DEATH_SIGNAL)
    stream = tmp_path / "stream.jsonl"
    run = asyncio.run(agent_call.spawn([sys.executable, str(script)], cwd=tmp_path, env={"SM_STREAM": str(stream)},
                                       prompt="", stream=stream, log_dir=tmp_path, launcher=NoneLauncher(),
                                       writable=(tmp_path,), silence_ms=60_000, heartbeat_ms=60_000))
    assert run.returncode == 0, run.stderr_tail()
    assert json.loads(stream.read_text())["pdeathsig"] == signal.SIGKILL
    assert [s["preexec_fn"] for s in seen] == [None]
    assert seen[0]["argv"] == (reaper._setpriv(), "--pdeathsig", "KILL", "--", sys.executable, str(script))


def test_the_program_is_found_as_the_spawn_would_find_it(tmp_path: Path) -> None:
    if reaper._setpriv() is None:
        pytest.skip("util-linux's setpriv is not installed")
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    on_path, preexec = reaper.dying_with_parent(["tool", "-x"], cwd=ROOT, env={"PATH": str(tool.parent)})
    assert on_path[4:] == ["tool", "-x"] and preexec is None          # found on the child's PATH, not ours
    relative, preexec = reaper.dying_with_parent(["bin/tool"], cwd=tmp_path, env={})
    assert relative[4:] == ["bin/tool"] and preexec is None           # found relative to the child's cwd
    # not found: spawned as before, so the spawn's own error says so (and the signal comes from a preexec_fn)
    assert reaper.dying_with_parent(["no-such-tool"], cwd=tmp_path, env={"PATH": str(tmp_path)}) == \
        (["no-such-tool"], reaper.die_with_parent)
