"""The claude CLI's key proxy (eval/agents/key_proxy.py), without the CLI: through the real anthropic SDK it
forwards with the real key only for the nonce, streams SSE unchanged, and turns an unreachable API into a 502."""

from __future__ import annotations

import socket

import anthropic
import pytest

from eval.agents.key_proxy import KeyProxy, credentials
from tests.eval.agents.messages_server import message, text, usage

REAL = "sk-ant-REAL-proxy-0123456789"


def client(proxy: KeyProxy, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key, base_url=proxy.base_url, max_retries=0)


def test_the_nonce_is_swapped_for_the_real_key_and_answers_stream_through(server) -> None:
    server.responder = lambda body: message(text("hello through the proxy"), use=usage(12, 4))
    with KeyProxy(server.base_url, {"x-api-key": REAL}) as proxy:
        assert proxy.base_url.startswith("http://127.0.0.1:") and proxy.nonce.startswith("sm-proxy-")
        plain = client(proxy, proxy.nonce).messages.create(model="claude-haiku-4-5", max_tokens=10,
                                                           messages=[{"role": "user", "content": "hi"}])
        with client(proxy, proxy.nonce).messages.stream(model="claude-haiku-4-5", max_tokens=10,
                                                        messages=[{"role": "user", "content": "hi"}]) as stream:
            streamed = "".join(stream.text_stream)
            final = stream.get_final_message()
    assert plain.content[0].text == streamed == "hello through the proxy"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (12, 4)
    assert server.auth_keys == [REAL, REAL]               # the API saw only the real key, never the nonce


def test_a_request_without_the_nonce_is_refused_and_never_forwarded(server) -> None:
    server.responder = lambda body: message(text("no"))
    with KeyProxy(server.base_url, {"x-api-key": REAL}) as proxy:
        with pytest.raises(anthropic.AuthenticationError, match="wrong nonce"):
            client(proxy, REAL).messages.create(model="claude-haiku-4-5", max_tokens=10,
                                                messages=[{"role": "user", "content": "hi"}])
    assert server.requests == [] and server.auth_keys == []


def test_an_unreachable_api_is_a_502_naming_it() -> None:
    with socket.socket() as sock:                          # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with KeyProxy(dead, {"x-api-key": REAL}) as proxy:
        with pytest.raises(anthropic.InternalServerError) as err:
            client(proxy, proxy.nonce).messages.create(model="claude-haiku-4-5", max_tokens=10,
                                                       messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 502 and f"key proxy: {dead} unreachable" in str(err.value)


def test_credentials_prefer_the_api_key_then_the_auth_token() -> None:
    assert credentials({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_AUTH_TOKEN": "t"}) == {"x-api-key": "k"}
    assert credentials({"ANTHROPIC_AUTH_TOKEN": "t"}) == {"authorization": "Bearer t"}
    assert credentials({"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}) == {}
