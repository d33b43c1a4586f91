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

A request whose caller goes away (Ctrl-C, a watchdog kill) is still metered: closing, the proxy waits up to
METER_GRACE_S for each in-flight response's usage (a stream's `message_start`, a JSON body's end), then reads on
what the API already sent until the stream is quiet for QUIET_S (at most DRAIN_S), so a request the API began to
serve is on the meter even when its caller left before the first byte came back.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import uuid
from collections.abc import Awaitable, Mapping
from pathlib import Path

from aiohttp import ClientError, ClientResponse, ClientSession, ClientTimeout, web

try:
    from eval.agents.meter import Tap
except ImportError:  # run as a script beside its siblings (claude_cli.py in a sandbox)
    from meter import Tap  # type: ignore[no-redef]

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# Never forwarded: hop-by-hop headers, the ones aiohttp sets itself, and the caller's credentials.
DROP_REQUEST = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade",
                "proxy-authorization", "proxy-connection", "te", "trailer", "x-api-key", "authorization"}
DROP_RESPONSE = {"content-length", "connection", "keep-alive", "transfer-encoding", "upgrade", "trailer"}
METER_GRACE_S = 10.0   # callerless, how long an in-flight response may take to say its usage
QUIET_S = 0.25         # then read on while the API still sends, with pauses no longer than this
DRAIN_S = 1.0          # for at most this long (reading on keeps the API generating)


def credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """The real credential headers from the adapter's environment (empty when none is set)."""
    if environ.get("ANTHROPIC_API_KEY"):
        return {"x-api-key": environ["ANTHROPIC_API_KEY"]}
    if environ.get("ANTHROPIC_AUTH_TOKEN"):
        return {"authorization": f"Bearer {environ['ANTHROPIC_AUTH_TOKEN']}"}
    return {}


async def _sent(write: Awaitable[object]) -> bool:
    """Whether a write to the caller went through (False: the caller is gone, e.g. cancelled by a Ctrl-C)."""
    try:
        await write
    except ConnectionResetError:   # aiohttp's ClientConnectionResetError is one
        return False
    return True


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
        self.in_flight: set[asyncio.Task] = set()   # the metered requests being forwarded
        self.closing: asyncio.Event | None = None   # set by close(): every caller is gone

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
        self.closing = asyncio.Event()
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        if self.unix_path is not None:
            await web.UnixSite(self.runner, str(self.unix_path)).start()
        return port

    async def _stop(self) -> None:
        assert self.closing is not None
        self.closing.set()   # requests in flight read what the API sent, then end (_copy)
        if self.in_flight:   # one grace for them all; what is still running then is cut
            _, late = await asyncio.wait(self.in_flight, timeout=METER_GRACE_S + DRAIN_S)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=1)
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
        if self.meter is not None:
            task = asyncio.current_task()
            assert task is not None
            self.in_flight.add(task)
            task.add_done_callback(self.in_flight.discard)
        try:
            async with self.session.request(request.method, self.upstream + request.path_qs, headers=headers,
                                            data=body or None, allow_redirects=False) as upstream:
                response.set_status(upstream.status, upstream.reason)
                for name, value in upstream.headers.items():
                    if name.lower() not in DROP_RESPONSE:
                        response.headers.add(name, value)
                caller_gone = not await _sent(response.prepare(request))
                tap = None
                if self.meter is not None and upstream.status == 200 and request.path.endswith("/messages"):
                    tap = Tap(self.meter, request_id=f"req-{uuid.uuid4().hex}",
                              streaming="event-stream" in upstream.headers.get("content-type", ""))
                try:
                    cut = await self._copy(upstream, response, tap, caller_gone)
                finally:
                    if tap is not None:
                        tap.close()
        except (ClientError, TimeoutError) as err:
            if response.prepared:
                raise   # mid-stream: the CLI sees a cut connection, as it would without the proxy
            # The CLI retries a 502 and, past its retries, reports an API error: the cell is infra_error.
            return web.json_response({"type": "error", "error": {
                "type": "api_error", "message": f"key proxy: {self.upstream} unreachable: {err}"}}, status=502)
        if not cut:
            await response.write_eof()
        return response

    async def _copy(self, upstream: ClientResponse, response: web.StreamResponse, tap: Tap | None,
                    caller_gone: bool) -> bool:
        """The upstream body to the caller, each chunk metered as read, before the caller has it (a cut loses
        nothing). Once the caller is gone (or the proxy closes), only until the API's usage is known and it goes
        quiet (module docstring). Returns whether the response was cut short (its caller gone, or the proxy closing)."""
        assert self.closing is not None
        loop = asyncio.get_running_loop()
        read: asyncio.Future[bytes] | None = None
        closing = asyncio.ensure_future(self.closing.wait())   # one waiter for the whole body, not one per chunk
        usage_by = quiet_by = 0.0   # callerless deadlines: for the usage, then for reading on
        try:
            while True:
                read = read or asyncio.ensure_future(upstream.content.readany())
                if not (caller_gone or closing.done()):
                    await asyncio.wait({read, closing}, return_when=asyncio.FIRST_COMPLETED)
                    if not read.done():
                        continue   # closing: the same read, now callerless
                else:
                    now = loop.time()
                    usage_by = usage_by or now + METER_GRACE_S
                    known = tap is None or bool(tap.usage)
                    if known:
                        quiet_by = quiet_by or now + DRAIN_S
                    wait = min(QUIET_S, quiet_by - now) if known else usage_by - now
                    done, _ = await asyncio.wait({read}, timeout=max(wait, 0.0))
                    if not done:
                        return True   # cut here: what the API sent until now is on the meter
                chunk, read = read.result(), None
                if not chunk:
                    return caller_gone
                if tap is not None:
                    tap.feed(chunk)
                if not caller_gone:
                    caller_gone = not await _sent(response.write(chunk))
        finally:
            closing.cancel()
            if read is not None:
                read.cancel()
