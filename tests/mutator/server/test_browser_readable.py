"""Real Chromium over the mixed store: the skill-use table lists every round of the run (the store's reason
beside a round with no skill-use data), the mutator's briefing renders as markdown whose table fits the drawer,
the Round Analysis scatter's axis fits cells that all cost the same, and Cost draws today's bar whole and links
every run."""

from __future__ import annotations

import json
import sqlite3
import urllib.request

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


def _rows(store, sql: str, args=()) -> list[tuple]:
    with sqlite3.connect(store / "mutator.db") as conn:
        return conn.execute(sql, args).fetchall()


def _greedy(store) -> str:
    return _rows(store, "select id from runs where strategy = 'greedy'")[0][0]


def _api(server, path: str) -> dict:
    with urllib.request.urlopen(server.url + "/api/meta", timeout=10) as response:
        sid = json.loads(response.read())["stores"][0]["id"]
    with urllib.request.urlopen(f"{server.url}/api/{path}{'&' if '?' in path else '?'}store={sid}",
                                timeout=10) as response:
        return json.loads(response.read())


def test_skill_use_by_round_lists_every_round_with_the_stores_reason(server, page, store):
    expect = sync_api.expect
    run_id = _greedy(store)
    attempts = _rows(store, "select id, round, verdict, val_evaluation_id from attempts where run_id = ? "
                            "order by round, sibling", [run_id])
    unevaluated = [a for a in attempts if a[3] is None]
    assert {a[2] for a in unevaluated} >= {"SCREENED", "CRITIC"}   # the demo's rounds with no val evaluation
    kept = next(a for a in attempts if a[2] == "KEEP")
    reasons = {r["attempt_id"]: r["reason"] for r in
               _api(server, f"attempts/{kept[0]}")["attempt"]["skill_use"]["trigger_rounds"]}
    assert [reasons[a[0]] is None for a in attempts] == [a[3] is not None for a in attempts]
    assert "critic rejected" in reasons[next(a[0] for a in unevaluated if a[2] == "CRITIC")]
    assert "screen stopped" in reasons[next(a[0] for a in unevaluated if a[2] == "SCREENED")]
    page.goto(server.url + f"/#/round/{kept[0]}?run={run_id}")
    rows = page.locator("#trigger-rounds tbody tr")
    expect(rows).to_have_count(len(attempts))   # every round, none skipped
    for i, (attempt_id, rnd, verdict, _) in enumerate(attempts):
        expect(rows.nth(i)).to_have_attribute("data-attempt", str(attempt_id))
        expect(rows.nth(i).locator("th")).to_have_text(str(rnd))
        expect(rows.nth(i).locator("td").first).to_have_text(verdict)
        if reasons[attempt_id]:   # the API's words, not the page's
            expect(rows.nth(i).locator("td.why-none")).to_have_text(reasons[attempt_id])
    # a round with no evaluation shows the table too, and says why it has no skill use of its own
    critic = next(a for a in unevaluated if a[2] == "CRITIC")
    page.goto(server.url + f"/#/round/{critic[0]}?run={run_id}")
    expect(page.locator("#skill-use-none")).to_have_text(f"no skill use for this candidate: {reasons[critic[0]]}")
    expect(page.locator("#trigger-rounds tbody tr")).to_have_count(len(attempts))
    assert page.console_errors == []


def test_the_mutators_briefing_is_markdown_whose_table_fits_the_drawer(server, page, store):
    expect = sync_api.expect
    run_id = _greedy(store)
    attempt_id = _rows(store, "select id from attempts where run_id = ? and round = 1", [run_id])[0][0]
    page.goto(server.url + f"/#/round/{attempt_id}?run={run_id}")
    page.click("#open-mutator")
    briefing = page.locator("#mutator-briefing")
    expect(briefing.locator("table").first).to_be_visible()   # the briefing's task table is a table
    assert "|---" not in briefing.inner_text() and "| ---" not in briefing.inner_text()
    fit = page.evaluate("""() => {
      const drawer = document.querySelector('#drawer');
      const box = drawer.getBoundingClientRect();
      const tables = [...drawer.querySelectorAll('#mutator-briefing table')].map((t) => t.getBoundingClientRect());
      return { scroll: drawer.scrollWidth, client: drawer.clientWidth, right: box.right, left: box.left,
               tables: tables.map((t) => [t.left, t.right]) };
    }""")
    assert fit["scroll"] <= fit["client"], fit   # the drawer does not scroll sideways
    for left, right in fit["tables"]:             # each table is read whole inside it
        assert fit["left"] <= left and right <= fit["right"], fit
    assert page.console_errors == []


def test_the_scatter_axis_fits_cells_that_all_cost_the_same(server, page, store):
    expect = sync_api.expect
    run_id = _greedy(store)
    attempt_id, evaluation_id = _rows(store, "select id, val_evaluation_id from attempts where run_id = ? and "
                                             "round = 1", [run_id])[0]
    with sqlite3.connect(store / "mutator.db") as conn:
        conn.execute("update cells set cost_usd = 0.0116 where evaluation_id = ?", [evaluation_id])
    page.goto(server.url + f"/#/round/{attempt_id}?run={run_id}")
    expect(page.locator("#scatter .uplot")).to_have_count(1)
    axis = page.evaluate("""() => { const u = document.querySelector('#scatter').uplot;
      return { min: u.scales.x.min, max: u.scales.x.max, ticks: u.axes[0]._values }; }""")
    assert 0.0116 * 0.8 <= axis["min"] < 0.0116 < axis["max"] <= 0.0116 * 1.2, axis   # not 0 – 0.024
    ticks = [float(t.replace(",", "")) for t in axis["ticks"] if t]
    assert ticks and all(0.0116 * 0.8 <= t <= 0.0116 * 1.2 for t in ticks), axis


def test_cost_draws_todays_bar_whole_and_links_every_run(server, page, store):
    expect = sync_api.expect
    runs = [r[0] for r in _rows(store, "select id from runs")]
    page.goto(server.url + "/#/cost")
    expect(page.locator("#cost-daily .uplot")).to_have_count(1)
    bar = page.evaluate("""() => { const u = document.querySelector('#cost-daily').uplot;
      const xs = u.data[0], last = xs[xs.length - 1];
      const day = Math.abs(u.valToPos(last, 'x') - u.valToPos(last - 86400, 'x'));
      return { centre: u.valToPos(last, 'x'), half: Math.min(0.3 * day, 20), width: u.bbox.width / devicePixelRatio,
               today: u.data[1][xs.length - 1] }; }""")
    assert bar["today"] > 0, bar   # the store spent today: the bar is drawn
    assert 0 <= bar["centre"] - bar["half"] and bar["centre"] + bar["half"] <= bar["width"], bar   # not clipped
    for run_id in runs:   # every run's row is a link to that run
        expect(page.locator("#spend-runs a.run-link", has_text=run_id)).to_have_count(1)
    expect(page.locator("#spend-runs tbody tr")).to_have_count(len(runs))
    assert page.console_errors == []
