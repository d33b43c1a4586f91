"""Our SDK agent's start-up CPU (bench/overhead.py's start-up line; `--agent-startup` prints only it): CPU
seconds from its spawn until the local Messages-API server receives its first request, the agent process's
(read from /proc as the request arrives) plus the harness thread's that spawned it, warm (the loop in the
harness, the tools in a spawned tool server) and as one whole agent process, beside a bare `python -c pass`
and `python -c 'import anthropic'`.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import statistics
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval import agent_call  # noqa: E402
from eval.cells import Contract  # noqa: E402
from eval.cost import Price  # noqa: E402
from eval.evaluate import EvalRequest, evaluate  # noqa: E402
from eval.jobs import CellSettings  # noqa: E402
from eval.suite import Suite  # noqa: E402
from sandbox import get_launcher  # noqa: E402


def _cpu_s(pid: int) -> float | None:
    """A live process's CPU so far (user + system), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _mine(pid: int) -> bool:
    """Whether a process descends from this one (other processes on the machine may run our agent too)."""
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
        if pid == os.getpid():
            return True
    return False


def _thread_cpu_s(tid: int) -> float:
    """CPU so far of one thread of this process (ns resolution, from schedstat)."""
    return int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0]) / 1e9


def startup(suite: Suite, scratch: Path, cells: int, skill: Path, price: Price) -> dict[str, dict]:
    """CPU seconds of our SDK agent from spawn until the local server receives its first request (cells run
    one at a time): the agent process (read from /proc as the request arrives) plus the harness thread that
    spawned it (from the spawn on). `warm`: as the harness runs it (the loop here, the tool server spawned);
    `process`: the whole agent in one process (eval/agents/anthropic_agent.py, as before issue 28). Beside
    `python -c pass` and `python -c 'import anthropic'` run bare."""
    from tests.agents.messages_server import MessagesServer, demo_agent

    from eval.agents import AnthropicBackend
    mark: dict[str, float] = {}
    # agent pid -> (its CPU, the spawning thread's CPU since the spawn)
    seen: dict[int, tuple[float, float]] = {}
    real_spawn = agent_call.spawn

    async def spawn(*args, **kwargs):
        mark.update(tid=threading.get_native_id(), cpu=_thread_cpu_s(threading.get_native_id()))
        return await real_spawn(*args, **kwargs)

    def responder(body: dict):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) not in seen:
                try:
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if any(part.endswith((b"anthropic_agent.py", b"toolserver.py")) for part in argv) \
                        and _mine(int(entry.name)):
                    cpu = _cpu_s(int(entry.name))
                    if cpu is not None:
                        seen[int(entry.name)] = (cpu, _thread_cpu_s(int(mark["tid"])) - mark["cpu"])
        return demo_agent(body)
    server = MessagesServer()
    server.responder = responder
    saved = {k: os.environ.get(k) for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    os.environ.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="bench")
    agent_call.spawn = spawn
    found: dict[str, dict] = {}
    try:
        one = dataclasses.replace(suite, tasks=suite.tasks[:cells])
        for side, argv in (("process", [sys.executable,
                                        str(ROOT / "eval" / "agents" / "anthropic_agent.py")]),
                           ("warm", list(AnthropicBackend().argv("build")))):
            seen.clear()
            evaluate(EvalRequest(
                skill_dir=skill, skill_name="csv-clean", suite=one, key=f"bench-startup-{side}",
                cells_root=scratch / f"startup-{side}", price=price, concurrency=1,
                contract=Contract(model="claude-haiku-4-5", replicates=1, max_turns=30,
                                  agent=f"bench-startup-{side}", silence_ms=600_000, heartbeat_ms=300_000),
                settings=CellSettings(agent_argv=argv, launcher=get_launcher("none"), grader_timeout_s=60,
                                      network=True)))
            # in spawn order: the first warm cell pays the harness's one SDK import
            runs = list(seen.values())
            found[side] = {"agent": statistics.median(a for a, _ in runs),
                           "harness": statistics.median(h for _, h in runs),
                           "total": statistics.median(a + h for a, h in runs), "first": sum(runs[0]),
                           "cells": len(runs)}
    finally:
        agent_call.spawn = real_spawn
        server.close()
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)

    def bare(code: str) -> float:
        times = []
        for _ in range(3):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-c", code], check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return statistics.median(times)
    return {**found, "bare": {"pass": bare("pass"), "import": bare("import anthropic")}}


def print_startup(found: dict[str, dict]) -> None:
    bare, load = found["bare"], os.getloadavg()[0]
    print(f"SDK agent start-up, CPU s from spawn to its first request (median of {found['warm']['cells']} "
          f"cells run one at a time, load {load:.1f}; agent process + the harness thread that spawned it):")
    for side, label in (("process", "whole agent process (before)"), ("warm", "warm loop + tool server")):
        f = found[side]
        print(f"  {label:<29} {f['total']:.3f} s  (agent process {f['agent']:.3f}, harness "
              f"{f['harness']:.3f}; first cell {f['first']:.3f})")
    print(f"  bare `python -c pass` {bare['pass']:.3f} s, `import anthropic` {bare['import']:.3f} s (the "
          "warm path pays it once per process that runs cells: its first cell)")
