"""Real Chromium over the mixed store: every label names its figure, no bad link shows another run, History's
champion line has no gap and A/A runs are drawn as A/A, the test-suite picker offers the run's own holdout
first, Attempts shows and filters on each change, legends read without hovering; and the API's unknowns are
JSON 404s."""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


def _runs(store) -> dict[str, str]:
    with sqlite3.connect(store / "mutator.db") as conn:
        return dict(conn.execute("select strategy, id from runs"))


def _get(url: str) -> tuple[int, str, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], json.loads(err.read())


def test_unknown_run_attempt_and_api_paths_say_so(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    meta = _get(server.url + "/api/meta")[2]
    sid = meta["stores"][0]["id"]
    status, kind, body = _get(server.url + f"/api/attempts?store={sid}&run=run-000000000000")
    assert (status, kind.split(";")[0]) == (404, "application/json") and "no such run" in body["error"]
    status, kind, body = _get(server.url + "/api/attempts/12345678901234567890")
    assert (status, kind.split(";")[0]) == (404, "application/json") and "error" in body
    for page_name in ("home", "lineage", "attempts"):
        page.goto(server.url + f"/#/{page_name}?run=run-000000000000")
        expect(page.locator("#unknown h2")).to_have_text("No run run-000000000000 in this store")
        expect(page.locator("#known-runs li")).to_have_count(len(runs))
        assert page.locator("#run-head, #chain, #attempts-table").count() == 0   # no other run's figures
    page.goto(server.url + f"/#/round/999999999?run={runs['greedy']}")
    expect(page.locator("#unknown h2")).to_have_text(f"No attempt 999999999 in run {runs['greedy']}")
    assert page.locator("#round-verdict").count() == 0
    # the page asked for the attempt and heard 404: that load is the only console line
    assert [e for e in page.console_errors if "404 (Not Found)" not in e] == []


def test_history_champion_line_has_no_gap_and_aa_is_drawn_as_aa(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    with sqlite3.connect(store / "mutator.db") as conn:   # the greedy run has a round with no val figure
        gaps = conn.execute("select count(distinct round) from attempts a where run_id = ? and round not in "
                            "(select round from attempts where run_id = a.run_id and composite is not null)",
                            [runs["greedy"]]).fetchone()[0]
    assert gaps >= 1
    page.goto(server.url + f"/#/history?run={runs['greedy']}")
    box = f'.regime[data-kind] .chart[data-run="{runs["greedy"]}"]'
    expect(page.locator(box + " .uplot")).to_have_count(1)
    champion = page.evaluate(f"document.querySelector('{box}').uplot.data[1]")
    first = next(i for i, v in enumerate(champion) if v is not None)
    assert None not in champion[first:], champion
    # the legend reads a value with no cursor on the chart
    legend = page.locator(box + " .u-legend .u-series").nth(1).locator(".u-value")
    expect(legend).not_to_have_text("--")
    aa = f'#history-aa .chart[data-run="{runs["aa"]}"]'
    labels = page.evaluate(f"document.querySelector('{aa}').uplot.series.map((s) => s.label)")
    assert labels[0] == "A/A copy" and labels[1].startswith("copy of the seed"), labels
    assert page.console_errors == []


def test_suite_picker_offers_the_runs_own_holdout_first(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    with sqlite3.connect(store / "mutator.db") as conn:
        conn.execute("update runs set holdout = 'suites/trigger-test' where id = ?", [runs["greedy"]])
    page.goto(server.url + f"/#/home?run={runs['greedy']}")
    expect(page.locator("#test-suite option").first).to_have_attribute("value", "suites/trigger-test")
    assert page.locator("#test-suite").input_value() == "suites/trigger-test"


def test_attempts_show_and_filter_each_change_and_round_labels_name_their_figure(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    with sqlite3.connect(store / "mutator.db") as conn:
        conn.execute("update attempts set summary = 'tighten the quoting rule' where id = (select max(id) from "
                     "attempts where run_id = ? and round > 0)", [runs["greedy"]])
        total = conn.execute("select count(*) from attempts where run_id = ?", [runs["greedy"]]).fetchone()[0]
        gate_z, = conn.execute("select gate_z from runs where id = ?", [runs["greedy"]]).fetchone()
        gated, = conn.execute("select id from attempts where run_id = ? and gate is not null order by id limit 1",
                              [runs["greedy"]]).fetchone()
    page.goto(server.url + f"/#/attempts?run={runs['greedy']}")
    expect(page.locator("#attempts-table thead")).to_contain_text("change")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(total)
    page.fill("#attempts-filter", "quoting rule")
    page.press("#attempts-filter", "Enter")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(1)
    expect(page.locator("#attempts-table tbody tr")).to_contain_text("tighten the quoting rule")
    page.goto(server.url + f"/#/round/{gated}?run={runs['greedy']}")
    verdict = page.locator("#round-verdict")
    expect(verdict).to_contain_text("gateZ of this run")
    expect(verdict).to_contain_text("critical value t*")
    expect(verdict).to_contain_text("t statistic (Δ / SE)")
    row = verdict.locator("tr", has_text="gateZ of this run")
    expect(row).to_contain_text(f"{gate_z:g}")
    assert "gateZ / minImprovement" not in verdict.inner_text()
    assert page.console_errors == []


def test_cost_links_each_run_and_names_an_own_mutator_commands_row(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    with sqlite3.connect(store / "mutator.db") as conn:   # the greedy run's mutator was its own command
        conn.execute("update runs set mutator_model = null where id = ?", [runs["greedy"]])
    page.goto(server.url + "/#/cost")
    expect(page.locator("#spend-models")).to_contain_text("own mutator command (--mutator-cmd)")
    assert page.locator("#spend-models td", has_text="?").count() == 0
    link = page.locator("#spend-runs a.run-link", has_text=runs["greedy"])
    expect(link).to_have_count(1)
    link.click()
    expect(page.locator("#run-head h2")).to_contain_text(runs["greedy"])
    assert page.console_errors == []


def test_a_repeat_look_of_one_champion_is_one_test_card(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    with sqlite3.connect(store / "mutator.db") as conn:
        conn.row_factory = sqlite3.Row
        first = dict(conn.execute("select * from test_runs where run_id = ? and status = 'done' order by id limit 1",
                                  [runs["greedy"]]).fetchone())
        report = json.loads(first["report"])
        report["look"] = {**(report.get("look") or {}), "k": 1, "looks": 4, "repeat_of": first["id"]}
        again = {**first, "id": None, "report": json.dumps(report), "created_at": first["created_at"] + 60}
        names = [k for k in again if k != "id"]
        conn.execute(f"insert into test_runs ({', '.join(names)}) values ({', '.join('?' * len(names))})",
                     [again[k] for k in names])
    page.goto(server.url + f"/#/home?run={runs['greedy']}")
    expect(page.locator("#tests-section .test-card")).to_have_count(1)
    expect(page.locator("#tests-section .test-card .repeats")).to_have_text(" ×2")
