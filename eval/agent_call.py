"""One agent call: the agent-process contract and the one way the harness runs an agent under it.

Owns the SM_* names an agent finds in its environment, the staging of a cell dir and of a mutator
workspace, spawning (secret pipe, launcher, watchdog, group kill), reading the stream once, pricing the
call by one rule, and the result.json a mutator-role call leaves. The build cell, the mutator, the meta
skill and the solve phase's bare cells all run through `call()`; nothing else spawns an agent.
Given a meter file, a process that may call the model API (its environment carries a key or a base URL)
talks to it only through a metering loopback proxy (eval/agents/key_proxy.py) that holds the real key and
appends each response's usage as it is served (eval/agents/meter.py).
Never imports mutator/; never decides what a call's outcome means for a cell or an attempt.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from eval import reaper
from eval.agents import tool_server_args
from eval.agents.meter import read_meter
from eval.cost import Price, Usage, usd
from eval.environment import CREDENTIALS, allowed_env, runs_our_backend
from eval.other_skills import install
from eval.skill_set import install_genome
from eval.snapshot import copy_file, copy_tree
from eval.stream_metrics import StreamMetrics, read_stream
from sandbox import Launcher, dies_with_parent

# ---- the names (README "Agent process contract"); an agent reads these, the harness sets them here only ----
PROMPT_FILE = "SM_PROMPT_FILE"   # the prompt as a file (also on stdin)
STREAM = "SM_STREAM"             # the stream.jsonl to append stream-json events to
SKILL_DIR = "SM_SKILL_DIR"       # the skill's folder; absent in a bare solve
MODEL = "SM_MODEL"
MAX_TURNS = "SM_MAX_TURNS"
CELL_SEED = "SM_CELL_SEED"       # a build cell's seed (the evaluation key, task and replicate)
TASK = "SM_TASK"                 # "meta" for the meta-skill call; absent otherwise
ROUND = "SM_ROUND"               # a mutator-role call's round
SIBLING = "SM_SIBLING"           # a mutator-role call's sibling within its round
# CREDENTIALS reach our backends through a pipe, never their environment: an environment is readable in
# /proc/PID/environ by every process of the sandbox (bwrap's own pid 1 included), and printed by `env`.
SECRETS_FD = "SM_SECRETS_FD"     # eval/agents/hide.py::take_secrets reads it
NAMES = (PROMPT_FILE, STREAM, SKILL_DIR, MODEL, MAX_TURNS, CELL_SEED, TASK, ROUND, SIBLING, SECRETS_FD)

PROMPT_NAME, STREAM_NAME, RESULT_NAME = "prompt.md", "stream.jsonl", "result.json"
TRUNCATED = b"\n[truncated by the harness: output over the cap]\n"
# one line of a tool server's answers (a clipped tool output, JSON-escaped, is far below)
LINE_LIMIT = 64 * 2**20


# ---- staging -----------------------------------------------------------------------------------------------
def stage_cell(cell_root: Path, *, fixtures: Path, inputs: Sequence[str], skill_dir: Path | None,
               skill_name: str, others: Sequence[Path] = ()) -> Path:
    """A fresh cell dir: work/ holds the task's declared inputs, the skill at .claude/skills/<name>/ (a skill
    set's members each at .claude/skills/<member>/) and any other installed skills (--with-skills) read-only
    beside it."""
    if cell_root.exists():
        shutil.rmtree(cell_root)  # left by a crashed run: an unfinished cell starts over
    work = cell_root / "work"
    work.mkdir(parents=True)
    for rel in inputs:
        target = work / rel
        if target.parent != work:
            target.parent.mkdir(parents=True, exist_ok=True)
        copy_file(fixtures / rel, target)
    if skill_dir is not None:
        install_genome(skill_dir, work / ".claude" / "skills", skill_name)
    install(tuple(others), work / ".claude" / "skills")
    return work


def stage_workspace(workspace: Path, parent_dir: Path, briefing: str, refs: Mapping[str, Path]) -> Path:
    """A fresh mutator-role workspace: skill/ (the editable copy), refs/<name>/ and
    briefing.md; returns skill/."""
    if workspace.exists():
        shutil.rmtree(workspace)  # a crashed attempt's workspace is redone from scratch
    workspace.mkdir(parents=True)
    copy_tree(parent_dir, workspace / "skill")
    for name, ref_dir in refs.items():
        copy_tree(ref_dir, workspace / "refs" / name)
    (workspace / "briefing.md").write_text(briefing, encoding="utf-8")
    return workspace / "skill"


# ---- one call ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AgentCall:
    """Everything one agent process is run with. `home` holds prompt.md, stream.jsonl, agent.stdout/.stderr
    (and result.json for a mutator-role call) and is the agent's HOME; `cwd` is its working dir."""
    argv: Sequence[str]
    agent: str                      # the implementation id: the pricing rule reads it (`cost_of`)
    model: str
    max_turns: int
    price: Price
    prompt: str
    cwd: Path
    home: Path
    launcher: Launcher
    silence_ms: int
    heartbeat_ms: int
    skill_dir: Path | None = None
    writable: Sequence[Path] = ()
    readable: Sequence[Path] = ()
    # folder seen -> host folder bound there read-only
    shown: Mapping[Path, Path] = field(default_factory=dict)
    network: bool = False
    wall_ms: int = 0
    max_output_bytes: int = 0
    # a mutator-role call: result.json (and its stream) pre-created, bound writable
    result_json: bool = False
    seed: int | None = None
    round_no: int | None = None
    sibling: int | None = None
    task: str = ""
    # more variables (a test's FAKE_* hooks); never SM_*
    env: Mapping[str, str] = field(default_factory=dict)
    meter: Path | None = None       # where the metering proxy appends each served response's usage

    @property
    def stream(self) -> Path:
        return self.home / STREAM_NAME

    @property
    def result_path(self) -> Path:
        return self.home / RESULT_NAME


@dataclass(frozen=True)
class Cost:
    """What one call is charged, and the two figures the rule chose between."""
    priced_usd: float = 0.0     # the stream's usage at config.json prices
    reported_usd: float = 0.0   # the agent's own total_cost_usd, from a stream that keeps the contract
    usd: float = 0.0            # charged: see `cost_of`


@dataclass(frozen=True)
class CallResult:
    run: AgentRun
    metrics: StreamMetrics
    cost: Cost


def contract_env(spec: AgentCall, source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment (eval/environment.py) with the contract's
    names; HOME is the call's own."""
    named = {PROMPT_FILE: str(spec.home / PROMPT_NAME), STREAM: str(spec.stream), MODEL: spec.model,
             MAX_TURNS: str(spec.max_turns)}
    for name, value in ((CELL_SEED, spec.seed), (ROUND, spec.round_no), (SIBLING, spec.sibling),
                        (TASK, spec.task or None)):
        if value is not None:
            named[name] = str(value)
    env = allowed_env(home=spec.home, argv=spec.argv, extra={**spec.env, **named}, source=source)
    env.pop(SKILL_DIR, None)   # never one inherited from the harness: a bare call has no skill
    if spec.skill_dir is not None:
        env[SKILL_DIR] = str(spec.skill_dir)
    return env


def cost_of(metrics: StreamMetrics | None, price: Price, *, agent: str) -> Cost:
    """The one place a call's cost is read from its stream. A command of your own (`command@...`) is charged
    its reported total_cost_usd when it gives one (it knows its real prices and models); our own backends and
    the fakes are always priced from config.json, so one table governs them. A stream that breaks the contract
    reports nothing (never a negative cost)."""
    usage = metrics.usage if metrics else Usage()
    priced = usd(price, usage)
    reported = metrics.reported_cost_usd if metrics and not metrics.invalid else 0.0
    return Cost(priced, reported, reported if agent.startswith("command@") and reported > 0 else priced)


def prepare(spec: AgentCall) -> None:
    """The call's own files before it starts: prompt.md, and for a mutator-role call an empty result.json and
    stream.jsonl (the only files outside skill/ it may write: a sandbox binds them). Idempotent, so a caller
    that snapshots the workspace first (mutator/round/tamper.py) prepares, snapshots, then calls."""
    spec.home.mkdir(parents=True, exist_ok=True)
    (spec.home / PROMPT_NAME).write_text(spec.prompt, encoding="utf-8")
    if spec.result_json:
        for path in (spec.result_path, spec.stream):
            path.touch()


def read_call(stream: Path, price: Price, *, agent: str,
              meter: Path | None = None) -> tuple[StreamMetrics, Cost]:
    """A finished call's stream, read once and priced: the one seam where a call's cost is read (call() uses
    it when the agent is gone; a re-graded cell reads its kept stream through it again). When the call's
    traffic passed the metering proxy, its usage is what the meter saw served (cut streams included), priced
    at config.json prices whatever the agent reported."""
    metrics = read_stream(stream)
    served = read_meter(meter) if meter is not None else None
    if served is None:
        return metrics, cost_of(metrics, price, agent=agent)
    metrics = replace(metrics, usage=Usage(**served.total()))
    reported = metrics.reported_cost_usd if not metrics.invalid else 0.0
    priced = usd(price, metrics.usage)
    return metrics, Cost(priced, reported, priced)


async def call(spec: AgentCall) -> CallResult:
    """Run one agent under the contract: prepare its files, spawn it through its launcher under the watchdog,
    read its stream once and price it."""
    prepare(spec)
    writable = [*spec.writable, *((spec.result_path, spec.stream) if spec.result_json else ())]
    run = await spawn(spec.argv, cwd=spec.cwd, env=contract_env(spec), prompt=spec.prompt, stream=spec.stream,
                      log_dir=spec.home, launcher=spec.launcher, writable=writable, readable=spec.readable,
                      shown=spec.shown, network=spec.network, silence_ms=spec.silence_ms,
                      heartbeat_ms=spec.heartbeat_ms,
                      wall_ms=spec.wall_ms, max_output_bytes=spec.max_output_bytes, meter=spec.meter)
    return CallResult(run, *read_call(spec.stream, spec.price, agent=spec.agent, meter=spec.meter))


def read_result_json(path: Path, *, who: str = "the mutator", shape: str = "a JSON object") -> dict:
    """The object a mutator-role call wrote to result.json, or ValueError saying what is wrong with it."""
    if not path.is_file() or path.stat().st_size == 0:  # staged empty so a sandbox can bind it writable
        raise ValueError(f"{who} wrote no result.json")
    raw = path.read_text(encoding="utf-8", errors="replace")
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"result.json is not JSON ({err}); it reads: {raw[:500]!r}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"result.json must be {shape}")
    return obj


# ---- spawning ----------------------------------------------------------------------------------------------
MODEL_API_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")
# The child reaches the proxy on 127.0.0.1 directly; the proxy itself honours the user's network proxies.
NETWORK_PROXIES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


def metering(env: Mapping[str, str], meter: Path | None, unix_path: Path | None = None):
    """The env pointed at a fresh metering proxy (its nonce for the key), and the proxy; unchanged when there
    is no meter or the process is given no model API (a fake, a command not passed the key). With `unix_path`
    the proxy also listens there (a container launcher's socket: sandbox/container_launcher.py)."""
    env = dict(env)
    if meter is None or not any(env.get(name) for name in MODEL_API_VARS):
        return env, None
    # imported here: an agent process imports this module for the contract's names alone
    from eval.agents.key_proxy import KeyProxy, credentials
    proxy = KeyProxy(env.get("ANTHROPIC_BASE_URL", ""), credentials(env), meter=meter,
                     unix_path=unix_path).start()
    for name in ("ANTHROPIC_AUTH_TOKEN", *NETWORK_PROXIES):
        env.pop(name, None)
    env.update(ANTHROPIC_BASE_URL=proxy.base_url, ANTHROPIC_API_KEY=proxy.nonce)
    return env, proxy


def secret_pipe(argv: Sequence[str], env: Mapping[str, str]) -> tuple[dict[str, str], int | None]:
    """The env without the credentials and the read end of a pipe holding them (None when there are none)."""
    env = dict(env)
    if not runs_our_backend(argv):
        return env, None
    held = {name: env.pop(name) for name in CREDENTIALS if name in env}
    if not held:
        return env, None
    read, write = os.pipe()
    with os.fdopen(write, "w", encoding="utf-8") as pipe:
        # a few hundred bytes: within the pipe's buffer, so no reader is needed yet
        pipe.write(json.dumps(held))
    env[SECRETS_FD] = str(read)
    return env, read


@dataclass(frozen=True)
class AgentRun:
    timed_out: bool
    returncode: int
    reason: str
    stderr_path: Path
    overflow: bool = False

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-limit:].strip()
        except OSError:
            return ""

    def failure(self, has_result: bool) -> str:
        """Why this run counts as an agent error ('' when it does not)."""
        if self.timed_out or self.overflow:
            return self.reason
        if self.returncode != 0:
            why = f"agent exited {self.returncode}"
        elif not has_result:
            why = "agent exited 0 without a result event"
        else:
            return ""
        return f"{why}; stderr: {self.stderr_tail() or '(empty)'}"


async def spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], prompt: str, stream: Path,
                log_dir: Path, launcher: Launcher, writable: Sequence[Path], readable: Sequence[Path] = (),
                shown: Mapping[Path, Path] | None = None, network: bool = False, silence_ms: int,
                heartbeat_ms: int, wall_ms: int = 0,
                max_output_bytes: int = 0, meter: Path | None = None) -> AgentRun:
    """One process: wrapped by its launcher, the prompt on stdin, killed with its whole group when done; with
    a meter, its model API calls go through a metering proxy closed only after the process group is gone.
    Our SDK agent's process is its tool server: its loop runs here, on this process's warm client, pointed at
    that same proxy, and the process is given no model API at all (eval/agents/warm.py)."""
    env, proxy = metering(env, meter, getattr(launcher, "api_socket", None))
    try:
        talk = None
        served = tool_server_args(argv)
        if served is not None:
            import asyncio
            import importlib
            # the SDK, imported once per process that runs agents (seconds of CPU), off the event loop: the
            # other cells' supervision goes on meanwhile
            warm = await asyncio.to_thread(importlib.import_module, "eval.agents.warm")
            api = {name: env.pop(name) for name in MODEL_API_VARS if name in env}
            talk = functools.partial(warm.drive, role=served[0], config=served[1], env=dict(env), api=api,
                                     prompt=prompt, stream=stream, stderr=log_dir / "agent.stderr")
        return await _spawn(argv, cwd=cwd, env=env, prompt=prompt, stream=stream, log_dir=log_dir,
                            launcher=launcher, writable=writable, readable=readable, shown=shown,
                            network=network,
                            silence_ms=silence_ms, heartbeat_ms=heartbeat_ms, wall_ms=wall_ms,
                            max_output_bytes=max_output_bytes, talk=talk)
    finally:
        if proxy is not None:
            import asyncio
            # every response it was served is on the meter; off the event loop, since a request whose caller
            # left may hold the close for its grace (key_proxy.METER_GRACE_S) while other cells go on
            await asyncio.to_thread(proxy.close)


async def _spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], prompt: str, stream: Path,
                 log_dir: Path, launcher: Launcher, writable: Sequence[Path], readable: Sequence[Path],
                 shown: Mapping[Path, Path] | None, network: bool, silence_ms: int, heartbeat_ms: int,
                 wall_ms: int,
                 max_output_bytes: int, talk: Callable[[Any], Awaitable[None]] | None = None) -> AgentRun:
    # imported here, not at the top: an agent process imports this module for the contract's names alone
    import asyncio

    from eval import child_watch, guardian
    from eval.supervisor import kill_and_reap, supervise
    child_watch.install()
    stderr_path = log_dir / "agent.stderr"
    stderr_path.unlink(missing_ok=True)   # opened to append: a harness-side loop (`talk`) appends to it too
    # no pipe passes into a container: there our backend's key is the proxy's one-cell nonce, from its env
    env, secrets = secret_pipe(argv, env) if not getattr(launcher, "api_socket", None) else (dict(env), None)
    wrapped = launcher.wrap(argv, cwd=cwd, writable=writable, readable=readable, network=network, env=env,
                            **({"shown": shown} if shown else {}))
    # the guardian kills the agent's group when the harness dies (bwrap's sandbox also goes by itself); where
    # no guardian runs, a launcher other than bwrap gets a parent-death signal through setpriv
    wrapped, preexec = (wrapped, None) if guardian.ready() or dies_with_parent(launcher) else \
        reaper.dying_with_parent(wrapped, cwd=cwd, env=env)
    with open(log_dir / "agent.stdout", "wb") as out, open(stderr_path, "ab") as err:
        start = asyncio.ensure_future(asyncio.create_subprocess_exec(
            *wrapped, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stderr=err, start_new_session=True,
            # with `talk`, stdout is the tool server's answers to the loop
            stdout=out if talk is None else asyncio.subprocess.PIPE, limit=LINE_LIMIT,
            preexec_fn=preexec, pass_fds=() if secrets is None else (secrets,)))
        try:
            proc = await asyncio.shield(start)
        except asyncio.CancelledError:
            # Ctrl-C or a deadline while the process starts: asyncio cannot cancel a start cleanly (Python
            # 3.11 may then wait forever for the stdin pipe it connects after closing the others), so the
            # start finishes and its group is killed and reaped, then the cancellation goes on
            with contextlib.suppress(Exception):
                await kill_and_reap(await start)
            raise
        finally:
            if secrets is not None:
                os.close(secrets)
        guardian.watch(proc.pid, reaper.register(proc.pid))
        loop_task = None
        try:
            if talk is not None:
                loop_task = asyncio.ensure_future(talk(proc))
            else:
                await send_prompt(proc, prompt)
            watch = await supervise(proc, stream, silence_ms=silence_ms, heartbeat_ms=heartbeat_ms,
                                    wall_ms=wall_ms, outputs=(log_dir / "agent.stdout", stderr_path),
                                    max_output_bytes=max_output_bytes)
        finally:
            if loop_task is not None:   # done when the process ended on its word; else cut off with it
                loop_task.cancel()
                await asyncio.gather(loop_task, return_exceptions=True)
            await kill_and_reap(proc)  # also kills anything the agent left running
            guardian.forget(proc.pid)
            reaper.unregister(proc.pid)
    if max_output_bytes:
        for path in (stream, log_dir / "agent.stdout", stderr_path):
            truncate(path, max_output_bytes)
    return AgentRun(watch.timed_out, watch.returncode, watch.reason, stderr_path, watch.overflow)


async def send_prompt(proc, prompt: str) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(prompt.encode("utf-8"))
        await proc.stdin.drain()
        proc.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # an agent that ignores stdin may exit before reading it


def truncate(path: Path, limit: int) -> None:
    """Keep the first `limit` bytes of a file that grew past it, with a marker saying so."""
    try:
        if path.stat().st_size <= limit:
            return
        with open(path, "r+b") as f:
            f.truncate(limit)
            f.seek(limit)
            f.write(TRUNCATED)
    except OSError:
        pass
