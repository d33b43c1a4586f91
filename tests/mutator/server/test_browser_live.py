"""Real Chromium over the mixed store: A/A runs listed apart, the page working under its CSP, the "vs the
seed" bars following the attempt, and a live update that keeps the reader's place and refetches only what
moved."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from mutator.store import ledger
from tests.browser_support import CHROMIUM, SKIP_REASON, live_events, wait_live_events

from .conftest import ARTIFACTS

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


def _runs(store: Path) -> dict[str, str]:
    with sqlite3.connect(store / "mutator.db") as conn:
        return dict(conn.execute("select strategy, id from runs"))


def _renders(page) -> int:
    return int(page.evaluate("document.body.dataset.renders || 0"))


def test_aa_runs_are_apart_and_the_page_runs_under_its_csp(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    response = page.goto(server.url + "/#/home")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator("#timeline .node").first).to_be_visible()
    assert not page.locator("#run-picker").input_value().startswith("aa-")   # the newest run is the A/A run
    expect(page.locator('#run-picker optgroup[label^="A/A"] option')).to_have_count(1)
    page.select_option("#run-picker", runs["aa"])
    expect(page.locator("#timeline .node")).to_have_count(4)
    expect(page.locator("#aa-view #aa-rate")).to_contain_text("false calls")
    expect(page.locator("#aa-copies tbody tr")).to_have_count(3)
    expect(page.locator("#aa-chart .uplot")).to_have_count(1)
    expect(page.locator("#curve")).to_have_count(0)   # no optimisation curve: an A/A run evolves nothing
    page.screenshot(path=str(ARTIFACTS / "aa.png"), full_page=True)
    page.click('#links a[data-page="lineage"]')
    expect(page.locator("#chain")).to_contain_text("champion")
    page.click('#links a[data-page="history"]')
    expect(page.locator("#history-aa .regime")).to_have_count(1)
    expect(page.locator(".regime:not(.aa)")).to_have_count(3)
    assert page.console_errors == []   # a CSP violation is reported as a console error


def test_the_bars_and_the_reason_follow_the_attempt(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    with sqlite3.connect(store / "mutator.db") as conn:
        ids = dict(conn.execute("select round || '.' || sibling, id from attempts where run_id = ?",
                                [runs["branching"]]))
        kept = dict(conn.execute("select round, sibling from attempts where run_id = ? and verdict = 'KEEP'",
                                 [runs["branching"]]))
    page.goto(server.url + f"/#/round/{ids['0.0']}?run={runs['branching']}")
    bars = page.locator("#bars")
    expect(bars).to_have_attribute("data-attempt", str(ids["0.0"]))
    expect(bars).to_have_attribute("data-labels", "seed,candidate")
    expect(page.locator("#verdict-reason")).to_contain_text("seed:")
    for key, labels in (("2.0", "seed,parent,candidate"), ("0.0", "seed,candidate"),
                        ("1.1", "seed,parent,candidate")):
        page.select_option("#attempt-picker", str(ids[key]))
        expect(bars).to_have_attribute("data-attempt", str(ids[key]))
        expect(bars).to_have_attribute("data-labels", labels)
        shown = page.evaluate("(() => { const u = document.querySelector('#bars').uplot;"
                              " return [u.data[0].length, u.scales.x.max, u.root.isConnected]; })()")
        assert shown == [len(labels.split(",")), len(labels.split(",")) - 0.5, True], key
        expect(page.locator("#bars .uplot")).to_have_count(1)
    # the store's shape: round 1 kept sibling 0, round 2 another sibling
    assert kept[1] == 0 and kept[2] != 0
    expect(page.locator("#verdict-reason")).to_contain_text("rejected: sibling 0 was better")
    page.select_option("#attempt-picker", str(ids["2.0"]))
    expect(page.locator("#verdict-reason")).to_contain_text(f"rejected: sibling {kept[2]} was better")
    page.screenshot(path=str(ARTIFACTS / "round-reason.png"), full_page=True)
    assert page.console_errors == []


def test_a_live_update_keeps_the_readers_place_and_refetches_only_what_moved(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    page.set_viewport_size({"width": 1200, "height": 500})
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "/api/runs/" in r.url else None)
    page.goto(server.url + f"/#/home?run={runs['greedy']}")
    expect(page.locator(".test-card")).to_have_count(1)
    wait_live_events(page, 1)   # the live stream's first event is its baseline
    # the reader's place: a section opened, a picked value, and scrolled down
    page.locator(".test-card details.mcnemar summary").click()
    suites = page.locator("#test-suite option").all_inner_texts()
    picked = next(s for s in suites if s != page.locator("#test-suite").input_value())
    page.select_option("#test-suite", picked)
    page.evaluate("window.scrollTo(0, 300)")
    before, fetched_before, events = _renders(page), len(fetched), live_events(page)
    # a write to another run, not in what the pickers show: its change event comes, and nothing is refetched
    with sqlite3.connect(store / "mutator.db") as conn:
        conn.execute("update runs set updated_at = updated_at + 1 where id = ?", [runs["branching"]])
    wait_live_events(page, events + 1)
    page.wait_for_timeout(500)   # room for a wrong refetch to show: the handler would start it at once
    assert _renders(page) == before and len(fetched) == fetched_before
    # a write to the shown run: one live refresh, and the place is kept
    with sqlite3.connect(store / "mutator.db") as conn:
        # a charge, as the loop writes one
        ledger.charge(conn, run_id=runs["greedy"], usd=0.5, kind="mutator")
        conn.execute("update runs set updated_at = updated_at + 1 where id = ?", [runs["greedy"]])
        spend = conn.execute("select cost_usd from runs where id = ?", [runs["greedy"]]).fetchone()[0]
    expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1), timeout=10_000)
    assert len(fetched) > fetched_before
    assert page.evaluate("window.scrollY") == 300
    assert page.locator(".test-card details.mcnemar").get_attribute("open") is not None
    assert page.locator("#test-suite").input_value() == picked
    assert page.locator("#run-picker").input_value() == runs["greedy"]
    expect(page.locator(".run-head")).to_contain_text(f"spend ${spend:.4f}")   # the new figure is shown
    assert page.console_errors == []


def test_accept_asks_first_and_never_offers_the_demo_seed(server, page, store, tmp_path):
    expect = sync_api.expect
    runs = _runs(store)
    target = tmp_path / "deployed" / "csv-clean"
    target.parent.mkdir()   # a deploy writes beside the folder, into an existing parent
    with sqlite3.connect(store / "mutator.db") as conn:
        ids = dict(conn.execute("select run_id, id from proposals"))
        conn.execute("update proposals set target_dir = ? where id = ?",
                     [str(target), ids[runs["population"]]])
    page.goto(server.url + "/#/proposals")
    demo = page.locator("#proposals tbody tr", has_text=runs["greedy"])
    expect(demo.locator("button.accept")).to_be_disabled()
    expect(demo).to_contain_text("not offered")
    assert "suites" not in demo.inner_text()
    mine = page.locator("#proposals tbody tr", has_text=runs["population"])
    expect(mine.locator("button.accept")).to_be_enabled()
    asked: list[str] = []

    def dismiss(dialog):
        asked.append(dialog.message)
        dialog.dismiss()
    page.once("dialog", dismiss)
    mine.locator("button.accept").click()
    expect(page.locator("#proposal-message")).to_contain_text("nothing done")
    assert str(target) in asked[0] and "rollback" in asked[0]
    assert server.processes() == []                       # dismissed: nothing was started
    page.once("dialog", lambda dialog: dialog.accept())
    mine.locator("button.accept").click()
    expect(page.locator("#proposal-message")).to_contain_text("Deploying proposal")
    deadline = time.monotonic() + 60
    while any(p["status"] == "running" for p in server.processes()) and time.monotonic() < deadline:
        time.sleep(0.3)
    [proc] = server.processes()
    assert proc["kind"] == "accept" and proc["argv"][-2:] == ["--to", str(target)] and proc["returncode"] == 0
    assert (target / "SKILL.md").is_file()
    assert page.console_errors == []


def test_compare_runs_on_one_axis(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    page.goto(server.url + f"/#/compare?run={runs['greedy']}")
    expect(page.locator("#compare-pick input")).to_have_count(3)        # A/A runs are not offered
    expect(page.locator("#compare-empty")).to_be_visible()
    page.check(f'#compare-pick input[value="{runs["greedy"]}"]')
    page.check(f'#compare-pick input[value="{runs["branching"]}"]')
    expect(page.locator("#compare-curve .uplot")).to_have_count(1)
    expect(page.locator("#compare-table thead th")).to_have_count(3)
    expect(page.locator("#compare-table")).to_contain_text("test clean-test")
    pair = page.locator(f'#compare-pairs tr[data-pair="{runs["greedy"]}|{runs["branching"]}|clean-test"]')
    expect(pair).to_have_count(1)
    expect(pair).to_contain_text("±")
    page.check(f'#compare-pick input[value="{runs["population"]}"]')
    expect(page.locator("#compare-table thead th")).to_have_count(4)
    # round + (champion, test) × 3
    expect(page.locator("#compare-curve .u-legend .u-series")).to_have_count(7)
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
    assert page.console_errors == []


def test_the_lineage_tree_draws_real_parents_and_refs(server, page, store):
    expect = sync_api.expect
    runs = _runs(store)
    with sqlite3.connect(store / "mutator.db") as conn:
        n_attempts = conn.execute("select count(*) from attempts where run_id = ?",
                                  [runs["population"]]).fetchone()[0]
        # a crossover whose reference is not the seed (the tree's root has no branch above it to fold)
        crossed = conn.execute("select id, parent_hash, ref_hashes from attempts where run_id = ? and "
                               "ref_hashes like '[\"%' and ref_hashes not like '%' || (select genome_hash "
                               "from attempts where run_id = ? and round = 0) || '%' order by id",
                               [runs["population"], runs["population"]]).fetchone()
    page.goto(server.url + f"/#/lineage?run={runs['population']}")
    expect(page.locator("#tree .tnode")).to_have_count(n_attempts)
    chain = page.locator("#chain a.hash")
    # the trunk is the champion's ancestry
    expect(page.locator("#tree .tnode.trunk")).to_have_count(chain.count())
    # the crossover child hangs under its real parent and links its reference
    child = page.locator(f'#tree li[data-attempt="{crossed[0]}"]')
    parent = page.locator(f'#tree li[data-key="{crossed[1]}"]')
    assert parent.locator(f'li[data-attempt="{crossed[0]}"]').count() == 1 or child.evaluate(
        "(el, key) => el.previousElementSibling?.dataset.key === key || "
        "el.closest('ul').closest('li')?.dataset.key === key",
        crossed[1])
    ref = child.locator(":scope > .tlabel a.ref")   # its own label's link (its children may carry refs too)
    expect(ref).to_have_count(1)
    ref.click()
    ref_hash = crossed[2].split('"')[1]
    expect(page.locator(f'#tree li[data-key="{ref_hash}"] > .tlabel')).to_have_class("tlabel focus")
    # a collapsed branch unfolds to show the node it centres: fold the branch holding the ref's genome
    holder = page.locator(f'#tree li:has(> ul li[data-key="{ref_hash}"]) > .tlabel button.toggle').last
    if holder.count():   # the reference sits below a foldable branch (not a direct child of the root)
        holder.click()
        expect(page.locator(f'#tree li[data-key="{ref_hash}"]')).to_have_count(0)
        page.locator(f'#tree li[data-attempt="{crossed[0]}"] > .tlabel a.ref').click()
        expect(page.locator(f'#tree li[data-key="{ref_hash}"] > .tlabel')).to_have_class("tlabel focus")
    chain.last.click()                                   # the seed: centred in the tree
    expect(page.locator("#tree .tlabel.focus")).to_have_count(1)
    expect(page.locator(f'#tree li[data-key="{chain.last.get_attribute("data-hash")}"] > .tlabel.focus')
           ).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "lineage-population.png"), full_page=True)
    assert page.console_errors == []
