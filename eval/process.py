"""Spawn one agent process under the agent contract, through a launcher, under the watchdog.

Used for build agents (cells) and the mutator alike, so both get the same env contract, the same
process-group kill and the same stderr capture. Given a meter file, a process that may call the model API
(its environment carries a key or a base URL) talks to it only through a metering loopback proxy
(eval/agents/key_proxy.py) that holds the real key and appends each response's usage as it is served.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval import reaper
from eval.agents.key_proxy import KeyProxy, credentials
from eval.environment import CREDENTIALS, runs_our_backend
from eval.supervisor import kill_and_reap, supervise
from sandbox import Launcher

TRUNCATED = b"\n[truncated by the harness: output over the cap]\n"
# CREDENTIALS are handed to our backends through a pipe, never in their environment: an environment is readable
# in /proc/PID/environ by every process of the sandbox (bwrap's own pid 1 included), and printed by `env`.
SECRETS_FD = "SM_SECRETS_FD"   # eval/agents/hide.py::take_secrets reads it


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
        pipe.write(json.dumps(held))   # a few hundred bytes: within the pipe's buffer, so no reader is needed yet
    env[SECRETS_FD] = str(read)
    return env, read


MODEL_API_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")
# The child reaches the proxy on 127.0.0.1 directly; the proxy itself honours the user's network proxies.
NETWORK_PROXIES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


def metering(env: Mapping[str, str], meter: Path | None) -> tuple[dict[str, str], KeyProxy | None]:
    """The env pointed at a fresh metering proxy (its nonce for the key), and the proxy; unchanged when there
    is no meter or the process is given no model API (a fake, a command not passed the key)."""
    env = dict(env)
    if meter is None or not any(env.get(name) for name in MODEL_API_VARS):
        return env, None
    proxy = KeyProxy(env.get("ANTHROPIC_BASE_URL", ""), credentials(env), meter=meter).start()
    for name in ("ANTHROPIC_AUTH_TOKEN", *NETWORK_PROXIES):
        env.pop(name, None)
    env.update(ANTHROPIC_BASE_URL=proxy.base_url, ANTHROPIC_API_KEY=proxy.nonce)
    return env, proxy


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


async def run_agent_process(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], prompt: str,
                            stream: Path, log_dir: Path, launcher: Launcher, writable: Sequence[Path],
                            readable: Sequence[Path] = (), network: bool = False,
                            silence_ms: int, heartbeat_ms: int, wall_ms: int = 0,
                            max_output_bytes: int = 0, meter: Path | None = None) -> AgentRun:
    env, proxy = metering(env, meter)
    try:
        return await _run(argv, cwd=cwd, env=env, prompt=prompt, stream=stream, log_dir=log_dir, launcher=launcher,
                          writable=writable, readable=readable, network=network, silence_ms=silence_ms,
                          heartbeat_ms=heartbeat_ms, wall_ms=wall_ms, max_output_bytes=max_output_bytes)
    finally:
        if proxy is not None:
            proxy.close()   # after the process group is gone: every response it was served is on the meter


async def _run(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], prompt: str, stream: Path, log_dir: Path,
               launcher: Launcher, writable: Sequence[Path], readable: Sequence[Path], network: bool,
               silence_ms: int, heartbeat_ms: int, wall_ms: int, max_output_bytes: int) -> AgentRun:
    wrapped = launcher.wrap(argv, cwd=cwd, writable=writable, readable=readable, network=network)
    stderr_path = log_dir / "agent.stderr"
    env, secrets = secret_pipe(argv, env)
    with open(log_dir / "agent.stdout", "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = await asyncio.create_subprocess_exec(
                *wrapped, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=out, stderr=err,
                start_new_session=True, preexec_fn=reaper.die_with_parent,
                pass_fds=() if secrets is None else (secrets,))
        finally:
            if secrets is not None:
                os.close(secrets)
        reaper.register(proc.pid)
        try:
            assert proc.stdin is not None
            try:
                proc.stdin.write(prompt.encode("utf-8"))
                await proc.stdin.drain()
                proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass  # an agent that ignores stdin may exit before reading it
            watch = await supervise(proc, stream, silence_ms=silence_ms, heartbeat_ms=heartbeat_ms,
                                    wall_ms=wall_ms, outputs=(log_dir / "agent.stdout", stderr_path),
                                    max_output_bytes=max_output_bytes)
        finally:
            await kill_and_reap(proc)  # also kills anything the agent left running
            reaper.unregister(proc.pid)
    if max_output_bytes:
        for path in (stream, log_dir / "agent.stdout", stderr_path):
            truncate(path, max_output_bytes)
    return AgentRun(watch.timed_out, watch.returncode, watch.reason, stderr_path, watch.overflow)


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
