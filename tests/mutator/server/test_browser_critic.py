"""The critic table in real headless Chromium: a `warn` row (a parent already over a size cap, grown within
the allowance) shows as a warning and counts as passed; a `fail` row still shows as a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")

ROWS = [{"gate": "changed", "verdict": "pass", "reason": ""},
        {"gate": "size", "verdict": "warn", "reason": "594 lines, 1153507 bytes of text; SKILL.md lines: "
                                                      "parent already over the cap (593 > 500); grew by 1 "
                                                      "within the allowance of 118"},
        {"gate": "growth", "verdict": "pass", "reason": "+74 bytes of an allowance of 230686"}]
RENDER = """async (rows) => {
  const { criticTable } = await import('/lib/checks.js');
  document.body.replaceChildren(criticTable(rows));
}"""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """The dashboard (conftest's `server`) over an empty data dir."""
    data = tmp_path / "project" / "data"
    data.mkdir(parents=True)
    return data


def test_a_warn_row_shows_as_a_warning_and_counts_as_passed(server, page) -> None:
    expect = sync_api.expect
    page.goto(server.url + "/app.css")                         # any page of the dashboard's origin
    page.evaluate(RENDER, ROWS)
    expect(page.locator("#critic h4")).to_contain_text("3/3 gates passed (1 with a warning)")
    size = page.locator('#critic tr[data-gate="size"]')
    expect(size).to_have_class("warn")
    expect(size.locator(".chip")).to_have_class("chip warn")
    expect(size).to_contain_text("parent already over the cap (593 > 500); grew by 1 within the "
                                 "allowance of 118")
    page.evaluate(RENDER, [*ROWS, {"gate": "fences", "verdict": "fail", "reason": "SKILL.md:9 opens a code "
                                                                                  "fence"}])
    expect(page.locator("#critic h4")).to_contain_text("3/4 gates passed (1 with a warning)")
    expect(page.locator('#critic tr[data-gate="fences"]')).to_have_class("fail")
    # a bare stylesheet page asks for /favicon.ico (404); any script error would show here
    assert [e for e in page.console_errors if not e.startswith("Failed to load resource")] == []
