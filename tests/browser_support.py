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


# Test-only, added before the app's scripts: counts the change events the page has handled since it last started
# following something else (its first is the baseline), from the shared live stream (lib/liveworker.js) or the
# page's own EventSource alike, so a test waits for the stream's baseline, or for the event a write caused,
# instead of sleeping a guessed time.
COUNT_LIVE_EVENTS = """(() => {
  window.__liveEvents = 0;
  window.addEventListener('sm-live-watch', () => { window.__liveEvents = 0; });
  window.addEventListener('sm-live', () => { window.__liveEvents += 1; });
})();"""


def live_events(page) -> int:
    """How many change events the page's newest live stream has delivered (its first is the baseline)."""
    return int(page.evaluate("window.__liveEvents"))


def wait_live_events(page, count: int) -> None:
    """Wait until the newest live stream has delivered `count` change events (the app's handler has run by then:
    it listens on the same dispatch)."""
    page.wait_for_function("(count) => window.__liveEvents >= count", arg=count, timeout=15_000)   # a function: no eval under the CSP


@contextlib.contextmanager
def chromium_page(artifacts: Path):
    """A headless Chromium page that collects console errors and page errors in `page.console_errors`."""
    from playwright import sync_api
    artifacts.mkdir(exist_ok=True)
    # a busy machine (the suite on both cores) can take more than Playwright's 5 s to render a page: an assertion
    # returns as soon as it holds, so a longer wait costs a passing test nothing and keeps load out of the verdict
    sync_api.expect.set_options(timeout=30_000)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(COUNT_LIVE_EVENTS)
        page.console_errors = []
        page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        try:
            yield page
        finally:
            browser.close()
