"""The researcher's views in real headless Chromium, on a private copy of the mixed store (greedy, branching,
population and A/A runs): what the gate saw on Round Analysis, a killed run turning stale on an open page, and
the attempts table."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON, wait_live_events

from .conftest import ROOT

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


def _one(store, sql, params=()):
    with sqlite3.connect(store / "mutator.db") as conn:
        return conn.execute(sql, params).fetchone()


def _errors(page) -> list[str]:
    return [e for e in page.console_errors if not e.startswith("Failed to load resource")]


def test_round_analysis_takes_a_verdict_apart_to_its_tasks_and_cells(server, store, page):
    expect = sync_api.expect
    # a branching sibling that passed the gate and lost to a better sibling
    run_id, attempt_id, comparator, n_deltas = _one(store, (
        "select a.run_id, a.id, a.comparator_evaluation_id, (select count(*) from json_each(a.gate, "
        "'$.deltas')) from attempts a join runs r on r.id = a.run_id where r.strategy = 'branching' and "
        "a.verdict = 'REJECT' and json_extract(a.gate, '$.keep') = 1 order by a.id limit 1"))
    page.goto(server.url + f"/#/round/{attempt_id}?run={run_id}")
    expect(page.locator("#round-verdict h2 .badge")).to_have_text("REJECT · lost to a sibling")
    expect(page.locator("#comparator")).to_contain_text("incumbent (the parent)")
    expect(page.locator("#comparator")).to_contain_text(f"evaluation #{comparator}")
    expect(page.locator('#round-scores tr[data-row="comparator"] th')).to_have_text(
        "compared with (incumbent (the parent))")
    rows = page.locator("#task-deltas tbody tr")
    expect(rows).to_have_count(n_deltas)
    expect(page.locator("#task-deltas-chart .uplot")).to_have_count(1)
    rows.first.click()   # the worst task: both sides' cells, side by side
    drawer = page.locator("#drawer .side-by-side-drawer")
    expect(drawer.locator(".candidate .cellbox")).to_have_count(1)      # 1 replicate
    expect(drawer.locator(".comparator .cellbox")).to_have_count(1)
    comparator_cell = int(drawer.locator(".comparator .cellbox").get_attribute("data-cell"))
    assert _one(store, "select evaluation_id from cells where id = ?", [comparator_cell])[0] == comparator
    drawer.locator(".comparator .cellbox").click()
    expect(page.locator("#drawer .cell-drawer")).to_contain_text("Agent stream")
    assert _errors(page) == []


def test_a_killed_run_turns_stale_on_an_open_page_without_a_reload(server, store, page):
    expect = sync_api.expect
    run_id = _one(store, "select id from runs where strategy = 'greedy'")[0]
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from mutator.store.lock import RunLock; "
        f"RunLock.acquire(Path(sys.argv[1]), {run_id!r}, what='run'); print('held', flush=True); "
        "time.sleep(600)"),
        str(store)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        # its last beat long ago, but its lock is held: alive
        with sqlite3.connect(store / "mutator.db") as conn:
            conn.execute("update runs set status = 'running', pid = ?, heartbeat_at = ? where id = ?",
                         [holder.pid, time.time() - 3600, run_id])
            # the same champion measured again with the same figures (a repeated --compare): one card, ×2
            columns = [r[1] for r in conn.execute("pragma table_info(test_runs)") if r[1] != "id"]
            conn.execute(f"insert into test_runs ({', '.join(columns)}) select {', '.join(columns)} from "
                         "test_runs where run_id = ?", [run_id])
        page.goto(server.url + f"/#/home?run={run_id}")
        badge = page.locator("#run-head h2 .badge")
        expect(badge).to_have_text("running")
        expect(page.locator(".test-card")).to_have_count(1)
        expect(page.locator(".test-card .repeats")).to_have_text(" ×2")
        renders = int(page.locator("body").get_attribute("data-renders"))
        holder.send_signal(signal.SIGKILL)   # kill -9: nothing is written to the store
        holder.wait(10)
        expect(badge).to_have_text("stale", timeout=15_000)   # the live stream re-checks liveness every 5 s
        expect(page.locator("#run-head .stale-note")).to_contain_text("process died")
        # a live refresh, not a reload
        assert int(page.locator("body").get_attribute("data-renders")) > renders
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    assert _errors(page) == []


def test_the_attempts_table_sorts_filters_spans_the_skill_and_exports_csv(server, store, page):
    expect = sync_api.expect
    run_id = _one(store, "select id from runs where strategy = 'branching'")[0]
    n_run, n_skill, n_reject = _one(store, (
        "select (select count(*) from attempts where run_id = ?), (select count(*) from attempts), "
        "(select count(*) from attempts where run_id = ? and verdict = 'REJECT')"), [run_id, run_id])
    page.goto(server.url + f"/#/attempts?run={run_id}")
    rows = page.locator("#attempts-table tbody tr")
    expect(rows).to_have_count(n_run)
    page.click('#attempts-table th[data-key="delta"]')   # ascending Δ, blanks (the seed) last
    with sqlite3.connect(store / "mutator.db") as conn:
        by_delta = [r[0] for r in conn.execute("select id from attempts where run_id = ? order by delta is "
                                               "null, delta, id", [run_id])]
    expect(page.locator('#attempts-table th[data-key="delta"]')).to_contain_text("▲")
    assert [int(x) for x in rows.evaluate_all("rs => rs.map((r) => r.dataset.attempt)")] == by_delta
    expect(page.locator("#attempts-table")).to_contain_text("lost to a sibling")
    page.select_option("#attempts-verdict", "REJECT")
    expect(rows).to_have_count(n_reject)
    page.select_option("#attempts-verdict", "")
    page.select_option("#attempts-scope", "skill")   # every run of the skill, the A/A run's copies included
    expect(rows).to_have_count(n_skill)
    csv = page.request.get(server.url + page.locator("#attempts-csv").get_attribute("href"))
    assert csv.status == 200 and csv.headers["content-type"].startswith("text/csv")
    lines = csv.text().strip().split("\n")
    assert (lines[0].startswith("id,run_id,round,sibling,parent_hash,comparator_hash")
            and len(lines) == n_skill + 1)
    rows.first.click()
    expect(page.locator("#round-verdict")).to_be_visible()
    assert _errors(page) == []


def test_run_metadata_notes_what_the_mutator_saw_and_spend_as_the_x_axis(server, store, page):
    expect = sync_api.expect
    run_id, other = [r[0] for r in sqlite3.connect(store / "mutator.db").execute(
        "select id from runs where strategy in ('greedy', 'branching') order by strategy desc")]
    page.goto(server.url + f"/#/home?run={run_id}")
    expect(page.locator("#run-command code")).to_contain_text("--suite clean-train --val clean-val")
    page.click("#notes-edit")
    page.fill("#notes-name", "-baseline")          # a value starting with '-' is never read as a flag
    page.fill("#notes-tags", "demo, greedy")
    page.fill("#notes-note", "the reference run")
    page.click("#notes-save")
    # run.py --annotate ran
    expect(page.locator("#notes .notes-name")).to_have_text("-baseline", timeout=60_000)
    expect(page.locator("#notes .tag")).to_have_text(["demo", "greedy"])
    assert _one(store, "select name, tags, note from notes where target = ?", [f"run:{run_id}"]) == (
        "-baseline", "demo,greedy", "the reference run")
    attempt_id = _one(store, "select id from attempts where run_id = ? and round = 1", [run_id])[0]
    page.goto(server.url + f"/#/round/{attempt_id}?run={run_id}")
    page.click("#open-mutator")
    # briefing.md rendered as markdown that wraps (no raw '#'), its tables readable
    expect(page.locator("#mutator-briefing h3").first).to_contain_text("Briefing — round 1")
    assert "# Briefing" not in page.locator("#mutator-briefing").inner_text()
    assert page.evaluate("getComputedStyle(document.querySelector('#mutator-briefing')).whiteSpace") == "normal"
    expect(page.locator("#mutator-turns .ev-assistant").first).to_contain_text("in / ")
    first = page.locator("#staged-files a").first
    path = first.get_attribute("data-path")
    first.click()
    expect(page.locator("#staged-text")).to_be_visible()
    assert path.split("/")[0] in ("evidence", "history", "tasks")
    page.goto(server.url + f"/#/compare?run={run_id}&runs={run_id},{other}")
    expect(page.locator("#compare-curve .uplot")).to_have_count(1)
    page.select_option("#compare-x", "usd")
    expect(page.locator("#compare-curve .u-label").first).to_have_text("USD so far")
    # History: the task × round heatmap of the stored per-task gate deltas
    n_tasks, n_gated = _one(store, "select (select count(*) from json_each(gate, '$.deltas')), (select "
                                   "count(*) from attempts where run_id = ? and gate is not null) from "
                                   "attempts where run_id = ? and gate is not null limit 1", [run_id, run_id])
    page.goto(server.url + f"/#/history?run={run_id}")
    heat = page.locator(f'.heatmap[data-run="{run_id}"]')
    heat.locator("summary").click()
    expect(heat.locator("tbody tr")).to_have_count(n_tasks)
    expect(heat.locator("thead th")).to_have_count(n_gated + 1)
    assert _errors(page) == []


def test_the_attempt_picker_follows_the_page_after_a_live_update(server, store, page):
    expect = sync_api.expect
    run_id = _one(store, "select id from runs where strategy = 'greedy'")[0]
    last, verdict, before = _one(store, "select a.id, a.verdict, (select id from attempts where run_id = "
                                        "a.run_id and round = a.round - 1) from attempts a where a.run_id = "
                                        "? order by a.round desc limit 1", [run_id])
    with sqlite3.connect(store / "mutator.db") as conn:   # the newest round still running: no verdict yet
        conn.execute("update attempts set verdict = null where id = ?", [last])
    # no attempt named: the page follows the newest decided one
    page.goto(server.url + f"/#/round?run={run_id}")
    picker = page.locator("#attempt-picker")
    expect(picker).to_have_value(str(before))
    wait_live_events(page, 1)   # the live stream's first event is its baseline
    with sqlite3.connect(store / "mutator.db") as conn:   # the loop decides the round
        conn.execute("update attempts set verdict = ? where id = ?", [verdict, last])
        conn.execute("update runs set updated_at = updated_at + 1 where id = ?", [run_id])
    round_no = _one(store, "select round from attempts where id = ?", [last])[0]
    expect(page.locator("#round-verdict h2")).to_contain_text(f"Round {round_no} ")
    expect(picker).to_have_value(str(last))   # the picker names the attempt the page shows
    assert picker.evaluate("s => s.options[s.selectedIndex].text").startswith(f"round {round_no} · {verdict}")
    assert _errors(page) == []
