"""Nothing outlives the harness: kill -9 of run.py takes its agents and what they started down at once (its
guardian, eval/guardian.py), and what a harness without one left is reaped by the next start; a live harness's agents
are never touched."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval import reaper
from tests.conftest import ROOT, make_suite
from tests.eval.executors.executor_support import driver, job_for  # noqa: F401 - the driver's world (a fixture)

# Hangs while a flag file beside it exists, after starting a helper in a session of its own (out of its group).
AGENT = """import json, os, pathlib, subprocess, sys, time
here = pathlib.Path(__file__).parent
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
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


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def wait_for(predicate, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def guardian_of(harness: int) -> int | None:
    """The harness's guardian process (eval/guardian.py), if it runs."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmdline = (entry / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == harness and b"guardian_watch.py" in cmdline:
                return int(entry.name)
    return None


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
    pids_dir = tmp_path / "pids"
    records = tmp_path / "data" / "pids"
    started: list[tuple[int, int]] = []

    def hang_and_kill(guardian_too: bool) -> list[tuple[int, int]]:
        """Start the harness, wait for its two hanging agents, kill it (and first its guardian) with SIGKILL."""
        for p in pids_dir.glob("*-*"):
            p.unlink()
        harness = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert wait_for(lambda: pids_dir.is_dir() and len(list(pids_dir.iterdir())) == 2), "agents never started"
            pairs = [tuple(map(int, p.name.split("-"))) for p in pids_dir.iterdir()]
            started.extend(pairs)
            # on record: each agent's keeper (--sandbox none: eval/cell_keeper.py), its group's leader
            assert sorted(int(p.name) for p in records.iterdir()) == sorted(parent(a) for a, _ in pairs)
            guardian = guardian_of(harness.pid)
            assert guardian is not None                               # one watcher, the harness's own child
            if guardian_too:
                os.kill(guardian, signal.SIGKILL)
            harness.send_signal(signal.SIGKILL)
            harness.wait(30)
            return pairs
        finally:
            if harness.poll() is None:
                harness.kill()

    try:
        # the guardian takes each agent's whole group down with the harness: the agents and what they started
        pairs = hang_and_kill(guardian_too=False)
        assert wait_for(lambda: all(gone(pid) for pair in pairs for pid in pair), 10)
        # with the guardian gone too (killed first), the agents and their tools live on: the next start reaps them
        pairs = hang_and_kill(guardian_too=True)
        time.sleep(0.5)
        assert not any(gone(pid) for pair in pairs for pid in pair)
        # (still hanging: an agent let go would end itself and its tool, and leave nothing to reap)
        again = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            assert wait_for(lambda: all(gone(pid) for pair in pairs for pid in pair), 60)
        finally:
            (tmp_path / "hang").unlink()
            _, stderr = again.communicate(timeout=300)
        assert again.returncode == 0, stderr[-2000:]
        # each cell's keeper and agent, and its setsid helper when it had started by the kill (not timed)
        reaped = re.search(r"reaped (\d+) agent process\(es\) left running by a harness that died", stderr)
        assert reaped and 4 <= int(reaped.group(1)) <= 6, stderr
        assert list(records.iterdir()) == []   # every record cleared, the first run's included
    finally:
        for pid in {pid for pair in started for pid in pair}:
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


def spawn_recording(tmp_path: Path, monkeypatch) -> tuple[dict, dict]:
    """Spawn DEATH_SIGNAL's agent through agent_call.spawn under --sandbox none; (what the agent said, the spawn's
    argv and preexec_fn)."""
    import asyncio

    from eval import agent_call
    from sandbox.none import NoneLauncher
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
    [spawned] = seen
    return json.loads(stream.read_text()), spawned


def test_an_agent_is_spawned_bare_when_the_guardian_watches(tmp_path: Path, monkeypatch) -> None:
    """With the guardian (eval/guardian.py) watching, the agent is spawned under its keeper alone (eval/cell_keeper.py):
    no setpriv exec in front (~1 ms of CPU per agent) and no preexec_fn (a full fork of the harness); the keeper gives
    the agent its own parent-death signal."""
    from eval import guardian
    from sandbox.none import kept
    assert guardian.ready()
    said, spawned = spawn_recording(tmp_path, monkeypatch)
    assert spawned == {"argv": tuple(kept([sys.executable, str(tmp_path / "agent.py")])), "preexec_fn": None}
    assert said["pdeathsig"] == signal.SIGKILL


def test_without_a_guardian_an_agent_dies_with_the_harness_without_a_fork_of_it(tmp_path: Path, monkeypatch) -> None:
    """Where no guardian runs, the agent gets SIGKILL as its parent-death signal, and the spawn passes no preexec_fn:
    one would force a full fork of the harness (~4 ms of CPU in the parent and as much in the child per agent)."""
    from eval import guardian
    if reaper._setpriv() is None:
        pytest.skip("util-linux's setpriv is not installed")
    monkeypatch.setattr(guardian, "ready", lambda: False)
    said, spawned = spawn_recording(tmp_path, monkeypatch)
    assert said["pdeathsig"] == signal.SIGKILL and spawned["preexec_fn"] is None
    from sandbox.none import kept
    assert spawned["argv"] == (reaper._setpriv(), "--pdeathsig", "KILL", "--", *kept([sys.executable, str(tmp_path / "agent.py")]))


def test_the_guardian_kills_the_groups_still_running_when_its_harness_ends() -> None:
    """eval/guardian_watch.py, fed as the harness feeds it: at the pipe's end it kills each group still on its list
    (the leader and the rest of its group), and leaves alone a group the harness reaped itself and a pid whose start
    time says it now names another process."""
    from eval import guardian
    sleep = [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
             "'import time; time.sleep(60)']); time.sleep(60)"]
    kept, reaped, recycled = (subprocess.Popen(sleep, start_new_session=True) for _ in range(3))
    read, write = os.pipe()
    watcher = subprocess.Popen([sys.executable, "-I", "-S", str(guardian.WATCH)], stdin=read, start_new_session=True)
    os.close(read)
    tools: dict[int, list[int]] = {}
    try:
        time.sleep(0.5)   # each leader has started its tool
        tools = {p.pid: [int(t) for t in Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()]
                 for p in (kept, reaped, recycled)}
        os.write(write, f"+{kept.pid} {reaper._start_time(kept.pid)}\n+{reaped.pid} {reaper._start_time(reaped.pid)}\n"
                        f"+{recycled.pid} 1\n-{reaped.pid}\n".encode())
        time.sleep(0.2)
        assert kept.poll() is None and watcher.poll() is None     # the harness lives: nothing is touched
        os.close(write)
        watcher.wait(10)
        assert kept.wait(10) == -signal.SIGKILL and wait_for(lambda: all(gone(t) for t in tools[kept.pid]), 10)
        assert reaped.poll() is None and recycled.poll() is None
        assert not any(gone(t) for t in tools[reaped.pid] + tools[recycled.pid])
    finally:
        for p in (kept, reaped, recycled):
            for t in tools.get(p.pid, []):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(t, signal.SIGKILL)
            p.kill()
            p.wait()


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


def test_a_forked_child_of_the_harness_holds_no_guardian_of_its_own_parent() -> None:
    """A child forked from the harness (os.fork) does not write to the harness's watcher: it starts its own, and the
    harness's pipe is closed in it, so the harness's watcher still sees the harness's end alone."""
    from eval import guardian
    assert guardian.ready()
    parent_watcher, parent_pipe = guardian._state[2].pid, guardian._state[1]
    read, write = os.pipe()
    child = os.fork()
    if child == 0:   # the forked child: report, then leave at once (no pytest teardown here)
        try:
            closed = False
            try:
                os.fstat(parent_pipe)
            except OSError:
                closed = True
            fresh = guardian._state is None and guardian.ready() and guardian._state[2].pid != parent_watcher
            os.write(write, json.dumps([closed, fresh]).encode())
        finally:
            os._exit(0)
    os.close(write)
    said = json.loads(os.read(read, 100).decode())
    os.close(read)
    os.waitpid(child, 0)
    assert said == [True, True]
    assert guardian._state[2].pid == parent_watcher and guardian._state[2].poll() is None
