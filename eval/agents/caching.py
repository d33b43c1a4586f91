"""Prompt-caching breakpoints for our SDK agent: what to mark with `cache_control` on each turn.

The cache prefix is rendered tools -> system -> messages. One breakpoint ends the system prompt (it
caches the tools with it), one ends the conversation so far and moves forward every turn, so each turn
reads what the last one wrote. A prefix shorter than the model's minimum is never cached (the API just
bills it at the input price), so no mark is placed there. Pure: builds request fields, sends nothing.
"""

from __future__ import annotations

import copy
import json

EPHEMERAL = {"type": "ephemeral"}
# Minimum cacheable prompt length in tokens (Anthropic's prompt-caching docs); longest prefix wins.
MIN_CACHEABLE = {"claude-opus-4-5": 4096, "claude-opus-4-6": 4096, "claude-haiku-4-5": 4096,
                 "claude-sonnet-4-5": 1024, "claude-sonnet-4": 1024, "claude-opus-4-1": 1024, "claude-opus-4": 1024,
                 "claude-3-5-haiku": 2048, "claude-3-haiku": 2048}
DEFAULT_MIN = 1024
CHARS_PER_TOKEN = 4   # a deliberately rough estimate: it only decides whether a mark can pay off


def min_cacheable(model: str) -> int:
    names = [name for name in MIN_CACHEABLE if model.startswith(name)]
    return MIN_CACHEABLE[max(names, key=len)] if names else DEFAULT_MIN


def estimate_tokens(*parts: object) -> int:
    return sum(len(part if isinstance(part, str) else json.dumps(part)) for part in parts) // CHARS_PER_TOKEN


def cached_request(*, model: str, system: str, tools: list[dict], messages: list[dict],
                   min_tokens: int | None = None) -> dict:
    """`system` and `messages` for one call, with breakpoints where the prefix is long enough to cache.
    The caller's history is never modified (a mark belongs to one request only: at most 4 are allowed)."""
    floor = min_cacheable(model) if min_tokens is None else min_tokens
    head = estimate_tokens(system, tools)
    system_blocks: list[dict] = [{"type": "text", "text": system}]
    if head >= floor:
        system_blocks[0]["cache_control"] = EPHEMERAL
    out = messages
    if messages and head + estimate_tokens(messages) >= floor:
        out = [*messages[:-1], copy.deepcopy(messages[-1])]
        last = out[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        if last["content"]:
            last["content"][-1]["cache_control"] = EPHEMERAL
    return {"system": system_blocks, "messages": out}
