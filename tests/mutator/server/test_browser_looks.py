"""Round Analysis in real headless Chromium shows what sequential val stored for an attempt: one row per look
(replicates, cells, z, Δ, threshold, decision) and the look the verdict rests on; and a screen's record."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


@pytest.fixture
def store(store_copy):
    """The dashboard (conftest's `server`) over a copy of the dry store."""
    return store_copy


def test_round_analysis_shows_every_stored_look_and_the_screen(server, store_copy, page, run_id) -> None:
    expect = sync_api.expect
    db = sqlite3.connect(store_copy / "mutator.db")
    attempt_id, looks = db.execute("select id, looks from attempts where run_id = ? and looks is not null "
                                   "order by round limit 1", [run_id]).fetchone()
    looks = json.loads(looks)
    screen = {"tasks": ["t1", "t2", "t3"], "replicates": 1, "cells": 3, "z": 2.0, "decision": None,
              "gate": {"delta": 0.0125, "threshold": -0.25}}
    # a doctored row
    db.execute("update attempts set screen = ? where id = ?", [json.dumps(screen), attempt_id])
    db.commit()
    db.close()
    page.goto(server.url + f"/#/round/{attempt_id}?run={run_id}")
    rows = page.locator("#looks tbody tr")
    expect(rows).to_have_count(len(looks))
    last = looks[-1]
    decided = f"decided at look {last['look']} · {last['cells']} cells"
    expect(page.locator("#looks h4")).to_contain_text(decided)
    for look in looks:
        row = page.locator(f'#looks tr[data-look="{look["look"]}"]')
        expect(row).to_contain_text(f"{look['gate']['delta']:+.4f}")
        expect(row).to_contain_text(look["decision"] or "—")
    # the per-task view names the look its deltas are from, and shows any earlier look's on request
    line = page.locator("#task-deltas-look")
    expect(line).to_contain_text(f"look {last['look']} of {len(looks)} taken")
    expect(line).to_contain_text(f"{last['cells']} cells")
    expect(line).to_contain_text("the look the verdict rests on")
    for look in ([looks[0], last] if len(looks) > 1 else [last]):
        if len(looks) > 1:
            page.select_option("#task-deltas-look-picker", str(look["look"]))
            expect(line).to_have_attribute("data-look", str(look["look"]))
        shown = {r.get_attribute("data-task"): r.locator("td").nth(1).inner_text()
                 for r in page.locator("#task-deltas tbody tr").all()}
        assert shown == {task: f"{d:+.4f}" for task, d in look["gate"]["deltas"].items()}, look["look"]
        expect(page.locator("#round-task-deltas h3 small")).to_contain_text(
            f"Δ {look['gate']['delta']:+.4f} vs threshold {look['gate']['threshold']:+.4f}")
    assert len(looks) > 1   # the store's shape: val in 2 waves, decided at the last
    expect(page.locator("#screen")).to_contain_text("t1, t2, t3")
    expect(page.locator("#screen")).to_contain_text("passed: on to val")
    assert [e for e in page.console_errors if not e.startswith("Failed to load resource")] == []
