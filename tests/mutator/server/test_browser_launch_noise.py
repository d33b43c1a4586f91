"""Real Chromium: the launch drawer's "fake agent noise" choice (dry runs only) starts a rehearsal at real-agent
noise, and the new run's head says so from what the run recorded."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON

from .conftest import ARTIFACTS

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


@pytest.fixture
def server(launching_server):
    return launching_server


def test_a_dry_launch_at_realistic_noise_shows_as_a_noisy_dry_run(server, page, store_copy, run_id):
    expect = sync_api.expect
    page.goto(server.url + "/#/home")
    expect(page.locator("#run-agents")).to_have_text("dry run")        # the fixture's run: quiet fakes
    page.click("#open-launch")
    form = page.locator("#drawer form.launch")
    noise = form.locator("#launch-noise")
    expect(noise).to_have_value("off")                                  # config fakeNoise: the demo's quiet
    form.locator("#launch-real").check()                                # real agents bring their own noise
    expect(form.locator("#dry-fields")).to_be_hidden()
    form.locator("#launch-real").uncheck()
    expect(noise).to_be_visible()
    noise.select_option(label="realistic (real-agent noise, SkillsBench-calibrated)")
    form.locator('input[name="replicates"]').fill("1")
    form.locator('input[name="rounds"]').fill("1")
    page.screenshot(path=str(ARTIFACTS / "launch-noise-choice.png"))
    form.locator('button[type="submit"]').click()
    expect(form.locator(".launch-status")).to_contain_text("--fake-noise realistic")
    page.click("#drawer-close")
    expect(page.locator("#run-picker")).not_to_have_value(run_id, timeout=60_000)   # the page follows it
    new_run = page.locator("#run-picker").input_value()
    expect(page.locator("#run-head h2")).to_contain_text(new_run)
    expect(page.locator("#run-agents")).to_have_text("dry run · realistic noise", timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "home-noisy-launch.png"))
    with sqlite3.connect(store_copy / "mutator.db") as conn:            # the label is the stored record's
        [agents] = conn.execute("select agents from runs where id = ?", [new_run]).fetchone()
    assert json.loads(agents)["fake_noise"] == "realistic"
    assert page.console_errors == []
