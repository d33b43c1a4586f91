"""The meter: usage appended as a response is served (SSE or JSON), a stream cut mid-response included, read
back once per response; and the metering proxy between a real anthropic SDK client and the local server."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anthropic
import pytest

from eval.agents.key_proxy import KeyProxy
from eval.agents.meter import Tap, read_meter
from tests.eval.agents.messages_server import Reply, message, text, usage


def sse(*events: dict) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


START = {"type": "message_start", "message": {"id": "msg_1", "model": "claude-haiku-4-5",
                                              "usage": usage(1200, 1, 30, 400)}}
DELTA = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 77}}


@pytest.mark.parametrize(("events", "output"), [
    ((START, {"type": "ping"}, DELTA, {"type": "message_stop"}), 77),   # whole
    ((START, {"type": "ping"}), 1),                                        # cut before message_delta
], ids=["whole", "cut"])
def test_a_stream_is_metered_as_far_as_it_was_served(tmp_path: Path, events, output: int) -> None:
    meter = tmp_path / "m.jsonl"
    tap = Tap(meter, streaming=True, request_id="r1")
    raw = sse(*events)
    for i in range(0, len(raw), 7):       # in awkward chunks, as a socket delivers them
        tap.feed(raw[i:i + 7])
    tap.close()
    served = read_meter(meter)
    assert served.responses == 1
    assert served.by_model == {"claude-haiku-4-5": usage(1200, output, 30, 400)}


def test_json_replies_and_a_torn_last_line(tmp_path: Path) -> None:
    meter = tmp_path / "m.jsonl"
    for n in (1, 2):
        tap = Tap(meter, streaming=False, request_id=f"r{n}")
        tap.feed(json.dumps({"id": f"msg_{n}", "model": "m", "usage": usage(10 * n, n)}).encode())
        tap.close()
    with open(meter, "a") as f:
        f.write('{"id": "msg_3", "model": "m", "us')      # a process killed mid-write
    assert read_meter(meter).by_model == {"m": usage(30, 3)}
    assert read_meter(tmp_path / "absent.jsonl") is None


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_the_proxy_meters_what_the_server_served(server, tmp_path: Path, stream: bool) -> None:
    server.script(message(text("hi"), use=usage(321, 12, 5, 7)), Reply(status=529, error_type="overloaded_error"),
                  message(text("again"), use=usage(100, 3)))
    meter = tmp_path / "meter.jsonl"
    with KeyProxy(server.base_url, {"x-api-key": "real"}, meter=meter) as proxy:
        client = anthropic.Anthropic(api_key=proxy.nonce, base_url=proxy.base_url, max_retries=2)
        for _ in range(2):
            kwargs = dict(model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "x"}])
            if stream:
                with client.messages.stream(**kwargs) as events:
                    events.get_final_message()
            else:
                client.messages.create(**kwargs)
    assert server.auth_keys == ["real"] * 3                 # the key is the proxy's; the 529 is retried by the SDK
    served = read_meter(meter)
    assert served.responses == 2 and served.total() == server.served_usage()


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_a_caller_gone_before_the_first_byte_is_still_metered(server, tmp_path: Path, stream: bool) -> None:
    """A Ctrl-C cancels the call while the API is still thinking: the proxy, closed, waits for the response's
    usage, so what the API served is on the meter though no byte of it reached the caller."""
    server.script(Reply([text("late")], "end_turn", usage(640, 33, 0, 12), hang_s=0.6))
    meter = tmp_path / "meter.jsonl"
    with KeyProxy(server.base_url, {"x-api-key": "real"}, meter=meter) as proxy:
        client = anthropic.Anthropic(api_key=proxy.nonce, base_url=proxy.base_url, max_retries=0, timeout=0.1)
        kwargs = dict(model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "x"}])
        with pytest.raises(anthropic.APITimeoutError):
            if stream:
                with client.messages.stream(**kwargs) as events:
                    events.get_final_message()
            else:
                client.messages.create(**kwargs)
    served = read_meter(meter)
    assert served is not None and served.responses == 1
    assert served.total() == server.served_usage() == usage(640, 33, 0, 12)


def test_a_caller_gone_mid_stream_is_metered_to_the_cut_and_closing_does_not_wait_for_the_rest(
        server, tmp_path: Path) -> None:
    server.script(Reply([text("a long answer")], "end_turn", usage(900, 50), hang_mid_s=600))
    meter = tmp_path / "meter.jsonl"
    proxy = KeyProxy(server.base_url, {"x-api-key": "real"}, meter=meter).start()
    client = anthropic.Anthropic(api_key=proxy.nonce, base_url=proxy.base_url, max_retries=0)
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=50,
                                messages=[{"role": "user", "content": "x"}]) as events:
        next(iter(events))   # message_start, then the model "generates" for ten minutes: the caller leaves
    started = time.monotonic()
    proxy.close()
    assert time.monotonic() - started < 5
    assert read_meter(meter).total() == server.served_usage() == usage(900, 1)
