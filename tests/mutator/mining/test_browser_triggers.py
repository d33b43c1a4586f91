"""The Proposals page shows the watch's ticks, in real headless Chromium against the real app."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutator.store.db import connect
from tests.browser_support import CHROMIUM, SKIP_REASON, Server, chromium_page

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
ARTIFACTS = Path(__file__).parent / "artifacts"


def test_the_proposals_page_lists_the_watch_ticks(tmp_path: Path) -> None:
    data = tmp_path / "project" / "data"
    db = connect(data / "mutator.db")
    db["triggers"].insert_all([
        {"at": 1_800_000_000.0, "skill_dir": "/srv/skills/csv-clean", "suites": "/srv/suites/live", "traces_seen": 9,
         "eligible": 4, "new_eligible": 4, "min_traces": 6, "outcome": "skipped-trigger",
         "reason": "4 new eligible request(s) since the last run; the trigger needs 6 (--min-traces)"},
        {"at": 1_800_021_600.0, "skill_dir": "/srv/skills/csv-clean", "suites": "/srv/suites/live", "traces_seen": 30,
         "eligible": 12, "new_eligible": 12, "min_traces": 6, "outcome": "failed", "reason": "the loop exited 3",
         "judge_cost_usd": 0.0125}])
    db.conn.commit()
    server = Server(data, token="tok")
    try:
        with chromium_page(ARTIFACTS) as page:
            page.goto(server.url + "/#/home")
            page.click('#links a[data-page="proposals"]')
            rows = page.locator("#triggers tbody tr")
            sync_api.expect(rows).to_have_count(2, timeout=15000)
            sync_api.expect(rows.first).to_contain_text("failed")
            sync_api.expect(rows.first.locator(".judge-cost")).to_have_text("$0.0125")   # the judge pass's spend
            sync_api.expect(rows.nth(1).locator(".judge-cost")).to_have_text("—")
            sync_api.expect(rows.nth(1)).to_contain_text("skipped-trigger")
            sync_api.expect(rows.nth(1)).to_contain_text("4 / 6")
            assert page.console_errors == []
    finally:
        server.stop()
