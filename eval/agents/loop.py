"""The SDK agent's tool-use loop on the Messages API, written once: given a client and a toolbox, one conversation.

The standalone script (anthropic_agent.py) runs it with its own client and its tools in-process; the harness
runs it with its warm client and the tools in the sandboxed tool server (warm.py, toolserver.py). Either way it
writes the Claude Code-shaped stream.jsonl ending in one `result` event, and an API failure that outlasts the
retries ends as an `is_error` result and exit code 1, never as a hang.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anthropic

try:
    from eval.agents.caching import cached_request
    from eval.agents.stream import StreamWriter, usage_dict
except ImportError:  # run as a script beside its siblings (anthropic_agent.py in a sandbox)
    from caching import cached_request  # type: ignore[no-redef]
    from stream import StreamWriter, usage_dict  # type: ignore[no-redef]

MAX_TOKENS = 8192
RETRYABLE = (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APIConnectionError)
_sent: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("sent", default=None)


@dataclass(frozen=True)
class Options:
    role: str
    model: str
    max_turns: int
    stream_api: bool          # SSE streaming responses (the default) or plain JSON
    max_tokens: int
    retries: int              # our bounded retry rounds on top of the SDK's own retries
    backoff_s: float          # first wait of our backoff; doubles, capped at 60 s
    timeout_s: float
    cache: bool = True        # prompt-caching breakpoints (SM_ANTHROPIC_CACHE=0 turns them off, for comparison)


def options_from_env(role: str, env: Mapping[str, str]) -> Options:
    """The agent's settings from its contract environment (the script's own, or the one its call was given)."""
    return Options(
        role=role, model=env.get("SM_MODEL") or "claude-haiku-4-5",
        max_turns=int(env.get("SM_MAX_TURNS") or 30), stream_api=env.get("SM_ANTHROPIC_STREAM", "1") != "0",
        max_tokens=int(env.get("SM_ANTHROPIC_MAX_TOKENS") or MAX_TOKENS),
        retries=int(env.get("SM_ANTHROPIC_RETRIES") or 3),
        backoff_s=float(env.get("SM_ANTHROPIC_BACKOFF_S") or 2.0),
        timeout_s=float(env.get("SM_ANTHROPIC_TIMEOUT_S") or 600),
        cache=env.get("SM_ANTHROPIC_CACHE", "1") != "0")


class Tools(Protocol):
    """Where the tool calls run: in this process (the script) or in the sandboxed tool server (the harness)."""
    names: list[str]

    def schemas(self) -> list[dict]: ...

    async def run(self, name: str, args: object) -> tuple[str, bool]:
        """(text, is_error); raises only when the tools themselves are gone."""
        ...


async def count_request(_request: object) -> None:
    """An httpx request hook: counts every HTTP request of the current conversation, the SDK's retries included."""
    sent = _sent.get()
    if sent is not None:
        sent[0] += 1


def retry_after(err: Exception) -> float | None:
    response = getattr(err, "response", None)
    if response is None:
        return None
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return float(response.headers.get(header)) / scale
        except (TypeError, ValueError):
            continue
    return None


BLOCK_FIELDS = {"text": ("type", "text"), "tool_use": ("type", "id", "name", "input"),
                "thinking": ("type", "thinking", "signature"), "redacted_thinking": ("type", "data")}


def plain_block(block) -> dict:
    """A response block as the JSON to send back next turn (SDK-only extras such as parsed_output dropped)."""
    raw = block.model_dump(exclude_none=True)
    fields = BLOCK_FIELDS.get(raw.get("type"))
    return {key: raw[key] for key in fields if key in raw} if fields else raw


def price_usd(config: Path | None, model: str, usage: dict[str, int]) -> float:
    """The USD figure shown in the result event; the harness computes its own from usage."""
    if config is None:
        return 0.0
    try:
        import json

        from eval.cost import Usage, parse_pricing, price_for, usd
        table = parse_pricing(json.loads(config.read_text(encoding="utf-8")).get("pricing", {}))
        return usd(price_for(table, model), Usage(**usage))
    except Exception:
        return 0.0


def print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


TRUNCATED_CALL = ("this call was cut off by the output token limit and was not run; make it again with smaller input",
                  True)


class Agent:
    def __init__(self, options: Options, tools: Tools, stream: StreamWriter, client: anthropic.AsyncAnthropic,
                 system: str, log: Callable[[str], None]) -> None:
        self.options, self.tools, self.stream, self.client, self.system = options, tools, stream, client, system
        self.log = log

    async def call(self, messages: list[dict]):
        """One model turn, with the SDK's retries inside and our own bounded backoff around them."""
        tools = self.tools.schemas()
        kwargs = dict(model=self.options.model, max_tokens=self.options.max_tokens, system=self.system,
                      messages=messages, tools=tools)
        if self.options.cache:
            kwargs.update(cached_request(model=self.options.model, system=self.system, tools=tools,
                                         messages=messages))
        wait = self.options.backoff_s
        for attempt in range(self.options.retries + 1):
            try:
                if self.options.stream_api:
                    async with self.client.messages.stream(**kwargs) as events:
                        return await events.get_final_message()
                return await self.client.messages.create(**kwargs)
            except RETRYABLE as err:
                if attempt == self.options.retries:
                    raise
                pause = retry_after(err)
                pause = min(60.0, pause if pause is not None else wait * (0.75 + 0.5 * random.random()))
                self.log(f"anthropic_agent: {type(err).__name__} ({err}); retry {attempt + 1} of "
                         f"{self.options.retries} in {pause:.2f} s")
                await asyncio.sleep(pause)
                wait = min(wait * 2, 60.0)
        raise AssertionError("unreachable")

    async def run_tools(self, blocks: list[dict], *, truncated: bool) -> list[dict]:
        results = []
        for block in blocks:
            # a call cut by the token limit may have its input cut short: it is not acted on
            text, is_error = TRUNCATED_CALL if truncated else await self.tools.run(block["name"], block.get("input"))
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": text,
                            **({"is_error": True} if is_error else {})})
        return results

    async def loop(self, prompt: str) -> tuple[str, bool, str]:
        """(subtype, is_error, final text) — how the conversation ended."""
        messages: list[dict] = [{"role": "user", "content": prompt}]
        final_text = ""
        while True:
            if self.stream.totals.turns >= self.options.max_turns:
                return "error_max_turns", True, f"stopped after {self.options.max_turns} turns (--max-turns)"
            message = await self.call(messages)
            content = [plain_block(block) for block in message.content]
            self.stream.assistant({"id": message.id, "model": message.model, "content": content,
                                   "stop_reason": message.stop_reason}, usage_dict(message.usage))
            texts = [b.get("text", "") for b in content if b.get("type") == "text"]
            final_text = "\n".join(t for t in texts if t) or final_text
            tool_calls = [b for b in content if b.get("type") == "tool_use"]
            reason = message.stop_reason
            messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "…"}]})
            if reason == "tool_use" or (tool_calls and reason != "max_tokens"):
                results = await self.run_tools(tool_calls, truncated=False)
                self.stream.tool_results(results)
                messages.append({"role": "user", "content": results})
            elif reason == "max_tokens":
                results = await self.run_tools(tool_calls, truncated=True)
                nudge = {"type": "text", "text": "Your reply was cut off at the output token limit. Continue "
                                                 "where you stopped, in smaller steps."}
                if results:
                    self.stream.tool_results(results)
                messages.append({"role": "user", "content": [*results, nudge]})
            elif reason == "pause_turn":
                continue  # a long server-side turn: send it back as is and the model resumes
            elif reason == "refusal":
                return "error_during_execution", True, "the model refused: " + (final_text or "(no text)")
            else:  # end_turn, stop_sequence, or a reason newer than this code: the model is done
                return "success", False, final_text


async def converse(client: anthropic.AsyncAnthropic, options: Options, tools: Tools, stream: StreamWriter, *,
                   system: str, prompt: str, config: Path | None = None,
                   settle: Callable[[str], Awaitable[None]] | None = None,
                   log: Callable[[str], None] = print_err) -> int:
    """One whole agent run on `client` (built with `count_request` as a request hook): the loop, the mutator's
    result.json settled from its last answer (`settle`), the closing result event; returns the exit code.
    `log` takes the agent's stderr lines (retries, the error that ended it: the cell's classifier reads them)."""
    sent = [0]   # HTTP requests to the API, the SDK's own retries included
    _sent.set(sent)
    code = 0
    try:
        subtype, is_error, text = await Agent(options, tools, stream, client, system, log).loop(prompt)
        if settle is not None:
            await settle(text)
    except anthropic.APIError as err:
        status = getattr(err, "status_code", None)
        subtype, is_error, text = "error_during_execution", True, \
            f"API error{f' {status}' if status else ''}: {type(err).__name__}: {err}"
        log(f"anthropic_agent: {text}")
        code = 1
    except Exception as err:  # no API key, an unparseable response, a bug: still end with a result
        subtype, is_error, text = "error_during_execution", True, f"{type(err).__name__}: {err}"
        log(f"anthropic_agent: {text}")
        code = 1
    calls = stream.totals.turns + (1 if code else 0)   # answered calls, plus the one that failed for good
    stream.result(subtype=subtype, is_error=is_error, text=text, cost_usd=price_usd(config, options.model,
                                                                                    stream.totals.usage),
                  retries=max(0, sent[0] - calls))
    stream.close()
    return code
