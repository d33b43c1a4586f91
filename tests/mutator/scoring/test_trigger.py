"""Triggering in the composite (score.wTrigger, mutator/scoring/trigger.py): expected numbers worked out by hand."""

import pytest

from mutator.scoring.gate import compare
from mutator.scoring.score import CellFigures, Normalisers, Weights, per_task, summarise

NORM = Normalisers(seed_cost=0.0, seed_steps=0.0)   # no cost/steps terms: only eval and triggering move


def cell(task, rep, score, *, loaded, trigger=True, ok=True):
    return CellFigures(task, rep, score, 0.0, 0.0, ok, loaded=loaded, trigger=trigger)


# task "hit": should trigger, loaded once of twice; task "near": a near-miss, graded 1 both times, loaded once
CELLS = [cell("hit", 0, 1.0, loaded=True), cell("hit", 1, 0.5, loaded=False),
         cell("near", 0, 1.0, loaded=True, trigger=False), cell("near", 1, 1.0, loaded=False, trigger=False)]


def test_weight_zero_scores_as_before_whatever_was_loaded():
    figures = per_task(CELLS, Weights(0.0, 0.0), NORM)
    assert {t: (f.eval, f.composite, f.trigger_term) for t, f in figures.items()} == {
        "hit": (0.75, 0.75, 0.0), "near": (1.0, 1.0, 0.0)}


def test_a_near_miss_task_scores_on_not_loading_and_every_task_pays_for_misses():
    figures = per_task(CELLS, Weights(0.0, 0.0, 0.5), NORM)
    # hit: eval (1 + 0.5)/2 = 0.75, hit share 1/2 -> term -0.5·0.5 = -0.25
    assert figures["hit"].eval == 0.75 and figures["hit"].trigger_term == pytest.approx(-0.25)
    assert figures["hit"].composite == pytest.approx(0.5)
    # near: its grades (1, 1) are not used: loaded -> 0, not loaded -> 1; eval 0.5, term -0.25
    assert figures["near"].eval == 0.5 and figures["near"].composite == pytest.approx(0.25)
    assert summarise(CELLS, Weights(0.0, 0.0, 0.5), NORM).composite == pytest.approx((0.75 + 0.5) / 2 - 0.25)


def test_cells_without_telemetry_score_their_grade_and_add_no_term():
    cells = [cell("near", 0, 0.8, loaded=None, trigger=False), cell("near", 1, 0.6, loaded=None, trigger=False)]
    figures = per_task(cells, Weights(0.0, 0.0, 1.0), NORM)["near"]
    assert (figures.eval, figures.trigger_term, figures.composite) == (pytest.approx(0.7), 0.0, pytest.approx(0.7))


def test_the_gate_pairs_the_trigger_term_per_task_and_splits_it_out():
    w = Weights(0.0, 0.0, 1.0)
    incumbent = per_task([cell(t, r, 1.0, loaded=False) for t in "abcd" for r in range(2)], w, NORM)
    better = per_task([cell(t, r, 1.0, loaded=True) for t in "abcd" for r in range(2)], w, NORM)
    gate = compare(better, incumbent, prior=[], min_improvement=0.0, gate_z=1.0)
    assert gate.keep and gate.delta == pytest.approx(1.0) and gate.delta_trigger == pytest.approx(1.0)
    assert gate.delta_eval == 0.0 and gate.to_json()["delta_trigger"] == pytest.approx(1.0)
    worse = compare(incumbent, better, prior=[], min_improvement=0.0, gate_z=1.0)
    assert not worse.keep and worse.delta_trigger == pytest.approx(-1.0)
    # wTrigger 0: the same cells tie, and the gate's JSON has no trigger figure (as stored before)
    plain = compare(per_task([cell(t, r, 1.0, loaded=True) for t in "abcd" for r in range(2)], Weights(0, 0), NORM),
                    per_task([cell(t, r, 1.0, loaded=False) for t in "abcd" for r in range(2)], Weights(0, 0), NORM),
                    prior=[], min_improvement=0.0, gate_z=1.0)
    assert plain.delta == 0.0 and "delta_trigger" not in plain.to_json()


def test_several_models_keep_the_trigger_term_per_task_and_model():
    cells = [CellFigures("a", 0, 1.0, 0.0, 0.0, True, model=m, loaded=m == "x") for m in ("x", "y")]
    figures = per_task(cells, Weights(0.0, 0.0, 0.4), NORM)
    assert {k: f.trigger_term for k, f in figures.items()} == {"a@x": 0.0, "a@y": pytest.approx(-0.4)}
