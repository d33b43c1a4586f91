"""`run.py --compare RUN_A RUN_B --suite TEST` on two dry runs with the fakes: both champions measured through the
cached test run, the paired report printed, and the same figures as the dashboard's Compare page."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutator.server.compare import compare
from mutator.store.db import connect_readonly
from tests.conftest import built_once, copy_store, run_cli

RUN = ("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "2", "--replicates", "1")


@pytest.fixture(scope="session")
def two_runs_built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Two dry runs in one store, built once per test session; each test works on its own copy."""
    def build(folder: Path) -> None:
        for extra in (("--seed", "1"), ("--seed", "2", "--strategy", "branching", "--strategy-opts", '{"width": 2}')):
            result = run_cli(*RUN, *extra, "--data-dir", str(folder / "data"))
            assert result.returncode == 0, result.stderr[-3000:]

    data_dir = built_once(tmp_path_factory, "compare-runs", build) / "data"
    db = connect_readonly(data_dir / "mutator.db")
    ids = [r["id"] for r in db.query("select id from runs order by created_at")]
    db.conn.close()
    assert len(ids) == 2
    return data_dir, ids


@pytest.fixture
def two_runs(two_runs_built, tmp_path: Path) -> tuple[Path, list[str]]:
    return copy_store(two_runs_built[0], tmp_path / "data"), two_runs_built[1]


def test_compare_measures_both_champions_and_prints_the_paired_report(two_runs):
    data_dir, (a, b) = two_runs
    result = run_cli("--compare", a, b, "--suite", "clean-test", "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert f"Champions compared on clean-test · B {b}" in out and f"A {a}" in out
    assert "Δcomposite (B − A)" in out and "95% CI (t)" in out and "sign test: B wins" in out
    assert "McNemar exact" in out
    db = connect_readonly(data_dir / "mutator.db")
    tests = list(db.query("select run_id, suite, status from test_runs order by id"))
    assert [(t["run_id"], t["suite"], t["status"]) for t in tests] == [(a, "clean-test", "done"), (b, "clean-test", "done")]
    # the dashboard's Compare page computes the same pair from the same test runs
    [pair] = compare(db, [a, b])["pairs"]
    assert f"Δcomposite (B − A) {pair['mean']:+.4f} ± {pair['se']:.4f} (SE)" in out
    assert f"[{pair['ci_low']:+.4f}, {pair['ci_high']:+.4f}]" in out
    sign = pair["sign"]
    assert f"B wins {sign['wins']}, A wins {sign['losses']}, ties {sign['ties']}" in out
    assert pair["n"] == 8 and pair["mcnemar"]
    db.conn.close()
    again = run_cli("--compare", a, b, "--suite", "clean-test", "--data-dir", str(data_dir))
    assert again.returncode == 0 and "(0 cells run by this command, all cached)" in again.stdout


def test_compare_defaults_to_run_a_holdout_and_refuses_one_run_twice(two_runs):
    data_dir, (a, b) = two_runs
    result = run_cli("--compare", a, b, "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Champions compared on clean-test" in result.stdout
    same = run_cli("--compare", a, a, "--data-dir", str(data_dir))
    assert same.returncode == 2 and "two different runs" in same.stderr
    unknown = run_cli("--compare", a, "run-000000000000", "--suite", "clean-test", "--data-dir", str(data_dir))
    assert unknown.returncode == 2 and "no run 'run-000000000000'" in unknown.stderr


def test_compare_asks_each_runs_budget_before_each_cell(two_runs):
    # --budget-usd on --compare: each run's test cells are charged to it and asked of its cap; a run whose cap is
    # reached starts no cell, and what each run was charged is its ledger's sum
    data_dir, (a, b) = two_runs
    db = connect_readonly(data_dir / "mutator.db")
    before = {r["id"]: r["cost_usd"] for r in db.query("select id, cost_usd from runs")}
    cap = min(before.values())
    result = run_cli("--compare", a, b, "--suite", "clean-test", "--budget-usd", str(cap), "--data-dir", str(data_dir))
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-2000:]
    assert "budget reached" in result.stderr
    after = {r["id"]: r["cost_usd"] for r in db.query("select id, cost_usd from runs")}
    ledger = dict(db.conn.execute("select run_id, sum(usd) from charges group by run_id").fetchall())
    assert after == pytest.approx(ledger) and after[a] == pytest.approx(before[a])   # nothing started past its cap
    assert list(db.query("select status from test_runs"))[0]["status"] == "stopped"
    db.conn.close()
