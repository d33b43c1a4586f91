"""Shared by the browser tests: the system Chromium and the real dashboard app on a free loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import urllib.request
from pathlib import Path

from mutator.server.app import create_app

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
SKIP_REASON = "/usr/bin/chromium is absent (apt-get install chromium)"


class Server:
    """The real app on a free loopback port, in a thread with its own event loop."""

    def __init__(self, data_dir: Path, *, token: str) -> None:
        from aiohttp import web
        self.app = create_app(data_dir=data_dir, project_root=data_dir.parent, token=token)
        self.loop = asyncio.new_event_loop()
        self.runner = web.AppRunner(self.app, shutdown_timeout=2)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def processes(self) -> list[dict]:
        with urllib.request.urlopen(self.url + "/api/processes", timeout=5) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@contextlib.contextmanager
def chromium_page(artifacts: Path):
    """A headless Chromium page that collects console errors and page errors in `page.console_errors`."""
    from playwright import sync_api
    artifacts.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.console_errors = []
        page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        try:
            yield page
        finally:
            browser.close()
