"""Read an agent's stream.jsonl (Claude Code stream-json shape) into steps, tokens and outcome.

Every backend writes the same shape, so this is the one reader. Malformed lines are counted,
never fatal: a half-written last line from a killed agent must not lose the rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from eval.cost import Usage


@dataclass(frozen=True)
class StreamMetrics:
    steps: int
    usage: Usage
    has_result: bool
    is_error: bool
    subtype: str
    num_turns: int
    reported_cost_usd: float
    bad_lines: int
    tool_uses: int = 0
    events: int = 0
    error_text: str = field(default="")
    retries: int = 0          # API calls retried (our backends report it in their result event)


def _usage(raw: dict | None) -> Usage:
    raw = raw or {}
    return Usage(*(int(raw.get(key) or 0) for key in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")))


def read_stream(path: Path) -> StreamMetrics:
    assistant_turns = tool_uses = bad = events = 0
    # Claude Code writes one `assistant` event per content block, each repeating its message's id and
    # usage: without a result event, a message is counted once (its last event's usage), not per block.
    by_message: dict[str, Usage] = {}
    anonymous: list[Usage] = []
    result: dict | None = None
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if not isinstance(event, dict):
                bad += 1
                continue
            events += 1
            kind = event.get("type")
            if kind == "assistant":
                message = event.get("message") or {}
                content = message.get("content") or []
                tool_uses += sum(1 for block in content if isinstance(block, dict)
                                 and block.get("type") == "tool_use")
                usage = _usage(message.get("usage"))
                if message.get("id"):
                    by_message[str(message["id"])] = usage
                else:
                    anonymous.append(usage)
                assistant_turns = len(by_message) + len(anonymous)
            elif kind == "result":
                result = event
    messages = [*by_message.values(), *anonymous]
    summed = [sum(getattr(u, key) for u in messages) for key in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    if result is not None:
        usage = _usage(result.get("usage")) if result.get("usage") else Usage(*summed)
        turns = int(result.get("num_turns") or assistant_turns)
        return StreamMetrics(
            steps=turns, usage=usage, has_result=True, is_error=bool(result.get("is_error")),
            subtype=str(result.get("subtype") or ""), num_turns=turns,
            reported_cost_usd=float(result.get("total_cost_usd") or 0.0), bad_lines=bad,
            tool_uses=tool_uses, events=events,
            error_text=str(result.get("result") or "") if result.get("is_error") else "",
            retries=int(result.get("retries") or 0))
    return StreamMetrics(steps=assistant_turns, usage=Usage(*summed), has_result=False, is_error=True,
                         subtype="no_result", num_turns=assistant_turns, reported_cost_usd=0.0,
                         bad_lines=bad, tool_uses=tool_uses, events=events)
