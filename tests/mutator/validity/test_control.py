"""The no-skill control of --test-run: seed vs none and champion vs none beside champion vs seed, stored so
the figures re-derive from the store; --no-control skips it; a second call costs nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mutator.scoring.score import Normalisers, Weights
from mutator.store.db import connect_readonly, loads
from mutator.validity.report import against_none, render_control
from tests.conftest import run_cli

ARGS = ("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "2",
        "--replicates", "1")


def cells_run(stdout: str) -> int:
    return int(re.search(r"(\d+) cells run", stdout).group(1))


def test_control_reports_seed_and_champion_against_no_skill(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = run_cli(*ARGS, "--data-dir", str(data))
    assert done.returncode == 0, done.stderr[-2000:]
    run_id = re.search(r"Run (run-[0-9a-f]+)", done.stdout).group(1)

    skipped = run_cli("--test-run", run_id, "--data-dir", str(data), "--no-control")
    assert skipped.returncode == 0, skipped.stderr[-2000:]
    assert "No-skill control" not in skipped.stdout and cells_run(skipped.stdout) == 16   # seed + champion
    db = connect_readonly(data / "mutator.db")
    first = dict(next(iter(db.query("select * from test_runs order by id limit 1"))))
    assert first["control_evaluation_id"] is None and loads(first["report"])["control"] is None
    assert not list(db.query("select id from evaluations where genome_hash = 'bare'"))

    measured = run_cli("--test-run", run_id, "--data-dir", str(data))
    assert measured.returncode == 0, measured.stderr[-2000:]
    assert cells_run(measured.stdout) == 8                  # only the no-skill cells: seed and champion cached
    assert "seed     vs none" in measured.stdout and "champion vs none" in measured.stdout
    row = dict(list(db.query("select * from test_runs order by id desc limit 1"))[0])
    control = loads(row["report"])["control"]
    assert control["evaluation_id"] == row["control_evaluation_id"]
    none = db["evaluations"].get(row["control_evaluation_id"])
    assert none["genome_hash"] == "bare" and none["suite"] == "clean-test" and none["status"] == "done"
    for name in ("seed", "champion"):
        figures = control[name]
        assert figures["n_tasks"] == 8 and figures["none_evaluation_id"] == none["id"]
        assert figures["delta"]["mean"] == pytest.approx(figures["skill_composite"] - figures["none_composite"])
        assert figures["sign"]["wins"] + figures["sign"]["losses"] + figures["sign"]["ties"] == 8
    assert control["seed"]["skill_evaluation_id"] == loads(row["report"])["splits"]["test"]["seed_evaluation_id"]
    # the stored figures re-derive from the store: the same cells, the seed's test normalisers
    run = dict(db["runs"].get(run_id))
    seed_cells = list(db.query("select cost_usd, steps from cells where evaluation_id = ?",
                               [control["seed"]["skill_evaluation_id"]]))
    norm = Normalisers(sum(c["cost_usd"] for c in seed_cells) / 8, sum(c["steps"] for c in seed_cells) / 8)
    again = against_none(db, control["champion"]["skill_evaluation_id"], none["id"],
                         Weights(run["w_cost"], run["w_steps"]), norm)
    assert again["delta"]["mean"] == pytest.approx(control["champion"]["delta"]["mean"])

    third = run_cli("--test-run", run_id, "--data-dir", str(data))
    assert third.returncode == 0 and cells_run(third.stdout) == 0 and "champion vs none" in third.stdout


def test_render_control_says_nothing_when_skipped() -> None:
    assert render_control(None) == []


def test_plan_counts_every_models_cells_and_the_control() -> None:
    from mutator.config import load_settings
    from mutator.validity.plan import plan
    from run import load

    def planned(model: str):
        settings = load_settings({"model": model, "replicates": 1, "rounds": 2, "data_dir": "/nonexistent-i18a"})
        return plan(settings, train=load(settings, "clean-train", "--suite", allow_mismatch=False),
                    val=load(settings, "clean-val", "--val", allow_mismatch=False),
                    holdout=load(settings, "clean-test", "--holdout", allow_mismatch=False), build_id="fake@x")

    one, two = planned("claude-haiku-4-5"), planned("claude-haiku-4-5,claude-sonnet-4-5")
    assert (two.n_val, two.n_train, two.n_test) == (2 * one.n_val, 2 * one.n_train, 2 * one.n_test)
    assert two.df_first == one.n_val * 2 - 1 and one.df_first == one.n_val - 1
    # no store: each model's cell estimated at its own price; sonnet is 3x haiku, so the mean cell is 2x
    assert two.cell_usd == pytest.approx(2 * one.cell_usd)
    assert one.test_usd == pytest.approx(3 * one.n_test * one.cell_usd)          # seed, champion, control
    assert two.test_usd == pytest.approx(3 * two.n_test * two.cell_usd)


def test_render_control_answers_per_model_whether_the_skill_helps() -> None:
    """Several eval models: under each side's line, each model's own skill − none with its CI."""
    def delta(mean, se, low, high):
        return {"mean": mean, "se": se, "ci_low": low, "ci_high": high}
    side = {"n_tasks": 4, "none_composite": 0.4, "skill_composite": 0.5, "delta": delta(0.1, 0.02, 0.04, 0.16),
            "sign": {"wins": 3, "losses": 0, "ties": 1, "p_value": 0.25},
            "by_model": {"haiku": {"n_tasks": 2, "seed_composite": 0.3, "champion_composite": 0.5,
                                   "delta": delta(0.2, 0.05, -0.44, 0.84)},
                         "sonnet": {"n_tasks": 2, "seed_composite": 0.5, "champion_composite": 0.5,
                                    "delta": delta(0.0, 0.0, None, None)}}}
    lines = render_control({"seed": side, "champion": side})
    assert "      · haiku: 2 tasks, none 0.3000, seed 0.5000, Δ +0.2000 ± 0.0500   95% CI [-0.4400, +0.8400]" in lines
    assert "      · sonnet: 2 tasks, none 0.5000, champion 0.5000, Δ +0.0000 ± 0.0000   95% CI —" in lines
    assert len(lines) == 1 + 2 * 3
