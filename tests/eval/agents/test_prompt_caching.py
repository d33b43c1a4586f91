"""Prompt caching: our SDK agent marks the system prompt and the conversation so far with `cache_control`,
and against a local server that bills like the API, a multi-turn cell is billed mostly as cache reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.agents.caching import cached_request, min_cacheable
from eval.cost import Usage, parse_pricing, usd
from eval.stream_metrics import read_stream
from tests.eval.agents.messages_server import message, text, tool_use, usage
from tests.eval.agents.test_anthropic_agent import result_of, run_agent

HAIKU = parse_pricing({"claude-haiku-4-5": {"input": 1, "output": 5, "cacheWrite": 1.25, "cacheRead": 0.10}})[
    "claude-haiku-4-5"]


@pytest.mark.parametrize("model, floor", [("claude-haiku-4-5", 4096), ("claude-haiku-4-5-20251001", 4096),
                                          ("claude-opus-4-5", 4096), ("claude-sonnet-4-5", 1024),
                                          ("claude-opus-4-1", 1024), ("claude-3-5-haiku-latest", 2048),
                                          ("some-new-model", 1024)])
def test_minimum_cacheable_length_per_model(model: str, floor: int) -> None:
    assert min_cacheable(model) == floor


def test_marks_only_where_the_prefix_can_be_cached_and_never_in_the_history() -> None:
    history = [{"role": "user", "content": "short task"}]
    short = cached_request(model="claude-sonnet-4-5", system="be brief", tools=[], messages=history)
    assert "cache_control" not in short["system"][0] and short["messages"] is history
    long_system = "rules " * 1000          # ~1,500 estimated tokens: over Sonnet's 1,024, under Haiku's 4,096
    sonnet = cached_request(model="claude-sonnet-4-5", system=long_system, tools=[], messages=history)
    assert sonnet["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert sonnet["messages"][-1]["content"] == [{"type": "text", "text": "short task",
                                                   "cache_control": {"type": "ephemeral"}}]
    assert history == [{"role": "user", "content": "short task"}]      # the caller's history is untouched
    haiku = cached_request(model="claude-haiku-4-5", system=long_system, tools=[], messages=history)
    assert "cache_control" not in json.dumps(haiku)
    marks = json.dumps(cached_request(model="claude-sonnet-4-5", system=long_system, tools=[],
                                      messages=history * 3)).count("cache_control")
    assert marks == 2                                                   # system + the last block, never more


def six_turns(server) -> None:
    """Read a large file, then four small steps, then finish: six model calls in one cell."""
    server.script(message(tool_use("read", {"path": "big.txt"}), stop="tool_use", use=usage(0, 20)),
                  *[message(tool_use("list", {"path": "."}), stop="tool_use", use=usage(0, 15)) for _ in range(4)],
                  message(text("Done."), use=usage(0, 10)))


def run_cell(server, work: Path, *, cache: bool) -> tuple[dict, Usage]:
    work.mkdir(parents=True)
    (work / "big.txt").write_text("".join(f"line {n}: the quick brown fox jumps over the lazy dog\n"
                                          for n in range(500)))                    # ~28 KB, ~7,000 tokens
    six_turns(server)
    proc, events = run_agent(server, work, extra_env={"SM_ANTHROPIC_CACHE": "1" if cache else "0"})
    assert proc.returncode == 0, proc.stderr
    return result_of(events), read_stream(work.parent / f"{work.name}.stream.jsonl").usage


def test_a_six_turn_cell_is_billed_mostly_as_cache_reads(server, tmp_path: Path) -> None:
    server.cache_min_tokens = 4096                     # claude-haiku-4-5's minimum, as the API applies it
    result, used = run_cell(server, tmp_path / "cached", cache=True)
    assert result["num_turns"] == 6 and len(server.requests) == 6
    billed_input = used.input_tokens + used.cache_creation_input_tokens + used.cache_read_input_tokens
    assert used.cache_read_input_tokens > 0.6 * billed_input, used
    assert used.cache_creation_input_tokens > 0 and result["usage"] == server.served_usage()
    # stored cost is exactly what the server's usage implies at the config.json prices
    assert usd(HAIKU, used) == pytest.approx(usd(HAIKU, Usage(**{k: v for k, v in server.served_usage().items()})))
    cached_cost = usd(HAIKU, used)
    # the same cell without breakpoints: every turn re-bills the whole conversation at the input price
    server.served.clear()
    server.cache.clear()
    _, plain = run_cell(server, tmp_path / "plain", cache=False)
    assert plain.cache_read_input_tokens == 0 and plain.cache_creation_input_tokens == 0
    assert plain.input_tokens == pytest.approx(billed_input, rel=0.02)   # the same prompts, billed in full
    assert cached_cost < 0.5 * usd(HAIKU, plain)
