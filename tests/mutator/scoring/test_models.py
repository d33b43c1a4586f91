"""Several eval models: the composite (each model against the seed on that model, then the mean over models)
and the gate (paired per (task, model)) on constructed cells with hand-computed answers."""

from __future__ import annotations

import json

import pytest

from eval.cells import Contract
from mutator.config import CONFIG_FILE, load_settings
from mutator.scoring.gate import compare
from mutator.scoring.models import members, seed_columns, stored_normalisers
from mutator.scoring.score import (
    CellFigures,
    Normalisers,
    ScoreError,
    Weights,
    by_model,
    normalisers,
    per_task,
    summarise,
)

W = Weights(w_cost=0.1, w_steps=0.0)


def cell(task: str, model: str, score: float, cost: float, steps: float = 2.0) -> CellFigures:
    return CellFigures(task, 0, score, cost, steps, True, model)


# seed: every cell scores 0.5; model a costs 1 a cell, model b 3 (and 4 steps)
SEED = [cell("t1", "a", 0.5, 1), cell("t2", "a", 0.5, 1), cell("t1", "b", 0.5, 3, 4), cell("t2", "b", 0.5, 3, 4)]
CANDIDATE = [cell("t1", "a", 1.0, 1), cell("t2", "a", 0.5, 2), cell("t1", "b", 1.0, 3, 4), cell("t2", "b", 0.0, 6, 4)]


def test_each_model_has_its_own_normalisers() -> None:
    norm = normalisers(SEED)
    assert norm.by_model == (("a", 1.0, 2.0), ("b", 3.0, 4.0))
    assert norm.for_model("b") == Normalisers(3.0, 4.0)
    assert (norm.seed_cost, norm.seed_steps) == (2.0, 3.0)      # the mean over models, for display only
    with pytest.raises(ScoreError, match="no seed normalisers for model 'c'"):
        norm.for_model("c")


def test_composite_is_the_mean_over_models_of_each_models_own() -> None:
    norm = normalisers(SEED)
    # a: eval 0.75, cost 1.5 / seed 1 -> 0.75 - 0.15 = 0.60;  b: eval 0.5, cost 4.5 / seed 3 -> 0.5 - 0.15 = 0.35
    models = by_model(CANDIDATE, W, norm)
    assert models["a"].composite == pytest.approx(0.60) and models["b"].composite == pytest.approx(0.35)
    total = summarise(CANDIDATE, W, norm)
    assert total.composite == pytest.approx(0.475) and total.eval == pytest.approx(0.625)
    assert total.n_cells == 4
    assert summarise(SEED, W, norm).composite == pytest.approx(0.4)
    tasks = per_task(CANDIDATE, W, norm)
    assert {k: round(f.composite, 10) for k, f in tasks.items()} == {
        "t1@a": 0.9, "t1@b": 0.9, "t2@a": 0.3, "t2@b": -0.2}


def test_gate_pairs_per_task_and_model() -> None:
    norm = normalisers(SEED)
    gate = compare(per_task(CANDIDATE, W, norm), per_task(SEED, W, norm), prior=[], min_improvement=0.0, gate_z=1.0, method="t")
    assert gate.n == 4
    assert gate.deltas == pytest.approx({"t1@a": 0.5, "t1@b": 0.5, "t2@a": -0.1, "t2@b": -0.6})
    assert gate.delta == pytest.approx(0.075)                    # = 0.475 - 0.4, the change in the mean composite
    assert gate.by_model() == {"a": {"delta": pytest.approx(0.2), "n": 2}, "b": {"delta": pytest.approx(-0.05), "n": 2}}
    # MAD of (0.5, -0.1, 0.5, -0.6) about its median 0.2 is 0.3; C_4 = 2.016673 (Park, Kim & Wang's n = 4 factor,
    # mutator/scoring/mad.py), so s_r = 0.6050019; df = 3; SE = s_r/√4; t = t.ppf(Φ(1), 3)
    assert gate.s_r == pytest.approx(0.3 * 2.016673, rel=1e-6) and gate.df == 3
    assert gate.se == pytest.approx(0.30250095, rel=1e-6) and gate.t == pytest.approx(1.1968814, rel=1e-6)
    assert gate.threshold == pytest.approx(-0.3620577, rel=1e-6) and gate.keep
    assert gate.to_json()["by_model"]["b"]["delta"] == pytest.approx(-0.05)


def test_one_model_is_scored_exactly_as_before() -> None:
    plain = [CellFigures(c.task_id, 0, c.score, c.cost_usd, c.steps, True) for c in CANDIDATE if c.model == "a"]
    tagged = [c for c in CANDIDATE if c.model == "a"]
    norm = Normalisers(1.0, 2.0)
    assert list(per_task(plain, W, norm)) == ["t1", "t2"]
    assert per_task(plain, W, norm) == per_task(tagged, W, norm)
    assert summarise(plain, W, norm) == summarise(tagged, W, norm)
    assert by_model(plain, W, norm) == {}
    assert normalisers(plain).by_model == ()
    gate = compare(per_task(plain, W, norm), per_task(plain, W, norm), prior=[], min_improvement=0.0, gate_z=1.0)
    assert "by_model" not in gate.to_json()


def test_stored_normalisers_round_trip() -> None:
    val = normalisers(SEED)
    run = {"seed_val_cost": val.seed_cost, "seed_val_steps": val.seed_steps, "seed_cost": 0.0, "seed_steps": 0.0,
           **seed_columns(val, val)}
    assert stored_normalisers(run, "val") == val and stored_normalisers(run, "train").by_model == val.by_model
    assert seed_columns(Normalisers(1.0, 2.0), Normalisers(1.0, 2.0)) == {}
    assert stored_normalisers({"seed_cost": 1.0, "seed_steps": 2.0}, "train") == Normalisers(1.0, 2.0)


def test_model_setting_takes_a_list_or_commas(tmp_path) -> None:
    assert load_settings({"model": "a, b,a"}).models == ("a", "b")
    config = tmp_path / "config.json"
    tree = json.loads(CONFIG_FILE.read_text())
    config.write_text(json.dumps({**tree, "model": ["claude-haiku-4-5", "claude-sonnet-4-5"]}))
    settings = load_settings(config_file=config, environ={})
    assert settings.model == "claude-haiku-4-5,claude-sonnet-4-5"
    assert load_settings(environ={"SKILL_MUTATOR_MODEL": "x,y"}).models == ("x", "y")
    assert load_settings(environ={}).models == ("claude-haiku-4-5",)
    contract = Contract("a,b", 1, 3, "fake", 1, 1)
    assert [c.model for c in members(contract)] == ["a", "b"] and members(contract)[1].replicates == 1
