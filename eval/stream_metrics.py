"""Read an agent's stream.jsonl (Claude Code stream-json shape) into steps, tokens and outcome.

Every backend writes the same shape, so this is the one reader. Malformed lines are counted,
never fatal: a half-written last line from a killed agent must not lose the rest.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import orjson

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
    # why the stream breaks its contract (a wrong-shape event); "" when it does not
    invalid: str = ""
    retries: int = 0          # API calls retried (our backends report it in their result event)


ABSURD_TOKENS = 10_000_000   # no single model call reads or writes this many tokens
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class ShapeError(ValueError):
    """A stream event that parses as JSON but is not the shape the contract promises."""


# Deeper than this, a line is not an event (ValueError): a parser's recursion (orjson's crashes the process,
# json's raises RecursionError) and every reader that walks an event (skill_marks.strings) stay bounded.
MAX_DEPTH = 200
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
NOT_BRACKET = re.compile(r"[^\[\]{}]+")
SURROGATE = re.compile("[\ud800-\udfff]")


def depth(line: str) -> int:
    """How deep a JSON text's arrays and objects nest (brackets inside strings do not count)."""
    level = deepest = 0
    for char in NOT_BRACKET.sub("", STRING.sub("", line)):
        level += 1 if char in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def _valid_text(value: object) -> object:
    """`value` with each lone surrogate (json's `"\\ud800"`) replaced by U+FFFD: text that cannot be written
    as UTF-8 (a file, the store) is the agent's garbage, never the harness's crash."""
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_valid_text(v) for v in value]
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    return value


def decode_line(line: str) -> object:
    """One stream line's JSON, as json.loads reads it (ValueError when it is not JSON, or nests deeper than
    MAX_DEPTH): orjson first, ~3x faster on a stream's lines, and json for what orjson refuses and json takes
    (NaN, integers past 64 bits, lone surrogates, made U+FFFD). Any line an agent writes, however deep, long
    or badly encoded, is an event or a bad line."""
    if line.count("[") + line.count("{") > MAX_DEPTH and depth(line) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _valid_text(json.loads(line))


def _usage(raw: object) -> Usage:
    """A usage object, checked: every count a whole number in [0, ABSURD_TOKENS) (missing or null = 0)."""
    if raw is None:
        return Usage(0, 0, 0, 0)
    if not isinstance(raw, dict):
        raise ShapeError(f"usage is {type(raw).__name__}, not an object")
    counts = []
    for key in USAGE_KEYS:
        value = raw.get(key) or 0
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ShapeError(f"usage.{key} is {value!r}, not a whole number")
        if not 0 <= value < ABSURD_TOKENS:
            raise ShapeError(f"usage.{key} is {value!r}: negative or absurd")
        counts.append(int(value))
    return Usage(*counts)


def _number(event: dict, key: str) -> float:
    value = event.get(key) or 0
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        raise ShapeError(f"result.{key} is {value!r}, not a non-negative number")
    return float(value)


def read_stream(path: Path) -> StreamMetrics:
    """Every event read; one of the wrong shape (a string message, negative usage) makes the stream
    `invalid` with the reason, and its figures are not counted: never a crash, never a negative cost."""
    assistant_turns = tool_uses = bad = events = 0
    # Claude Code writes one `assistant` event per content block, each repeating its message's id and
    # usage: without a result event, a message is counted once (its last event's usage), not per block.
    by_message: dict[str, Usage] = {}
    anonymous: list[Usage] = []
    result: dict | None = None
    invalid = ""
    if path.is_file():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                event = decode_line(line)
            except ValueError:
                bad += 1
                continue
            if not isinstance(event, dict):
                bad += 1
                continue
            events += 1
            try:
                kind = event.get("type")
                if kind == "assistant":
                    message = event.get("message") or {}
                    if not isinstance(message, dict):
                        raise ShapeError(f"assistant message is {type(message).__name__}, not an object")
                    content = message.get("content") or []
                    if not isinstance(content, list):
                        raise ShapeError(f"assistant content is {type(content).__name__}, not a list")
                    usage = _usage(message.get("usage"))
                    tool_uses += sum(1 for block in content
                                     if isinstance(block, dict) and block.get("type") == "tool_use")
                    if message.get("id"):
                        by_message[str(message["id"])] = usage
                    else:
                        anonymous.append(usage)
                    assistant_turns = len(by_message) + len(anonymous)
                elif kind == "result":
                    _usage(event.get("usage"))
                    _number(event, "num_turns")
                    _number(event, "total_cost_usd")
                    result = event
            except ShapeError as err:
                invalid = invalid or f"malformed stream event on line {number}: {err}"
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
            error_text=str(result.get("result") or "") if result.get("is_error") else "", invalid=invalid,
            retries=int(result.get("retries") or 0) if isinstance(result.get("retries"), int) else 0)
    return StreamMetrics(steps=assistant_turns, usage=Usage(*summed), has_result=False, is_error=True,
                         subtype="no_result", num_turns=assistant_turns, reported_cost_usd=0.0,
                         bad_lines=bad, tool_uses=tool_uses, events=events, invalid=invalid)
