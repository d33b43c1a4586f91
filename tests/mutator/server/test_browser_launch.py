"""Real Chromium: a real run from the launch drawer shows its estimated cost in a confirmation dialog first,
and starts nothing until the user confirms (the spawn is recorded, never run: a real run would spend)."""

from __future__ import annotations

import pytest

from mutator.server.common import CHILDREN, SETTINGS
from mutator.server.launch import plan_estimate
from tests.browser_support import CHROMIUM, SKIP_REASON, Server

from .conftest import ARTIFACTS, TOKEN
from .test_launch_real import Spawned

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


@pytest.fixture
def server(store_copy):
    srv = Server(store_copy, token=TOKEN)
    srv.spawned = Spawned()
    srv.app[CHILDREN].spawn = srv.spawned
    yield srv
    srv.stop()


def test_a_real_launch_states_the_estimate_and_waits_for_confirmation(server, page, store_copy):
    expect = sync_api.expect
    page.goto(server.url + "/#/home")
    page.click("#open-launch")
    expect(page.locator("#real-fields")).to_be_hidden()
    page.check("#launch-real")
    page.select_option('#real-fields select[name="backend"]', "anthropic")
    page.fill("#launch-budget", "7.5")
    form = {name: page.locator(f'form.launch [name="{name}"]').input_value()
            for name in ("seed", "suite", "val", "holdout", "strategy", "model", "replicates", "rounds")}
    expected = plan_estimate({**form, "replicates": int(form["replicates"]), "rounds": int(form["rounds"]),
                              "real": True, "backend": "anthropic", "budget_usd": "7.5"},
                             server.app[SETTINGS], store_copy)
    page.click("#launch-submit")
    dialog = page.locator("#cost-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#cost-estimate")).to_have_text(f"≤ ${expected['run_usd']:.4f}")
    expect(page.locator("#cost-budget")).to_have_text("$7.5000")
    page.screenshot(path=str(ARTIFACTS / "launch-real-confirm.png"))
    assert server.spawned.argvs == []                 # the dialog is up: nothing started yet
    page.click("#cost-cancel")
    expect(page.locator(".launch-status")).to_contain_text("cancelled")
    expect(dialog).to_have_count(0)
    assert server.spawned.argvs == []
    page.click("#launch-submit")
    page.click("#cost-confirm")
    expect(page.locator(".launch-status")).to_contain_text("started")
    [argv] = server.spawned.argvs
    assert "--real" in argv and argv[argv.index("--agent") + 1] == "anthropic"
    assert argv[argv.index("--budget-usd") + 1] == "7.5" and argv[argv.index("--model") + 1] == form["model"]
    assert page.console_errors == []
