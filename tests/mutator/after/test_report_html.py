"""`run.py export-report RUN`: one self-contained HTML file, opened in real Chromium with every request but the
file itself refused, whose figures are the store's."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mutator.after.spend import run_spend
from mutator.server import queries as Q
from mutator.store.db import connect_readonly
from tests.browser_support import ARGS, CHROMIUM, SKIP_REASON
from tests.conftest import ROOT
from tests.mutator.server.conftest import _build_dry_store, built_once

sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")


@pytest.fixture(scope="module")
def tested_store(tmp_path_factory) -> Path:
    """The server tests' dry store (3 rounds and one test run), built once per session."""
    return built_once(tmp_path_factory, "dry-store", _build_dry_store) / "data"


def _export(data: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "export-report", *args, "--data-dir", str(data)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_an_unknown_run_is_refused_with_exit_2(tested_store, tmp_path):
    done = _export(tested_store, "run-000000000000", "--out", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "no run 'run-000000000000'" in done.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
def test_the_report_opens_offline_with_the_stores_figures(tested_store, tmp_path):
    with sqlite3.connect(tested_store / "mutator.db") as conn:
        run_id = conn.execute("select id from runs").fetchone()[0]
        attempts = conn.execute("select id, verdict from attempts where run_id = ? order by round, sibling",
                                [run_id]).fetchall()
    db = connect_readonly(tested_store / "mutator.db")
    detail = Q.run_detail(db, run_id, tested_store, window=0)
    spend = run_spend(db, run_id)
    db.conn.close()
    out = tmp_path / "handed-over.html"
    done = _export(tested_store, run_id, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    url = out.resolve().as_uri()
    refused: list[str] = []

    def route(r):   # the network is off: only the file itself loads
        if r.request.url == url:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.route("**/*", route)
        page.goto(url)
        shown = [(int(r.get_attribute("data-attempt")), r.locator("td").nth(1).inner_text())
                 for r in page.locator("#rounds tbody tr").all()]
        assert shown == [(i, v) for i, v in attempts]   # every attempt with its stored verdict
        champion = {int(c.get_attribute("data-round")): float(c.get_attribute("data-value"))
                    for c in page.locator('#curve circle[data-series="champion"]').all()}
        assert champion == {r: v for r, v in zip(detail["curve"]["round"], detail["curve"]["champion"],
                                                 strict=True) if v is not None}
        assert page.locator("#spend-total").inner_text() == f"${spend['total']:.4f}"
        assert page.locator("#cost tbody tr").count() == len(spend["kinds"])
        test = detail["tests"][0]
        assert page.locator(".test .test-composite").first.inner_text() == f"{test['composite']:.4f}"
        harm = test["report"]["harm"]["seed"]["tasks"]
        assert page.locator('table.harm[data-harm="the seed"] tbody tr').count() == len(harm)
        assert page.locator("#lineage tbody tr").count() == len(attempts)
        inline = json.loads(page.locator("#report-data").text_content())
        assert inline["run"]["id"] == run_id and inline["curve"] == json.loads(json.dumps(detail["curve"]))
        assert page.locator("script:not([type='application/json'])").count() == 0
        assert page.locator("svg#curve").count() == 1
        browser.close()
    assert refused == [] and errors == []   # nothing fetched, nothing blocked
