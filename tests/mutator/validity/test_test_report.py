"""The honest test report: McNemar per pass/fail test, the train≫test gap flag, and --test-run storing it."""

from __future__ import annotations

import math

import pytest

from mutator.scoring.score import CellFigures, Normalisers, Weights, per_task
from mutator.store.db import connect_readonly, loads
from mutator.validity.report import gap, mcnemar_by_test, render


def test_mcnemar_by_test_pairs_cells_and_skips_graded_tests() -> None:
    champion = {("a", 0): {"pass": 1.0, "partial": 0.5}, ("a", 1): {"pass": 1.0, "partial": 1.0},
                ("b", 0): {"pass": 1.0, "partial": 0.0}, ("b", 1): {},            # a failed cell: counts as fail
                ("c", 0): {"pass": 0.0, "partial": 0.0}}
    seed = {("a", 0): {"pass": 0.0, "partial": 0.0}, ("a", 1): {"pass": 0.0, "partial": 1.0},
            ("b", 0): {"pass": 1.0, "partial": 0.0}, ("b", 1): {"pass": 1.0, "partial": 1.0},
            ("d", 0): {"pass": 1.0, "partial": 1.0}}                             # unpaired: ignored
    result = mcnemar_by_test(champion, seed)
    assert list(result) == ["pass"]                                              # 'partial' gave a 0.5
    m = result["pass"]
    # cells a0, a1: champion only; b0: both; b1: seed only; so 2 vs 1 discordant: p = 1
    assert (m["n"], m["both_pass"], m["only_a"], m["only_b"], m["both_fail"]) == (4, 1, 2, 1, 0)
    assert m["p_value"] == pytest.approx(1.0)


def _split(mean: float, se: float | None) -> dict:
    return {"delta": {"mean": mean, "se": se}}


@pytest.mark.parametrize(("train", "test", "z", "flag"), [
    (_split(0.30, 0.03), _split(0.10, 0.04), 0.2 / 0.05, True),     # hypot(0.03, 0.04) = 0.05 → z 4
    (_split(0.15, 0.03), _split(0.10, 0.04), 1.0, False),
    (_split(0.05, 0.03), _split(0.10, 0.04), -1.0, False),           # test above train is no gap
    (_split(0.10, 0.0), _split(0.0, None), None, True),               # no spread at all: any excess is a gap
])
def test_gap_in_standard_errors(train, test, z, flag) -> None:
    g = gap(train, test)
    assert g["flag"] is flag and g["diff"] == pytest.approx(train["delta"]["mean"] - test["delta"]["mean"])
    assert g["z"] == (None if z is None else pytest.approx(z))


def test_gap_needs_both_splits() -> None:
    assert gap(None, _split(0.1, 0.1)) is None


def test_render_flags_the_gap() -> None:
    split = {"n_tasks": 8, "seed_composite": 0.4, "champion_composite": 0.7, "mcnemar": {},
             "delta": {"mean": 0.3, "se": 0.03, "ci_low": 0.23, "ci_high": 0.37},
             "delta_eval": {"mean": 0.3}, "sign": {"wins": 8, "losses": 0, "ties": 0, "p_value": 0.0078}}
    report = {"champion": "c" * 64, "seed": "s" * 64, "gap_z": 2.0,
              "splits": {"train": split, "val": None, "test": split},
              "gap": {"train": {"diff": 0.2, "z": 4.0, "flag": True}, "val": None}}
    text = render(report)
    assert "⚠ GAP: train Δ exceeds test Δ by +0.2000 (4.0 SE > 2)" in text
    assert "val     —  (no stored evaluation" in text and "+0.3000 ± 0.0300" in text


def test_test_run_stores_the_report(demo_tested) -> None:
    data_dir, result = demo_tested                           # the demo store after `--test-run` on clean-test
    assert result.returncode == 0, result.stderr[-3000:]
    db = connect_readonly(data_dir / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert result.args[-6:-4] == ["--test-run", run["id"]]
    db = connect_readonly(data_dir / "mutator.db")
    row = dict(next(iter(db.query("select * from test_runs order by id desc limit 1"))))
    report = loads(row["report"])
    assert report["champion"] == run["incumbent_hash"] and report["seed"] == run["seed_hash"]
    assert set(report["splits"]) == {"train", "val", "test"} and all(report["splits"].values())
    test = report["splits"]["test"]
    assert test["n_tasks"] == 8 and test["champion_evaluation_id"] == row["evaluation_id"]
    # re-derive the test Δ from the stored cells: per-task composites, seed normalisers from its own cells
    weights = Weights(run["w_cost"], run["w_steps"])

    def cells(evaluation_id: int) -> list[CellFigures]:
        return [CellFigures(r["task_id"], r["replicate"], r["score"] or 0.0, r["cost_usd"] or 0.0, r["steps"] or 0,
                            r["status"] == "ok") for r in db.query("select * from cells where evaluation_id = ?",
                                                                   [evaluation_id])]
    seed_cells = cells(test["seed_evaluation_id"])
    norm = Normalisers(sum(c.cost_usd for c in seed_cells) / len(seed_cells),
                       sum(c.steps for c in seed_cells) / len(seed_cells))
    champ, seed = per_task(cells(row["evaluation_id"]), weights, norm), per_task(seed_cells, weights, norm)
    deltas = [champ[t].composite - seed[t].composite for t in sorted(champ)]
    mean = sum(deltas) / 8
    sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / 7)
    assert test["delta"]["mean"] == pytest.approx(mean) and test["delta"]["se"] == pytest.approx(sd / math.sqrt(8))
    assert test["champion_composite"] - test["seed_composite"] == pytest.approx(mean)
    assert row["composite"] == pytest.approx(test["champion_composite"])
    sign = test["sign"]
    assert sign["wins"] == sum(d > 1e-12 for d in deltas) and sign["wins"] + sign["losses"] + sign["ties"] == 8
    val = report["splits"]["val"]
    assert val["delta"]["mean"] > 0 and val["seed_evaluation_id"] != val["champion_evaluation_id"]
    assert "Honest test report" in result.stdout and "McNemar exact" in result.stdout
