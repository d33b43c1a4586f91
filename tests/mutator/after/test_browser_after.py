"""The Proposals, Health and Cost pages in real headless Chromium (Playwright), against the real app on a
free loopback port, over a dry run plus health checks made by run.py. Screenshots go to artifacts/."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from mutator.after.spend import view
from mutator.store.db import connect
from tests.browser_support import CHROMIUM, SKIP_REASON, Server, chromium_page
from tests.conftest import copy_store, run_py

from .conftest import SEED

ARTIFACTS = Path(__file__).parent / "artifacts"
TOKEN = "after-token-123"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


@pytest.fixture
def watched(dry_run, tmp_path) -> dict:
    """A copy of the dry run's store, a deployed skill folder with two health checks, a daily budget at ~90 %."""
    data = tmp_path / "project" / "data"
    copy_store(dry_run["data"], data)
    skill = tmp_path / "skills" / "csv-clean"
    shutil.copytree(SEED, skill)
    for _ in range(2):
        done = run_py("--check", str(skill), "--suite", "clean-val", "--replicates", "1", "--data-dir", str(data))
        assert done.returncode in (0, 6), done.stderr[-2000:]
    spent = view(connect(data / "mutator.db"))["today"]
    with sqlite3.connect(data / "mutator.db") as conn:
        conn.execute("insert into spend_limits (name, usd, set_at) values ('daily', ?, ?)", [spent / 0.9, time.time()])
        # the dry run proposed into the demo's own seed folder, which the page never offers: point it elsewhere
        conn.execute("update proposals set target_dir = ?", [str(skill)])
    return {"data": data, "skill": skill}


@pytest.fixture
def server(watched):
    srv = Server(watched["data"], token=TOKEN)
    yield srv
    srv.stop()


@pytest.fixture
def page():
    with chromium_page(ARTIFACTS) as pg:
        yield pg


def test_health_cost_and_proposals_pages(server, page, watched):
    expect = sync_api.expect
    page.goto(server.url + "/#/home")
    page.click('#links a[data-page="health"]')
    status = page.locator("#health-status")
    expect(status).to_be_visible(timeout=15000)
    assert status.inner_text() in ("healthy", "drifting", "regressed")
    expect(page.locator("#health-summary")).to_contain_text("Health check")
    expect(page.locator("#health-latest")).to_contain_text("/100")
    expect(page.locator("#health-reach")).to_contain_text("(1 day so far)")    # one day of data in a 30-day range
    expect(page.locator("#health-trend .uplot")).to_have_count(1)
    rows = page.locator("#health-tasks tbody tr")
    expect(rows).to_have_count(8)
    scores = [float(rows.nth(i).locator("td").nth(1).inner_text()) for i in range(8)]
    assert scores == sorted(scores)                                          # worst first
    expect(page.locator("#health-cost")).to_contain_text("last check $")
    page.select_option("#health-days", "365")
    expect(page.locator("#health-reach")).to_contain_text("day so far")
    expect(page.locator("#health-cost")).to_contain_text("the last 365 days")
    page.screenshot(path=str(ARTIFACTS / "health.png"), full_page=True)

    page.click('#links a[data-page="cost"]')
    expect(page.locator("#budget")).to_contain_text("Warning")
    expect(page.locator("#budget")).to_contain_text("daily budget spent today (90 %)")
    expect(page.locator("#spend-today")).to_contain_text("$")
    expect(page.locator("#spend-runs tbody tr")).to_have_count(2)                     # the run + health checks
    expect(page.locator("#spend-runs")).to_contain_text("health checks")
    expect(page.locator("#spend-models tbody tr")).to_have_count(2)                   # build + mutator model
    expect(page.locator("#cost-daily .uplot")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "cost.png"), full_page=True)

    page.click('#links a[data-page="proposals"]')
    row = page.locator("#proposals tbody tr").first
    expect(row).to_contain_text("proposed")
    expect(row.locator("button.accept")).to_be_enabled()
    row.locator("a").first.click()
    expect(page.locator(".proposal-detail pre.diff")).to_contain_text("diff --git a/")
    page.fill("#proposal-text-1", "not this one")
    page.once("dialog", lambda dialog: dialog.accept())   # Reject asks first
    row.locator("button.reject").click()
    expect(page.locator("#proposal-message")).to_contain_text("Rejecting proposal 1")
    expect(page.locator("#proposals tbody tr").first).to_contain_text("rejected", timeout=30000)
    expect(page.locator("#proposals tbody tr").first.locator("button.accept")).to_be_disabled()
    page.screenshot(path=str(ARTIFACTS / "proposals.png"), full_page=True)
    assert page.console_errors == []
