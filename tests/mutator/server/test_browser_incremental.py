"""Real Chromium: a live update rebuilds only the sections whose data moved. The reader's scroll, open
section, selected attempt, picked and typed values are kept, and an unchanged section is the very same DOM
node."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mutator.store import ledger
from tests.browser_support import CHROMIUM, SKIP_REASON, wait_live_events

KEPT = ("#timeline-section", "#curve-section", "#curve .uplot", "#tests-section",
        ".test-card details.mcnemar")

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


def _mark(page, selectors) -> None:
    page.evaluate("(sels) => sels.forEach((s) => { document.querySelector(s).__kept = s; })", list(selectors))


def _still_marked(page, selectors) -> list[bool]:
    return page.evaluate("(sels) => sels.map((s) => document.querySelector(s)?.__kept === s)",
                         list(selectors))


def _spend(store: Path, run_id: str, more: float) -> float:
    with sqlite3.connect(store / "mutator.db") as conn:
        ledger.charge(conn, run_id=run_id, usd=more, kind="mutator")   # a charge, as the loop writes one
        conn.execute("update runs set updated_at = updated_at + 1 where id = ?", [run_id])
        return conn.execute("select cost_usd from runs where id = ?", [run_id]).fetchone()[0]


def test_a_live_update_replaces_only_the_sections_that_moved(server, page, store):
    expect = sync_api.expect
    with sqlite3.connect(store / "mutator.db") as conn:
        run_id = conn.execute("select id from runs where strategy = 'greedy'").fetchone()[0]
    page.set_viewport_size({"width": 1200, "height": 500})
    page.goto(server.url + f"/#/home?run={run_id}")
    expect(page.locator(".test-card")).to_have_count(1)
    expect(page.locator("#curve .uplot")).to_have_count(1)
    wait_live_events(page, 1)   # the live stream's first event is its baseline
    # the reader's place: a section opened, an attempt selected, a suite picked, scrolled down
    page.locator(".test-card details.mcnemar summary").click()
    page.click('#timeline .node[data-round="2"]')
    attempt = page.locator('#timeline .node[data-round="2"]').get_attribute("data-attempt")
    expect(page.locator("#drawer .attempt-drawer")).to_have_attribute("data-attempt", attempt)
    suites = page.locator("#test-suite option").all_inner_texts()
    picked = next(s for s in suites if s != page.locator("#test-suite").input_value())
    page.select_option("#test-suite", picked)
    page.evaluate("window.scrollTo(0, 300)")
    _mark(page, (*KEPT, "#run-head"))
    before = int(page.evaluate("document.body.dataset.renders"))
    spend = _spend(store, run_id, 0.5)   # the run's header moves; its attempts, curve and tests do not
    expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1), timeout=10_000)
    expect(page.locator("#run-head")).to_contain_text(f"spend ${spend:.4f}")
    assert _still_marked(page, KEPT) == [True] * len(KEPT)          # unchanged sections: the same DOM nodes
    assert _still_marked(page, ["#run-head"]) == [False]             # the moved one was rebuilt
    assert page.evaluate("window.scrollY") == 300
    assert page.locator(".test-card details.mcnemar").get_attribute("open") is not None
    assert page.locator("#test-suite").input_value() == picked
    expect(page.locator("#drawer .attempt-drawer")).to_have_attribute("data-attempt", attempt)
    expect(page.locator("#timeline .node.selected")).to_have_attribute("data-attempt", attempt)
    # typed values in the launch form survive a live update too
    page.click("#open-launch")
    page.fill('form.launch input[name="rounds"]', "17")
    page.check("#launch-real")
    page.fill("#launch-budget", "3.25")
    page.evaluate("document.querySelector('form.launch').__kept = 'form'")
    before = int(page.evaluate("document.body.dataset.renders"))
    spend = _spend(store, run_id, 0.25)
    expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1), timeout=10_000)
    expect(page.locator("#run-head")).to_contain_text(f"spend ${spend:.4f}")
    assert page.evaluate("document.querySelector('form.launch').__kept") == "form"
    assert page.locator('form.launch input[name="rounds"]').input_value() == "17"
    assert page.locator("#launch-budget").input_value() == "3.25"
    assert _still_marked(page, KEPT) == [True] * len(KEPT)
    assert page.console_errors == []


def test_round_analysis_rebuilds_only_the_attempt_part_that_moved(server, page, store):
    expect = sync_api.expect
    with sqlite3.connect(store / "mutator.db") as conn:
        run_id, attempt = conn.execute("select r.id, a.id from runs r join attempts a on a.run_id = r.id "
                                       "where r.strategy = 'greedy' and a.round = 1").fetchone()
    page.goto(server.url + f"/#/round/{attempt}?run={run_id}")
    expect(page.locator("#cell-grid td.cell").first).to_be_visible()
    expect(page.locator("#bars .uplot")).to_have_count(1)
    wait_live_events(page, 1)   # the live stream's first event is its baseline
    kept = ("#round-top", "#round-diff", "#round-scores", "#bars .uplot", "#round-grid", "#round-cells",
            "#scatter .uplot")
    _mark(page, (*kept, "#round-verdict"))
    before = int(page.evaluate("document.body.dataset.renders"))
    # the shown attempt's summary moves, and the run's spend
    with sqlite3.connect(store / "mutator.db") as conn:
        conn.execute("update attempts set summary = 'a summary written later' where id = ?", [attempt])
    _spend(store, run_id, 0.5)
    expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1), timeout=10_000)
    expect(page.locator("#round-verdict .summary")).to_contain_text("a summary written later")
    assert _still_marked(page, kept) == [True] * len(kept)
    assert _still_marked(page, ["#round-verdict"]) == [False]
    assert page.console_errors == []


def test_the_lineage_tree_stays_drawn_when_its_run_did_not_change(server, page, store):
    expect = sync_api.expect
    with sqlite3.connect(store / "mutator.db") as conn:
        run_id = conn.execute("select id from runs where strategy = 'population'").fetchone()[0]
    page.goto(server.url + f"/#/lineage?run={run_id}")
    expect(page.locator("#tree .tnode").first).to_be_visible()
    wait_live_events(page, 1)   # the live stream's first event is its baseline
    page.click("#zoom-in")
    transform = page.locator("#tree").evaluate("el => el.style.transform")
    _mark(page, ["#tree", "#chain"])
    before = int(page.evaluate("document.body.dataset.renders"))
    _spend(store, run_id, 0.5)   # the run moved, its lineage did not
    expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1), timeout=10_000)
    assert _still_marked(page, ["#tree", "#chain"]) == [True, True]
    assert page.locator("#tree").evaluate("el => el.style.transform") == transform
    page.click("#collapse-all")                   # a fold is a change: the tree is drawn anew, zoom kept
    page.wait_for_function("() => document.querySelector('#tree') && document.querySelector('#tree').__kept "
                           "!== '#tree'", timeout=10_000)   # the click redraws asynchronously: wait for it
    expect(page.locator("#tree")).to_have_count(1)
    assert _still_marked(page, ["#tree"]) == [False]
    assert page.locator("#tree").evaluate("el => el.style.transform") == transform
    assert page.console_errors == []
