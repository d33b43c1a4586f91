"""The harness's half of the SDK agent: the tool-use loop on one warm client, the tools in the sandboxed process.

A process that runs cells (the local harness, a Ray worker) imports the SDK once and keeps one connection
pool per event loop (its TLS context built once); each call gets a cheap client on it, pointed at that call's
metering proxy with its one-cell nonce, exactly what the agent process was given before, so metering,
the budget and the key's distance from the agent are unchanged. The spawned process is toolserver.py (stdlib
only): the loop sends it each tool call over JSON lines and finally the exit code it is to end with, so the
watchdog, the group kill and the exit-code contract see one agent process as before.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import weakref
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import httpx2  # the SDK's own HTTP library

from eval.agents.loop import converse, count_request, options_from_env
from eval.agents.stream import StreamWriter

# One connection pool per event loop (a pool is bound to its loop; a Ray worker runs each cell in a loop of its
# own) and per kind of route; the TLS context, ~40-60 ms of CPU to build, once per process.
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, anthropic.DefaultAsyncHttpxClient]] = \
    weakref.WeakKeyDictionary()
_tls: list[ssl.SSLContext] = []
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _pool(trust_env: bool) -> anthropic.DefaultAsyncHttpxClient:
    pools = _pools.setdefault(asyncio.get_running_loop(), {})
    if trust_env not in pools:
        _tls[:] = _tls or [httpx2.create_ssl_context()]
        pools[trust_env] = anthropic.DefaultAsyncHttpxClient(verify=_tls[0], trust_env=trust_env,
                                                             event_hooks={"request": [count_request]})
    return pools[trust_env]


class ToolServerGone(RuntimeError):
    """The sandboxed process stopped answering (it exited or was killed); its stderr says why."""


def client_for(api: Mapping[str, str], timeout_s: float) -> anthropic.AsyncAnthropic:
    """This call's client on the event loop's warm connection pool, given the call's API (its proxy and nonce)
    explicitly: nothing is read from the harness's own environment."""
    base_url = api.get("ANTHROPIC_BASE_URL") or None
    # the metering proxy is reached directly, as the agent process did (its env had no network proxy variables);
    # only a call straight to the API honours the harness's HTTPS_PROXY / NO_PROXY
    http = _pool(trust_env=urlsplit(base_url or "").hostname not in LOOPBACK)
    key = api.get("ANTHROPIC_API_KEY") or ("" if api.get("ANTHROPIC_AUTH_TOKEN") else "local-server")
    credential = {"api_key": key} if key else {"auth_token": api["ANTHROPIC_AUTH_TOKEN"]}
    return anthropic.AsyncAnthropic(**credential, base_url=base_url or "https://api.anthropic.com",
                                    timeout=timeout_s, http_client=http)


class RemoteTools:
    """The loop's `Tools`, answered by the tool server over its stdin/stdout."""

    def __init__(self, proc: asyncio.subprocess.Process, hello: dict) -> None:
        self.proc, self.names, self._schemas = proc, list(hello["tools"]), list(hello["schemas"])

    def schemas(self) -> list[dict]:
        return self._schemas

    async def ask(self, request: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise ToolServerGone("the agent's tool process is gone (see agent.stderr)") from None
        line = await self.proc.stdout.readline()
        if not line:
            raise ToolServerGone("the agent's tool process is gone (see agent.stderr)")
        return json.loads(line)

    async def run(self, name: str, args: object) -> tuple[str, bool]:
        answer = await self.ask({"tool": name, "input": args})
        return str(answer["text"]), bool(answer["is_error"])

async def drive(proc: asyncio.subprocess.Process, *, role: str, config: Path | None, env: Mapping[str, str],
                api: Mapping[str, str], prompt: str, stream: Path, stderr: Path) -> None:
    """The whole conversation with the tool server `proc`: its hello, the loop (writing `stream`), then its exit
    code; a failure here is a line in its `stderr` and exit 1. Cancelled (a watchdog kill, Ctrl-C), it stops."""
    def log(line: str) -> None:
        with open(stderr, "a", encoding="utf-8") as err:   # the child appends to it too (opened O_APPEND)
            err.write(line + "\n")
    code, writer = 1, None
    try:
        assert proc.stdout is not None
        line = await proc.stdout.readline()
        if not line:
            return   # it died starting: its exit code and stderr tell
        seen = json.loads(line)["hello"]
        options = options_from_env(role, env)
        writer = StreamWriter(stream)
        writer.init(model=options.model, cwd=seen["cwd"], tools=seen["tools"], skills=seen["skills"])
        tools = RemoteTools(proc, seen)

        async def settle(text: str) -> None:
            await tools.ask({"settle": text})
        code = await converse(client_for(api, options.timeout_s), options, tools, writer, system=seen["system"],
                              prompt=prompt, config=config, settle=settle if role == "mutator" else None, log=log)
    except Exception as err:
        log(f"anthropic_agent: harness loop failed: {type(err).__name__}: {err}")
    finally:
        if writer is not None:
            writer.close()   # already closed after its result event; here when cut off
        if proc.stdin is not None and not proc.stdin.is_closing():
            try:
                proc.stdin.write(json.dumps({"exit": code}).encode() + b"\n")
                proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError, RuntimeError):
                pass
