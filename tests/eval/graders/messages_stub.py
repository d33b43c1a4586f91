"""A tiny Messages-API stub on 127.0.0.1 (aiohttp, its own thread): answers POST /v1/messages with queued
texts (or a default), logs every request body, and bills a fixed usage per reply."""

from __future__ import annotations

import asyncio
import json
import threading

from aiohttp import web


class MessagesStub:
    def __init__(self, reply: str = "", usage: dict | None = None) -> None:
        self.reply, self.usage = reply, usage or {"input_tokens": 1000, "output_tokens": 200}
        self.requests: list[dict] = []
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.runner: web.AppRunner | None = None
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _start(self) -> int:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]

    async def _messages(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        return web.json_response({
            "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": self.reply}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": self.usage})

    def close(self) -> None:
        if self.runner:
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


def judge_reply(correctness: float, procedure: float, conciseness: float, feedback: str = "Shorter.") -> str:
    return "Here is my grade:\n" + json.dumps({
        "correctness": correctness, "procedure": procedure, "conciseness": conciseness,
        "expectations": [{"text": "says done", "passed": True, "evidence": "done"}], "feedback": feedback})
