"""Several eval models in real headless Chromium: every per-model row Round Analysis and the test report draw
for a two-model dry run equals the store and what the CLI printed for the same run (run.py and --test-run)."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from tests.browser_support import CHROMIUM, SKIP_REASON
from tests.conftest import copy_store

from .test_models_view import TWO, two_model_store  # noqa: F401  (a session fixture, built once)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")
NUMBER = r"([-+]?\d+\.\d+)"


def _cells(row) -> list[str]:
    sync_api.expect(row).to_be_visible()
    return [t.strip() for t in row.locator("th, td").all_inner_texts()]


def _cli_rows(cli: str) -> dict[tuple[str, str], list[str]]:
    """{(model, 'seed' | 'champion'): [val composite, val eval, cost/cell, steps]} from the run's summary
    table."""
    found, model = {}, None
    for line in cli.splitlines():
        if m := re.fullmatch(r"  · (\S+)", line):
            model = m.group(1)
        elif model and (m := re.fullmatch(r"   (seed|champion)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+│.*", line)):
            found[(model, m.group(1))] = list(m.groups()[1:])
        elif not line.startswith("   "):
            model = None
    return found


@pytest.fixture
def store(two_model_store, tmp_path):  # noqa: F811
    """The dashboard (conftest's `server`) over a private copy of the two-model store (made before the page:
    its own event loop)."""
    return copy_store(two_model_store[0], tmp_path / "project" / "data")


def test_every_per_model_row_is_the_store_and_the_cli(two_model_store, server, page):  # noqa: F811
    expect = sync_api.expect
    data, run_id = two_model_store
    cli = (data.parent / "cli.txt").read_text()
    # the store the server's copy was made of
    db = sqlite3.connect(f"file:{data / 'mutator.db'}?mode=ro", uri=True)
    attempt_id, gate, val_id = db.execute("select id, gate, val_evaluation_id from attempts where run_id = ? "
                                          "and round = 1", [run_id]).fetchone()
    members = json.loads(db.execute("select members from evaluations where id = ?", [val_id]).fetchone()[0])
    report = json.loads(db.execute("select report from test_runs where run_id = ?", [run_id]).fetchone()[0])
    cli_rows = _cli_rows(cli)
    assert list(members) == list(TWO) and set(cli_rows) == {(m, side) for m in TWO
                                                            for side in ("seed", "champion")}
    try:
        page.goto(server.url + f"/#/round/{attempt_id}?run={run_id}")
        for model in TWO:
            # Round Analysis's val scores per model: the CLI's champion (the kept candidate) and seed rows
            candidate = _cells(page.locator(f'#round-scores tr[data-row="candidate · {model}"]'))
            seed = _cells(page.locator(f'#round-scores tr[data-row="seed · {model}"]'))
            for shown, printed in ((candidate, cli_rows[(model, "champion")]),
                                   (seed, cli_rows[(model, "seed")])):
                assert [shown[1], shown[2], shown[4]] == [printed[0], printed[1], printed[3]], model
            stored_eval, stored_cost = db.execute("select eval, cost from evaluations where id = ?",
                                                  [members[model]]).fetchone()
            assert candidate[2] == f"{stored_eval:.3f}" and candidate[3] == f"${stored_cost:.4f}"
            gate_row = page.locator("#gate tr", has_text=f"Δ {model}")
            expect(gate_row.locator("td")).to_have_text(f"{json.loads(gate)['by_model'][model]['delta']:+.4f}")
        # the test report's per-model rows, for each split and each side of the no-skill control
        page.goto(server.url + f"/#/home?run={run_id}")
        expect(page.locator(".test-card")).to_have_count(1)
        for split in ("train", "val", "test"):
            for model in TWO:
                m = report["splits"][split]["by_model"][model]
                shown = _cells(page.locator(f'.report-table tr[data-split="{split}"][data-model="{model}"]'))
                expected = [f"· {model}", str(m["n_tasks"]), f"{m['seed_composite']:.4f}",
                            f"{m['champion_composite']:.4f}",
                            f"{m['delta']['mean']:+.4f} ± {m['delta']['se']:.4f}"]
                assert shown[:5] == expected, (split, model)
                assert (f"    · {model}: {m['n_tasks']} tasks, seed {expected[2]}, champion {expected[3]}, Δ "
                        f"{expected[4]}") in cli
        for side in ("seed", "champion"):
            for model in TWO:
                m = report["control"][side]["by_model"][model]
                shown = _cells(page.locator(
                    f'.control-table tr[data-control="{side}"][data-model="{model}"]'))
                assert shown[:5] == [f"· {model}", str(m["n_tasks"]), f"{m['seed_composite']:.4f}",
                                     f"{m['champion_composite']:.4f}", f"{m['delta']['mean']:+.4f} ± "
                                                                       f"{m['delta']['se']:.4f}"]
                assert (f"      · {model}: {m['n_tasks']} tasks, none {shown[2]}, {side} {shown[3]}, Δ "
                        f"{shown[4]}") in cli
    finally:
        db.close()
    assert [e for e in page.console_errors if not e.startswith("Failed to load resource")] == []
