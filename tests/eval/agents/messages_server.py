"""A local Messages-API server on 127.0.0.1 (aiohttp, JSON and SSE streaming) driven by scripts (tests only).

Tests queue replies (`server.script(...)`) or install a responder (a policy that reads the request
and answers like a model would). Every request and every served usage is logged, so a test can say
exactly what the agent was billed. A streamed reply is logged as it is sent: its message_start usage
first, its output tokens when message_delta goes out, so a stream cut short is logged as far as it went.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from fakes.csv_rules import CANONICAL_ORDER, apply_rules, to_csv_text

ROOT = Path(__file__).resolve().parents[3]
_ids = itertools.count(1)


# ---- replies -------------------------------------------------------------------------------------
@dataclass
class Reply:
    content: list[dict] = field(default_factory=list)
    stop_reason: str | None = "end_turn"
    usage: dict = field(default_factory=dict)
    status: int = 200                      # != 200: an error reply
    headers: dict = field(default_factory=dict)
    error_type: str = ""
    hang_s: float = 0.0                    # sleep before answering (a silent model)
    hang_mid_s: float = 0.0                # streamed: sleep after message_start (a long generation, cut by a kill)
    raw_body: str | None = None            # send this body as is (garbage)
    cut_mid: bool = False                  # streamed: the connection is closed after message_start (a cut stream)


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def tool_use(name: str, input: object, id: str | None = None) -> dict:
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):05d}", "name": name, "input": input}


def usage(i: int, o: int, cw: int = 0, cr: int = 0) -> dict:
    return {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw,
            "cache_read_input_tokens": cr}


def message(*content: dict, stop: str = "end_turn", use: dict | None = None) -> Reply:
    return Reply(list(content), stop, use or usage(100, 20))


def error(status: int, kind: str, headers: dict | None = None) -> Reply:
    return Reply(status=status, error_type=kind, headers=headers or {})


# ---- the server ----------------------------------------------------------------------------------
class MessagesServer:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.auth_keys: list[str] = []        # the key every /v1/messages request carried (x-api-key or Bearer)
        self.served: list[dict] = []          # usage of every message answered
        self.queue: list[Reply] = []
        self.responder: Callable[[dict], Reply] | None = None
        # Prompt caching, emulated when set: the minimum cacheable prefix in (estimated) tokens. The input
        # side of every usage is then computed from the request, as the API would bill it.
        self.cache_min_tokens: int | None = None
        self.cache: set[str] = set()          # prefix digests written by earlier requests
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner: web.AppRunner | None = None
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        with self.lock:
            self.queue.extend(replies)

    def served_usage(self, model: str | None = None, *, cells_only: bool = False) -> dict[str, int]:
        """Summed usage of every message answered (only those asked of `model`, when given; `cells_only`:
        without the run's API check, the one-token requests of mutator/round/api_check.py)."""
        keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        with self.lock:
            served = [u for u in self.served if (model is None or u["model"] == model)
                      and not (cells_only and u.get("check"))]
            return {k: sum(u.get(k, 0) for u in served) for k in keys}

    async def _start(self) -> int:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_route("*", "/{tail:.*}", self._other)
        self.runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return self.runner.addresses[0][1]

    def close(self) -> None:
        if self.runner is not None:
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        asyncio.run_coroutine_threadsafe(self._cancel_pending(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    async def _cancel_pending(self) -> None:
        """Handlers still sleeping (a scripted hang) are cancelled, not abandoned with the loop."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _next(self, body: dict) -> Reply:
        with self.lock:
            self.requests.append(body)
            if self.queue:
                return self.queue.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return error(500, "api_error")  # a test that runs out of script sees a loud failure

    async def _count_tokens(self, request: web.Request) -> web.Response:
        return web.json_response({"input_tokens": 10})

    async def _other(self, request: web.Request) -> web.Response:
        return web.json_response({"type": "error", "error": {"type": "not_found_error",
                                                             "message": f"no route {request.path}"}}, status=404)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self.lock:
            self.auth_keys.append(request.headers.get("x-api-key")
                                  or request.headers.get("authorization", "").removeprefix("Bearer "))
        reply = await asyncio.get_running_loop().run_in_executor(None, self._next, body)
        if reply.hang_s:
            await asyncio.sleep(reply.hang_s)
        if reply.raw_body is not None:
            return web.Response(text=reply.raw_body, content_type="application/json")
        if reply.status != 200:
            return web.json_response({"type": "error", "error": {"type": reply.error_type,
                                                                 "message": f"scripted {reply.status}"}},
                                     status=reply.status, headers=reply.headers)
        use = {**usage(0, 0), **reply.usage}
        if self.cache_min_tokens is not None:
            with self.lock:
                use.update(self.cache_usage(body))
        msg = {"id": f"msg_{next(_ids):06d}", "type": "message", "role": "assistant",
               "model": body.get("model", "?"), "content": reply.content, "stop_reason": reply.stop_reason,
               "stop_sequence": None, "usage": use}
        if not body.get("stream"):
            with self.lock:
                self.served.append({**use, "model": msg["model"], "check": is_check(body)})
            return web.json_response(msg)
        return await self._sse(request, msg, reply.hang_mid_s, reply.cut_mid)

    def cache_usage(self, body: dict) -> dict:
        """input / cache write / cache read tokens of one request, as prompt caching bills them: the longest
        prefix (tools -> system -> messages, block by block) an earlier request wrote is read; the prefix up
        to the last `cache_control` mark beyond it is written, when it reaches the minimum; the rest is input."""
        blocks = prompt_blocks(body)
        digest = hashlib.sha256(body.get("model", "?").encode())
        prefixes, total = [], 0
        for block in blocks:
            digest.update(json.dumps(strip_marks(block), sort_keys=True).encode())
            total += block_tokens(block)
            prefixes.append((digest.hexdigest(), total, "cache_control" in block))
        read = max((tokens for key, tokens, _ in prefixes if key in self.cache), default=0)
        marks = [(key, tokens) for key, tokens, marked in prefixes if marked and tokens >= self.cache_min_tokens]
        written = 0
        for key, tokens in marks:
            self.cache.add(key)
            written = max(written, tokens - read)
        return {"input_tokens": total - read - written, "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read}

    async def _sse(self, request: web.Request, msg: dict, hang_mid_s: float = 0.0,
                   cut: bool = False) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)

        async def send(kind: str, data: dict) -> None:
            await response.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())

        use = msg["usage"]
        start_usage = {**use, "output_tokens": 1}
        logged = {**start_usage, "model": msg["model"]}
        with self.lock:
            self.served.append(logged)
        await send("message_start", {"message": {**msg, "content": [], "stop_reason": None, "usage": start_usage}})
        await send("ping", {})
        if cut:
            assert request.transport is not None
            request.transport.close()   # mid-body: the reader sees a payload that never completes
            return response
        if hang_mid_s:
            await asyncio.sleep(hang_mid_s)
        for index, block in enumerate(msg["content"]):
            if block["type"] == "text":
                await send("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
                half = len(block["text"]) // 2
                for part in (block["text"][:half], block["text"][half:]):
                    await send("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": part}})
            else:
                await send("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
                raw = json.dumps(block["input"])
                half = len(raw) // 2
                for part in (raw[:half], raw[half:]):
                    await send("content_block_delta", {"index": index,
                                                       "delta": {"type": "input_json_delta", "partial_json": part}})
            await send("content_block_stop", {"index": index})
        with self.lock:
            logged["output_tokens"] = use["output_tokens"]
        await send("message_delta", {"delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": use["output_tokens"]}})
        await send("message_stop", {})
        await response.write_eof()
        return response


def is_check(body: dict) -> bool:
    """A run's API check (mutator/round/api_check.py): one token asked for, never streamed."""
    return body.get("max_tokens") == 1 and not body.get("stream")


# ---- prompt caching, emulated --------------------------------------------------------------------
def prompt_blocks(body: dict) -> list[dict]:
    """The request's prompt as cacheable blocks in the API's render order: tools, system, messages."""
    system = body.get("system") or []
    blocks = [dict(tool) for tool in body.get("tools") or []]
    blocks += [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
    for msg in body.get("messages", []):
        content = msg["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks += [{**part, "role": msg["role"]} for part in parts]
    return blocks


def strip_marks(block: dict) -> dict:
    return {k: v for k, v in block.items() if k != "cache_control"}


def block_tokens(block: dict) -> int:
    return max(1, len(json.dumps(strip_marks(block))) // 4)


# ---- policies: scripted "models" that read the conversation and act -------------------------------
def tool_history(body: dict) -> list[tuple[dict, str, bool]]:
    """(tool_use block, result text, is_error) for every call the agent has answered so far."""
    calls: dict[str, dict] = {}
    history = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                calls[block["id"]] = block
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                result = block.get("content")
                if isinstance(result, list):
                    result = "".join(part.get("text", "") for part in result)
                history.append((calls[block["tool_use_id"]], str(result), bool(block.get("is_error"))))
    return history


def first_user_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def system_text(body: dict) -> str:
    system = body.get("system") or ""
    return system if isinstance(system, str) else "".join(b.get("text", "") for b in system)


def turn_usage(body: dict, reply_content: list[dict]) -> dict:
    """Deterministic, distinct counts per turn: the tests sum what was served and compare with the DB."""
    turn = len(body.get("messages", []))
    return usage(200 + 37 * turn, 15 + len(json.dumps(reply_content)) // 8, 11 if turn == 1 else 0,
                 0 if turn == 1 else 53)


def csv_agent(body: dict) -> Reply:
    """A build model for the demo CSV tasks: read SKILL.md, then rules.json, then the input; write the output."""
    history = tool_history(body)
    done = {(call["name"], call["input"].get("path")): result for call, result, err in history if not err}
    location = re.search(r"<location>\s*(\S+)\s*</location>", system_text(body))
    names = re.findall(r"[\w./-]*\w\.csv\b", first_user_text(body))
    source, target = (names[0] if names else "input.csv"), (names[-1] if len(names) > 1 else "output.csv")

    def reply(*content: dict, stop: str = "tool_use") -> Reply:
        return Reply(list(content), stop, turn_usage(body, list(content)))
    if location:
        skill_md = location.group(1)
        rules_path = str(Path(skill_md).parent / "rules.json")
        if ("read", skill_md) not in done:
            return reply(text("I'll read the skill first."), tool_use("read", {"path": skill_md}))
        if ("read", rules_path) not in done:
            return reply(tool_use("read", {"path": rules_path}))
        rules = json.loads(done[("read", rules_path)])
        ops = [r["op"] for r in (rules.get("rules", rules) if isinstance(rules, dict) else rules)]
    else:  # bare (the solve phase): a capable model cleans everything it can see needs cleaning
        ops = [op for op in CANONICAL_ORDER if op != "titlecase"]
    if ("read", source) not in done:
        return reply(tool_use("read", {"path": source}))
    if not any(call["name"] == "write" for call, _, err in history if not err):
        rows = list(csv.reader(io.StringIO(done[("read", source)])))
        cleaned = apply_rules(rows, [op for op in ops if op in CANONICAL_ORDER])
        return reply(tool_use("write", {"path": target, "content": to_csv_text(cleaned)}))
    return reply(text(f"Wrote {target}."), stop="end_turn")


def mutator_agent(body: dict) -> Reply:
    """A mutator model: read the briefing and rules.json, add the first missing rule, write result.json."""
    history = tool_history(body)
    done = {(call["name"], call["input"].get("path")): result for call, result, err in history if not err}

    def reply(*content: dict, stop: str = "tool_use") -> Reply:
        return Reply(list(content), stop, turn_usage(body, list(content)))
    if ("read", "briefing.md") not in done:
        return reply(tool_use("read", {"path": "briefing.md"}))
    if ("read", "skill/rules.json") not in done:
        return reply(tool_use("read", {"path": "skill/rules.json"}))
    rules = json.loads(done[("read", "skill/rules.json")])
    present = {r["op"] for r in rules}
    missing = [op for op in ("dates", "amounts", "dedupe", "booleans", "emails") if op not in present]
    if not any(call["name"] == "write" for call, _, err in history if not err):
        if not missing:
            return reply(tool_use("write", {"path": "result.json", "content": json.dumps(
                {"summary": "No change", "reasoning": "every rule is present"})}))
        new = [*rules, {"id": missing[0], "op": missing[0]}]
        return reply(text(f"Adding the {missing[0]} rule."),
                     tool_use("write", {"path": "skill/rules.json", "content": json.dumps(new, indent=1) + "\n"}))
    if ("write", "result.json") not in done:
        op = json.loads(next(call["input"]["content"] for call, _, err in history
                             if call["name"] == "write" and not err))[-1]["op"]
        return reply(tool_use("write", {"path": "result.json", "content": json.dumps(
            {"summary": f"Add the {op} rule", "reasoning": f"tasks lose points on {op} values"})}))
    return reply(text("Done."), stop="end_turn")


def demo_agent(body: dict) -> Reply:
    """Build or mutator, told apart by the system prompt (as a real model would be told)."""
    return mutator_agent(body) if "improving an agent skill" in system_text(body) else csv_agent(body)
