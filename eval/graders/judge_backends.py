"""Where a judge call goes: the deterministic fake (dry runs) or a Messages API (anthropic SDK).

One small seam, `JudgeBackend.call`, so tests point the real backend at a local server on 127.0.0.1
(`ANTHROPIC_BASE_URL`) and dry runs never touch the network. Given a meter file, the real backend's calls
pass a metering loopback proxy (eval/agents/key_proxy.py): every reply served is on the meter, one that
fails to parse or is retried included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from eval.agents.key_proxy import KeyProxy, credentials
from eval.cost import Usage
from eval.graders.judge import SYSTEM, Attempt, fake_reply, user_message

MAX_TOKENS = 1500


@dataclass(frozen=True)
class JudgeReply:
    text: str
    usage: Usage


class JudgeBackend(Protocol):
    id: str

    async def call(self, model: str, attempt: Attempt, meter: Path | None = None) -> JudgeReply: ...


class FakeJudge:
    id = "fake-judge@1"

    async def call(self, model: str, attempt: Attempt, meter: Path | None = None) -> JudgeReply:
        text = fake_reply(attempt)
        # priced like a real call of this size, so dry runs exercise the cost
        # path ("fakes spend nothing real")
        return JudgeReply(text, Usage(input_tokens=(len(SYSTEM) + len(user_message(attempt))) // 4,
                                      output_tokens=len(text) // 4))


class AnthropicJudge:
    id = "anthropic-judge@1"

    def __init__(self, base_url: str | None = None, timeout_s: float = 120, max_retries: int = 2) -> None:
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.timeout_s, self.max_retries = timeout_s, max_retries

    async def call(self, model: str, attempt: Attempt, meter: Path | None = None) -> JudgeReply:
        import anthropic
        key = os.environ.get("ANTHROPIC_API_KEY") or ("local" if self.base_url else None)
        base_url, proxy = self.base_url, None
        if meter is not None:
            proxy = KeyProxy(self.base_url or "", credentials(os.environ), meter=meter).start()
            base_url, key = proxy.base_url, proxy.nonce
        client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, timeout=self.timeout_s,
                                          max_retries=self.max_retries)
        try:
            message = await client.messages.create(
                model=model, max_tokens=MAX_TOKENS, system=SYSTEM,
                messages=[{"role": "user", "content": user_message(attempt)}])
        finally:
            await client.close()
            if proxy is not None:
                proxy.close()
        text = "".join(getattr(block, "text", "") for block in message.content)
        u = message.usage
        return JudgeReply(text, Usage(u.input_tokens or 0, u.output_tokens or 0,
                                      getattr(u, "cache_creation_input_tokens", 0) or 0,
                                      getattr(u, "cache_read_input_tokens", 0) or 0))


BACKENDS = {"fake": FakeJudge, "anthropic": AnthropicJudge}


def make_backend(name: str) -> JudgeBackend:
    if name not in BACKENDS:
        raise ValueError(f"SM_JUDGE={name!r} is not a judge backend; use one of {', '.join(BACKENDS)}")
    return BACKENDS[name]()
