"""The API key stays with the adapter: a loopback proxy that adds it to every request the claude CLI sends.

Claude Code hands its own environment to its Bash tool, so a key in that environment can be printed by the
agent (`env`) into its stream. Its built-in scrub (CLAUDE_CODE_SUBPROCESS_ENV_SCRUB) wraps every command in
a bubblewrap sandbox of its own, which cannot start inside ours. Instead the CLI never receives the key:
its ANTHROPIC_BASE_URL is this proxy on 127.0.0.1 and its ANTHROPIC_API_KEY a one-cell nonce, which the proxy
swaps for the real credentials before forwarding to the real base URL. Responses (SSE included) stream back
unchanged. A request without the nonce is refused, so no other local process can spend through it.
With `unix_path` it also listens on that unix socket, which a container without a network reaches
(sandbox/relay.py). Given a meter file, it also appends each response's usage as it is served (eval/agents/meter.py): the
harness starts one per agent call (eval/agent_call.py) and per judge call, whatever the backend.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

from aiohttp import ClientError, ClientSession, ClientTimeout, web

try:
    from eval.agents.meter import Tap
except ImportError:  # run as a script beside its siblings (claude_cli.py in a sandbox)
    from meter import Tap  # type: ignore[no-redef]

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# Never forwarded: hop-by-hop headers, the ones aiohttp sets itself, and the caller's credentials.
DROP_REQUEST = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade",
                "proxy-authorization", "proxy-connection", "te", "trailer", "x-api-key", "authorization"}
DROP_RESPONSE = {"content-length", "connection", "keep-alive", "transfer-encoding", "upgrade", "trailer"}


def credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """The real credential headers from the adapter's environment (empty when none is set)."""
    if environ.get("ANTHROPIC_API_KEY"):
        return {"x-api-key": environ["ANTHROPIC_API_KEY"]}
    if environ.get("ANTHROPIC_AUTH_TOKEN"):
        return {"authorization": f"Bearer {environ['ANTHROPIC_AUTH_TOKEN']}"}
    return {}


class KeyProxy:
    """Started in a thread of its own; `base_url` and `nonce` are what the CLI is given."""

    def __init__(self, upstream: str, auth: Mapping[str, str], meter: Path | None = None,
                 unix_path: Path | None = None) -> None:
        self.unix_path = unix_path   # also served on this unix socket (bound into a task's container)
        self.upstream = (upstream or DEFAULT_UPSTREAM).rstrip("/")
        self.auth = dict(auth)
        self.meter = meter
        self.nonce = f"sm-proxy-{secrets.token_urlsafe(24)}"
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="key-proxy", daemon=True)
        self.runner: web.AppRunner | None = None
        self.session: ClientSession | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> KeyProxy:
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        return self

    def close(self) -> None:
        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        self.loop.close()

    def __enter__(self) -> KeyProxy:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    async def _start(self) -> int:
        # trust_env: HTTPS_PROXY / NO_PROXY of the user's network apply to the real API, as for the SDK agent.
        self.session = ClientSession(timeout=ClientTimeout(total=None, sock_connect=60), trust_env=True,
                                     auto_decompress=False)
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        if self.unix_path is not None:
            await web.UnixSite(self.runner, str(self.unix_path)).start()
        return port

    async def _stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
        if self.session is not None:
            await self.session.close()

    def _authorised(self, request: web.Request) -> bool:
        given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        return secrets.compare_digest(given.encode(), self.nonce.encode())

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        if not self._authorised(request):
            return web.json_response({"type": "error", "error": {"type": "authentication_error",
                                                                 "message": "key proxy: wrong nonce"}}, status=401)
        assert self.session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in DROP_REQUEST}
        if self.meter is not None:
            # the meter reads plain bytes: no compressed bodies (aiohttp would otherwise ask for gzip itself)
            headers = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
            headers["accept-encoding"] = "identity"
        headers.update(self.auth)
        body = await request.read()
        response = web.StreamResponse()
        tap = None
        try:
            async with self.session.request(request.method, self.upstream + request.path_qs, headers=headers,
                                            data=body or None, allow_redirects=False) as upstream:
                response.set_status(upstream.status, upstream.reason)
                for name, value in upstream.headers.items():
                    if name.lower() not in DROP_RESPONSE:
                        response.headers.add(name, value)
                await response.prepare(request)
                if self.meter is not None and upstream.status == 200 and request.path.endswith("/messages"):
                    tap = Tap(self.meter, request_id=f"req-{uuid.uuid4().hex}",
                              streaming="event-stream" in upstream.headers.get("content-type", ""))
                try:
                    async for chunk in upstream.content.iter_any():
                        if tap is not None:
                            tap.feed(chunk)   # metered as read, before the client has it: a cut loses nothing
                        await response.write(chunk)
                finally:
                    if tap is not None:
                        tap.close()
        except (ClientError, TimeoutError) as err:
            if response.prepared:
                raise   # mid-stream: the CLI sees a cut connection, as it would without the proxy
            # The CLI retries a 502 and, past its retries, reports an API error: the cell is infra_error.
            return web.json_response({"type": "error", "error": {
                "type": "api_error", "message": f"key proxy: {self.upstream} unreachable: {err}"}}, status=502)
        await response.write_eof()
        return response
