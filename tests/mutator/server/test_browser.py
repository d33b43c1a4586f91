"""End to end in real headless Chromium (Playwright): every page, the pickers, drawers, the diff, the
lineage tree, and a dry run launched from the drawer appearing live. Screenshots go to artifacts/."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON

from .conftest import ARTIFACTS

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


@pytest.fixture
def server(launching_server):
    return launching_server


def _untitled_figures(page) -> int:
    """Figures (.fig) without a tooltip saying how they are computed."""
    return page.eval_on_selector_all(".fig", "els => els.filter((e) => !e.title).length")


def test_every_page_and_a_live_launch(server, page, run_id):
    expect = sync_api.expect
    page.goto(server.url + "/#/home")
    expect(page.locator("#run-picker option")).to_have_count(1)
    # pick store, skill and run through the pickers
    page.select_option("#store-picker", index=0)
    page.select_option("#skill-picker", "csv-clean")
    page.select_option("#run-picker", run_id)
    expect(page.locator("#timeline .node")).to_have_count(4)
    expect(page.locator("#curve .uplot")).to_have_count(1)
    expect(page.locator(".test-card")).to_have_count(1)
    # what the loop records beyond rounds: val accounting, solve phase, meta skill, the honest test report
    expect(page.locator("#val-queries")).to_contain_text("val queries")
    assert "val_queries" in page.locator("#val-queries").get_attribute("title")
    expect(page.locator("#solve")).to_contain_text("Solve phase")
    page.click("#solve summary")
    expect(page.locator("#solve tbody tr")).to_have_count(12)
    expect(page.locator('#meta-skill .lesson[data-round="2"]')).to_contain_text("after round 2")
    expect(page.locator('.test-card .report-table tr[data-split="test"]')).to_be_visible()
    expect(page.locator(".test-card .report-table tbody tr")).to_have_count(3)
    # seed and champion vs no skill
    expect(page.locator(".test-card .control-table tbody tr")).to_have_count(2)
    expect(page.locator('.test-card .control-table tr[data-control="champion"]')).to_contain_text(
        "champion vs none")
    expect(page.locator("#timeline .confirm-mark").first).to_contain_text("confirmed")
    assert _untitled_figures(page) == 0
    # a timeline node opens its drawer
    page.click('#timeline .node[data-round="1"]')
    drawer = page.locator("#drawer .attempt-drawer")
    expect(drawer).to_be_visible()
    expect(page.locator("#timeline .node.selected")).to_have_attribute("data-round", "1")
    page.click("#drawer-close")                       # closing the drawer unmarks its timeline node
    expect(page.locator("#timeline .node.selected")).to_have_count(0)
    page.click('#timeline .node[data-round="1"]')
    expect(drawer).to_be_visible()
    expect(drawer).to_contain_text("Round 1")
    page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)
    # ... and from the drawer into Round Analysis, with the diff text
    page.click("text=Open in Round Analysis")
    expect(page.locator("pre.diff")).to_contain_text("diff --git a/")
    expect(page.locator("#gate")).to_contain_text("gate threshold")
    expect(page.locator("#gate")).to_contain_text(re.compile(r"sign flips \(Student t would be \d\.\d{3}\)"))
    expect(page.locator("#gate")).to_contain_text(re.compile(r"256 \(all\) · on the threshold: reject w\.p\. "
                                                             r"ρ"))
    expect(page.locator("#test-grid tbody tr")).to_have_count(8)
    # 8 tasks × 2 replicates
    expect(page.locator("#cell-failures")).to_have_text("no failed cells (16 cells)")
    page.locator("#cell-grid td.cell").first.click()
    expect(page.locator("#drawer .cell-drawer")).to_contain_text("Agent stream")
    expect(page.locator("#drawer .cell-drawer .ev-result")).to_have_count(1)
    # cells.node
    expect(page.locator("#drawer .cell-drawer .cell-where")).to_have_text("ran on this machine")
    # cells.skill_use
    expect(page.locator("#drawer #cell-skill-use")).to_contain_text("loadedyes, turn 1")
    expect(page.locator('#skill-use tr[data-file="examples.md"]')).to_contain_text("0/16 (0%)")
    expect(page.locator('#skill-use tr[data-file="SKILL.md"] td').first).to_have_text("16/16 (100%)")
    # round 1 was a keep: its winner's-curse confirmation and every critic gate row
    expect(page.locator("#confirm")).to_contain_text("fresh Δcomposite")
    expect(page.locator("#confirm .badge")).to_have_text(re.compile("stands|OVERTURNED"))
    # confirmed under the run's keep rule (positive, the default): its bar and verdict
    expect(page.locator("#confirm")).to_contain_text(re.compile(r"keep rulepositive: bar \+0\.0000 → (keep|reject)"))
    expect(page.locator('#critic tr[data-gate="size"]')).to_contain_text("pass")
    expect(page.locator("#critic")).to_contain_text("gates passed")
    assert _untitled_figures(page) == 0
    page.screenshot(path=str(ARTIFACTS / "round-analysis.png"), full_page=True)
    page.click("#drawer-close")
    page.select_option("#split-picker", "train")
    expect(page.locator("h3", has_text="Scores on train")).to_be_visible()
    # lineage: chain and a collapsible, zoomable tree
    page.click('#links a[data-page="lineage"]')
    expect(page.locator("#chain")).to_contain_text("champion")
    nodes = page.locator("#tree .tnode")
    expect(nodes).to_have_count(4)
    page.click("#collapse-all")
    expect(nodes).to_have_count(3)  # the rejected branch folds away
    page.click("#expand-all")
    expect(nodes).to_have_count(4)
    page.click("#zoom-in")
    assert "scale(1.2)" in page.locator("#tree").get_attribute("style")
    page.screenshot(path=str(ARTIFACTS / "lineage.png"), full_page=True)
    page.locator("#tree a.hash").first.click()
    expect(page.locator("pre.diff")).to_be_visible()
    # history: one regime panel with its own chart
    page.click('#links a[data-page="history"]')
    expect(page.locator(".regime .uplot")).to_have_count(1)
    page.select_option("#history-metric", "eval")
    expect(page.locator(".regime .uplot")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "history.png"), full_page=True)
    # launch a dry run from the drawer and watch its rounds appear live
    page.click('#links a[data-page="home"]')
    page.click("#open-launch")
    form = page.locator("#drawer form.launch")
    form.locator('input[name="replicates"]').fill("1")
    form.locator('input[name="rounds"]').fill("2")
    form.locator('button[type="submit"]').click()
    expect(form.locator(".launch-status")).to_contain_text("started pid")
    page.click("#drawer-close")
    expect(page.locator("#run-picker option")).to_have_count(2, timeout=60_000)
    expect(page.locator("#run-picker")).not_to_have_value(run_id, timeout=60_000)
    expect(page.locator('#timeline .node[data-round="1"]')).to_have_count(1, timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "home-live.png"), full_page=True)
    expect(page.locator('#timeline .node[data-round="2"]:not(.n-pending)')).to_have_count(1, timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "home-launched.png"), full_page=True)
    deadline = time.monotonic() + 60
    while any(p["status"] == "running" for p in server.processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [p["returncode"] for p in server.processes()] == [0]
    assert page.console_errors == []
