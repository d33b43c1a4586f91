"""Every page against the store and the CLI: real headless Chromium walks the shared demo store (a second,
one-round run beside it for Compare) over Home, History, Round Analysis, the attempts table, Compare and Cost,
and checks the spend, cells, decisions and champion it shows against SQL and against what run.py printed for
the same runs."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON, Server
from tests.conftest import copy_store, run_cli

from .conftest import TOKEN

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")
VERDICT = r"(KEEP|REJECT|SCREENED|CRITIC|FAILED)"


def printed(stdout: str) -> dict:
    """What run.py printed at the end of a run: its spend, cells, seed and champion, and one row per round."""
    spend, cells_usd, mutator = re.search(r"spend this run \$(\S+) \((?:cells \$(\S+) · )?mutator \$(\S+)\)",
                                          stdout).groups()
    champion, champion_round = re.search(r"champion genome (\w+) \(round (\d+)\)", stdout).groups()
    return {"spend": spend, "mutator": mutator, "champion": champion, "champion_round": int(champion_round),
            "seed_val": re.search(r"^  seed\s+(\S+)", stdout, re.M).group(1),
            "champion_val": re.search(r"^  champion\s+(\S+)", stdout, re.M).group(1),
            "run": re.search(r"^Run (run-\w+)", stdout, re.M).group(1),
            "cells": int(re.search(r"(\d+) cells run by this command", stdout).group(1)),
            "rounds": {int(r): (v, d, t) for r, v, d, t
                       in re.findall(rf"^  (\d+)\s+{VERDICT}\s+(\S+)\s+(\S+)\s", stdout, re.M)}}


@pytest.fixture
def walk(demo_store, tmp_path: Path):
    """A private copy of the demo store with a second run beside it (every cell served from the cache), and
    the dashboard over it; yields (server, data dir, the demo's CLI figures, the second run's)."""
    data = copy_store(demo_store[0], tmp_path / "project" / "data")
    second = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "1", "--replicates", "2",
                     "--seed", "7", "--data-dir", str(data))
    assert second.returncode == 0, second.stderr[-2000:]
    srv = Server(data, token=TOKEN)
    yield srv, data, printed(demo_store[1].stdout), printed(second.stdout)
    srv.stop()


def _texts(locator) -> list[str]:
    return [t.strip() for t in locator.all_inner_texts()]


def test_every_page_agrees_with_the_store_and_the_cli(walk, page):
    expect = sync_api.expect
    server, data, cli, other = walk
    run_id = cli["run"]
    db = sqlite3.connect(f"file:{data / 'mutator.db'}?mode=ro", uri=True)
    q = lambda sql, *params: db.execute(sql, params).fetchall()   # noqa: E731
    # the store and the CLI agree first: spend (the ledger's sum), champion, every decision, cells run
    (spend, ledger, champion), = q("select cost_usd, (select sum(usd) from charges where run_id = r.id), "
                                   "incumbent_hash from runs r where id = ?", run_id)
    assert f"{spend:.4f}" == f"{ledger:.4f}" == cli["spend"] and champion.startswith(cli["champion"])
    verdicts = dict(q("select round, verdict from attempts where run_id = ? and round > 0", run_id))
    assert verdicts == {r: v for r, (v, _, _) in cli["rounds"].items()}
    assert q("select count(*) from charges where run_id = ? and kind = 'cell'", run_id)[0][0] == cli["cells"]
    ids = dict(q("select round, id from attempts where run_id = ?", run_id))

    # Home: the run's spend and rounds, each round's verdict, the champion's val composite
    page.goto(server.url + f"/#/home?run={run_id}")
    expect(page.locator("#run-head")).to_contain_text(f"spend ${cli['spend']}")
    expect(page.locator("#run-head")).to_contain_text(f"round {len(cli['rounds'])}/{len(cli['rounds'])}")
    for r, (verdict, _, _) in cli["rounds"].items():
        expect(page.locator(f'#timeline .node[data-round="{r}"] .node-head')).to_contain_text(verdict)
    expect(page.locator(f'#timeline .node[data-round="{cli["champion_round"]}"] small').first).to_have_text(
        cli["champion_val"])

    # the attempts table: verdict, Δ, threshold per round as the CLI printed them; val cells and mutator spend
    page.goto(server.url + f"/#/attempts?run={run_id}")
    rows = page.locator("#attempts-table tbody tr")
    expect(rows).to_have_count(len(cli["rounds"]) + 1)
    mutator = 0.0
    for r, (verdict, delta, threshold) in cli["rounds"].items():
        cells = _texts(page.locator(f'#attempts-table tbody tr[data-attempt="{ids[r]}"] td'))
        # after run, round, sibling, the change and its genome
        assert cells[7].startswith(verdict) and cells[9:11] == [delta, threshold], r
        stored = q("select e.n_cells from attempts a left join evaluations e on e.id = a.val_evaluation_id "
                   "where a.id = ?", ids[r])[0][0]
        assert cells[15] == (str(stored) if stored is not None else "—"), r
        mutator += float(cells[14].lstrip("$"))
    assert f"{mutator:.4f}" == cli["mutator"]

    # Round Analysis: each round's verdict badge and its gate's Δ and threshold
    page.goto(server.url + f"/#/round/{ids[1]}?run={run_id}")
    for r, (verdict, delta, threshold) in cli["rounds"].items():
        page.select_option("#attempt-picker", str(ids[r]))
        expect(page.locator("#round-verdict h2 .badge")).to_contain_text(verdict)
        expect(page.locator("#gate tr", has_text="Δcomposite").locator("td")).to_have_text(delta)
        expect(page.locator("#gate tr", has_text="gate threshold").locator("td")).to_have_text(threshold)

    # History: the regime's rounds; the heatmap has a column per gate decision, each naming its val look
    page.goto(server.url + f"/#/history?run={run_id}")
    expect(page.locator(".regime", has_text=run_id).locator("h3")).to_contain_text(
        f"{len(cli['rounds'])}/{len(cli['rounds'])} rounds")
    heat = page.locator(f'.heatmap[data-run="{run_id}"]')
    heat.locator("summary").click()
    gated = q("select json_array_length(looks) from attempts where run_id = ? and gate is not null order by "
              "round, sibling", run_id)
    expect(heat.locator("thead th[data-look], thead th:not(:first-child)")).to_have_count(len(gated))
    assert [th.get_attribute("data-look") for th in heat.locator("thead th").all()[1:]] == [
        str(n) if n else None for (n,) in gated]
    store = page.request.get(server.url + "/api/meta").json()["stores"][0]["id"]
    history = page.request.get(server.url + f"/api/history?store={store}&skill=csv-clean").json()
    # History's x axis by cells and by USD
    axis = next(g["spend"] for g in history if g["run"]["id"] == run_id)
    assert axis["cells"][-1] == cli["cells"] and f"{axis['usd'][-1]:.4f}" == cli["spend"]

    # Compare: seed, champion, decisions and spend of both runs, side by side; the spend axis ends at the
    # spend
    page.goto(server.url + f"/#/compare?run={run_id}&runs={run_id},{other['run']}")
    table = page.locator("#compare-table")
    expect(table.locator("thead th")).to_have_count(3)
    column = {run: i for i, run in enumerate(_texts(table.locator("thead th"))) if run}
    def row(label: str, run: str) -> str:
        return _texts(table.locator("tbody tr", has=page.locator(f'th:text-is("{label}")')).locator("td"))[
            column[run] - 1]
    for figures in (cli, other):
        kept = sum(v == "KEEP" for v, _, _ in figures["rounds"].values())
        assert row("seed (val)", figures["run"]) == figures["seed_val"]
        assert (row("champion (val)", figures["run"])
                == f"{figures['champion_val']} {figures['champion'][:12]}")
        assert row("kept / attempts", figures["run"]) == f"{kept}/{len(figures['rounds'])}"
        assert row("spend", figures["run"]) == f"${figures['spend']}"
    compare = page.request.get(server.url + f"/api/compare?store={store}&runs={run_id},{other['run']}").json()
    curve = next(v["curve"] for v in compare["runs"] if v["run"]["id"] == run_id)
    assert curve["cells"][-1] == cli["cells"] and f"{curve['usd'][-1]:.4f}" == cli["spend"]

    # Cost: the run's bill is its spend
    page.goto(server.url + f"/#/cost?run={run_id}")
    expect(page.locator("#spend-runs tbody tr", has_text=run_id).locator("td").nth(5)).to_have_text(
        f"${cli['spend']}")
    db.close()
    assert [e for e in page.console_errors if not e.startswith("Failed to load resource")] == []
