"""Ten tabs of one browser on a live dry run: one live stream for all of them (a SharedWorker), each tab
following the run, and every tab seeing the run die within 10 s of a kill -9 (its lock, not its heartbeat),
its undecided round saying "stopped: process died"."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, COUNT_LIVE_EVENTS, SKIP_REASON, Server

from .conftest import LOCK_HOLDER, ROOT, TOKEN

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")

UNDECIDED = ("select count(*) from attempts where verdict is null and status not in "
             "('critic_rejected', 'failed', 'screened')")
PAGES = ["home", "round", "lineage", "attempts", "history"] * 2


def _read(data: Path, sql: str):
    try:
        with sqlite3.connect(f"file:{data / 'mutator.db'}?mode=ro", uri=True) as conn:
            return conn.execute(sql).fetchone()
    except sqlite3.OperationalError:
        return None


def _wait(data: Path, sql: str, what: str, timeout: float = 300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = _read(data, sql)
        if row and row[0]:
            return row[0]
        time.sleep(0.1)
    raise AssertionError(f"the dry run never reached {what}")


def _health(server: Server) -> dict:
    with urllib.request.urlopen(server.url + "/api/health", timeout=5) as response:
        return json.loads(response.read())


def _renders(page) -> int:
    return int(page.evaluate("document.body.dataset.renders || 0"))


@pytest.fixture
def live_run(tmp_path):
    """A real dry run under way (its round 1 written) and the dashboard over its store, made before the page
    (Playwright's sync API holds an event loop the server's thread must not meet)."""
    data = tmp_path / "project" / "data"
    argv = [sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val", "--rounds", "400",
            "--replicates", "1", "--data-dir", str(data)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    server = None
    try:
        run_id = _wait(data, "select id from runs where status = 'running'", "a running run")
        _wait(data, "select count(*) from attempts where round >= 1", "round 1")
        server = Server(data, token=TOKEN)
        yield proc, server, data, run_id
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if server:
            server.stop()


def test_ten_tabs_share_one_stream_follow_a_live_run_and_see_it_die(live_run, page):
    expect = sync_api.expect
    proc, server, data, run_id = live_run
    context = page.context.browser.new_context(viewport={"width": 1200, "height": 800})   # one browser profile
    context.add_init_script(COUNT_LIVE_EVENTS)
    tabs = [context.new_page() for _ in PAGES]
    for tab, name in zip(tabs, PAGES, strict=True):
        tab.console_errors = []
        tab.on("pageerror", lambda e, tab=tab: tab.console_errors.append(str(e)))
        tab.goto(server.url + f"/#/{name}?run={run_id}")
    for tab in tabs:   # every tab loads (a seventh tab no longer waits for a free connection) and is live
        tab.wait_for_function("() => Number(document.body.dataset.renders) >= 1", timeout=30_000)
        tab.wait_for_function("() => window.__liveEvents >= 1", timeout=30_000)
    assert _health(server)["live_streams"] == 1   # ten tabs, one stream
    # each tab follows the run: the loop's next writes re-render every one of them
    before = [_renders(tab) for tab in tabs]
    done = _read(data, "select rounds_done from runs")[0]
    _wait(data, f"select rounds_done > {done + 1} from runs", "two more rounds")
    for tab, count, name in zip(tabs, before, PAGES, strict=True):
        tab.wait_for_function("(n) => Number(document.body.dataset.renders) > n", arg=count, timeout=30_000)
        assert _renders(tab) > count, name
    expect(tabs[0].locator("#run-head .badge")).to_have_text("running")

    _wait(data, UNDECIDED, "an attempt under way")   # kill it mid-attempt
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = time.monotonic()
    assert _read(data, "select status from runs")[0] == "running"   # nobody was left to update the record
    # what the newest attempt must read: the store's word (its verdict), else that its process died
    undecided = _read(data, UNDECIDED + " and id = (select max(id) from attempts)")[0]
    newest = "stopped: process died" if undecided else _read(data, "select verdict from attempts order by id desc")[0]
    for tab in tabs:   # every open tab, within 10 s of the kill
        option = tab.locator(f'#run-picker option[value="{run_id}"]')
        expect(option).to_contain_text("stale", timeout=max(0.5, 10 - (time.monotonic() - killed)) * 1000)
    assert time.monotonic() - killed <= 10
    for tab, name in zip(tabs, PAGES, strict=True):
        if name == "home":
            expect(tab.locator("#run-head .badge")).to_have_text("stale", timeout=2_000)
            expect(tab.locator("#run-head .stale-note")).to_contain_text("process died")
            expect(tab.locator("#timeline .node").last).to_contain_text(newest, timeout=2_000)
            assert tab.locator("#timeline .stage.s-running").count() == 0
        elif name == "round":
            expect(tab.locator("#attempt-picker option").last).to_contain_text(newest, timeout=2_000)
        elif name == "history":
            expect(tab.locator("#page")).to_contain_text("stale", timeout=2_000)
    assert all(tab.console_errors == [] for tab in tabs)



def test_an_open_round_page_renames_its_undecided_attempt_when_the_writer_dies(store, server, page):
    """Constructed: the greedy run's last attempt undecided ('pending'), its lock held by a live process; the
    Round page renders it as pending; the holder is killed, and only the attempt's `stopped` word changes —
    the attempt picker must say so (it kept its old text when its key ignored `stopped`)."""
    expect = sync_api.expect
    with sqlite3.connect(store / "mutator.db") as conn:
        run_id = conn.execute("select id from runs where strategy = 'greedy'").fetchone()[0]
        last = conn.execute("select max(id) from attempts where run_id = ?", [run_id]).fetchone()[0]
        conn.execute("update attempts set verdict = null, status = 'pending' where id = ?", [last])
        conn.execute("update runs set status = 'running', heartbeat_at = ?, finished_at = null where id = ?",
                     [time.time(), run_id])
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(store), run_id], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        page.goto(server.url + f"/#/round?run={run_id}")
        option = page.locator("#attempt-picker option").last
        expect(option).to_contain_text("pending", timeout=30_000)
        expect(page.locator(f'#run-picker option[value="{run_id}"]')).not_to_contain_text("stale")
        holder.kill()
        holder.wait()
        expect(page.locator(f'#run-picker option[value="{run_id}"]')).to_contain_text("stale", timeout=10_000)
        expect(option).to_contain_text("stopped: process died", timeout=5_000)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
