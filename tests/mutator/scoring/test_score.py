"""Composite score and noise gate: every expected number below was worked out by hand."""

import json
from itertools import pairwise

import pytest

from mutator.scoring.gate import compare, gate_t, pooled, robust_scale
from mutator.scoring.score import (
    CellFigures,
    Comparison,
    Normalisers,
    ScoreError,
    Summary,
    TaskFigures,
    Weights,
    normalisers,
    per_task,
    summarise,
)

W = Weights(w_cost=0.1, w_steps=0.05)
NORM = Normalisers(seed_cost=0.2, seed_steps=10.0)
approx = pytest.approx


def cell(task_id, replicate, score, cost, steps, ok=True):
    return CellFigures(task_id=task_id, replicate=replicate, score=score, cost_usd=cost, steps=steps, ok=ok)


CELLS = [
    cell("a", 0, 1.0, 0.1, 8),
    cell("a", 1, 0.5, 0.3, 12),
    cell("b", 0, 0.9, 0.2, 20, ok=False),  # failed: scores 0, cost and steps still count
    cell("b", 1, 1.0, 0.2, 10),
]


def tasks(composites):
    """TaskFigures with no cost/steps terms, so composite == eval (gate tests need only composites)."""
    return {
        t: TaskFigures(task_id=t, eval=c, cost=0.0, steps=0.0, composite=c, n_cells=1)
        for t, c in composites.items()
    }


def gate(cand, inc, prior=(), min_improvement=0.0, gate_z=1.0):
    return compare(tasks(cand), tasks(inc), prior=list(prior), min_improvement=min_improvement, gate_z=gate_z,
                   method="t")


def deltas_gate(deltas, **kw):
    """A gate whose per-task deltas are exactly `deltas` (incumbent all 0)."""
    names = [f"t{i}" for i in range(len(deltas))]
    return gate(dict(zip(names, deltas)), dict.fromkeys(names, 0.0), **kw)


# --- composite ----------------------------------------------------------------------------------


def test_failed_cell_score_forced_to_zero():
    assert cell("b", 0, 0.9, 0.2, 20, ok=False).score == 0.0
    assert cell("b", 0, 0.9, 0.2, 20, ok=True).score == 0.9


def test_per_task_means_and_composite():
    figures = per_task(CELLS, W, NORM)
    assert list(figures) == ["a", "b"]
    a, b = figures["a"], figures["b"]
    # a: eval (1+.5)/2=.75, cost .2, steps 10 -> .75 - .1*(.2/.2) - .05*(10/10) = .6
    assert (a.eval, a.cost, a.steps, a.n_cells) == (approx(0.75), approx(0.2), approx(10.0), 2)
    assert a.composite == approx(0.6)
    assert (a.cost_term, a.steps_term) == (approx(-0.1), approx(-0.05))
    # b: eval (0+1)/2=.5, cost .2, steps 15 -> .5 - .1 - .075 = .325
    assert (b.eval, b.cost, b.steps, b.n_cells) == (approx(0.5), approx(0.2), approx(15.0), 2)
    assert b.composite == approx(0.325)


def test_summary_is_per_cell_means():
    s = summarise(CELLS, W, NORM)
    # eval (1+.5+0+1)/4=.625, cost .8/4=.2, steps 50/4=12.5 -> .625 - .1 - .05*1.25 = .4625
    assert (s.eval, s.cost, s.steps, s.n_cells) == (approx(0.625), approx(0.2), approx(12.5), 4)
    assert s.composite == approx(0.4625)
    assert [t.task_id for t in s.tasks] == ["a", "b"]


def test_all_replicates_failing():
    figures = per_task([cell("x", 0, 1.0, 0.4, 10, ok=False), cell("x", 1, 0.7, 0.2, 30, ok=False)], W, NORM)
    x = figures["x"]
    # eval 0, cost .3, steps 20 -> 0 - .1*1.5 - .05*2 = -.25
    assert (x.eval, x.cost, x.steps) == (0.0, approx(0.3), approx(20.0))
    assert x.composite == approx(-0.25)


def test_normalisers_include_failed_cells():
    assert normalisers(CELLS) == Normalisers(seed_cost=approx(0.2), seed_steps=approx(12.5))
    assert normalisers([]) == Normalisers(0.0, 0.0)


@pytest.mark.parametrize(
    ("norm", "composite"),
    [
        # a: eval .75, cost .2, steps 10
        (Normalisers(seed_cost=0.0, seed_steps=10.0), 0.70),  # .75 - .05*1
        (Normalisers(seed_cost=0.2, seed_steps=0.0), 0.65),  # .75 - .1*1
        (Normalisers(seed_cost=0.0, seed_steps=0.0), 0.75),  # eval alone
    ],
    ids=["zero-seed-cost", "zero-seed-steps", "both-zero"],
)
def test_zero_normaliser_drops_that_penalty(norm, composite):
    assert per_task(CELLS[:2], W, norm)["a"].composite == approx(composite)


def test_empty_cells_summary_is_zeros():
    assert summarise([], W, NORM) == Summary(
        eval=0.0, cost=0.0, steps=0.0, composite=0.0, n_cells=0, tasks=()
    )
    assert per_task([], W, NORM) == {}


# --- robust scale and pooling ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        ([], 0.0),  # empty deltas
        ([0.3], 0.0),  # one task
        ([0.1, 0.1, 0.1, 0.1], 0.0),  # all tie: MAD 0 and SD 0
        # median -.3, |dev| = 0,.02,.02,.01,.01 -> MAD .01 -> C_5·.01 (C_5 = 1.803927, Park et al. 2020)
        ([-0.30, -0.32, -0.28, -0.31, -0.29], 0.01803927),
        # MAD 0 (three ties) -> SD: mean .04, squares .0016*3+.0676+.0196=.092, /4=.023, sqrt -> ÷ c4(5) = .939986
        ([0.0, 0.0, 0.0, 0.3, -0.1], 0.1613402),
    ],
    ids=["empty", "one-task", "all-tie", "mad", "zero-mad-falls-back-to-sd"],
)
def test_robust_scale(deltas, expected):
    assert robust_scale(deltas) == approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("comparisons", "s", "df"),
    [
        ([], 0.0, 0),
        ([Comparison(n=1, s_r=0.0)], 0.0, 0),
        # (4*.2 + 2*.5) / 6 = 1.8 / 6 = .3: the weighted mean of unbiased scales
        ([Comparison(n=5, s_r=0.2), Comparison(n=3, s_r=0.5)], 0.3, 6),
        # a single-task comparison adds nothing
        ([Comparison(n=5, s_r=0.2), Comparison(n=3, s_r=0.5), Comparison(n=1, s_r=0.0)], 0.3, 6),
    ],
    ids=["none", "one-task-only", "two", "two-plus-single"],
)
def test_pooled(comparisons, s, df):
    got_s, got_df = pooled(comparisons)
    assert got_df == df
    assert got_s == approx(s, abs=1e-6)


@pytest.mark.parametrize(
    ("gate_z", "df", "t"),
    [(1.0, 4, 1.142), (1.0, 9, 1.059), (1.0, 10_000, 1.000), (0.0, 9, 0.0), (1.0, 0, 0.0)],
)
def test_gate_t(gate_z, df, t):
    assert gate_t(gate_z, df) == approx(t, abs=5e-4)


@pytest.mark.parametrize("gate_z", [-1.0, float("nan"), float("inf")])
def test_gate_t_rejects_bad_gate_z(gate_z):
    with pytest.raises(ScoreError, match="gate_z"):
        gate_t(gate_z, 4)


# --- the gate -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_tasks", "df", "t"),
    [(1, 0, 0.0), (3, 2, 1.321)],  # one task: no noise estimate; three tied tasks: df 2 but SE 0
    ids=["one-task", "three-tasks"],
)
def test_ties_are_kept(n_tasks, df, t):
    g = deltas_gate([0.0] * n_tasks, min_improvement=0.0)
    assert (g.delta, g.s_r, g.s, g.se, g.df) == (0.0, 0.0, 0.0, 0.0, df)
    assert g.t == approx(t, abs=5e-4)
    assert g.threshold == 0.0
    assert g.keep


def test_decisive_loss_rejected():
    g = deltas_gate([-0.30, -0.32, -0.28, -0.31, -0.29])
    # s_r .01803927, SE .01803927/√5 = .0080674, t(z=1, df=4) 1.1416 -> threshold -.0092100
    assert g.delta == approx(-0.30)
    assert g.se == approx(0.0080674, abs=1e-6)
    assert g.threshold == approx(-0.0092100, abs=1e-6)
    assert not g.keep


@pytest.mark.parametrize(
    ("gate_z", "t", "threshold", "keep"),
    [
        (0.0, 0.0, 0.0, False),  # raw gate: Δ -.02 < 0
        # s_r C_5*.1 = .1803927, SE .0806741, t 1.141627 -> -.0920997: Δ -.02 is within the noise
        (1.0, 1.141627, -0.0920997, True),
    ],
    ids=["gate-z-0-raw", "gate-z-1"],
)
def test_gate_z_zero_gives_raw_threshold_even_with_noise(gate_z, t, threshold, keep):
    g = deltas_gate([0.2, -0.2, 0.1, -0.1, -0.1], gate_z=gate_z)  # mean -.02, MAD .1
    assert g.delta == approx(-0.02)
    assert g.s_r == approx(0.1803927, abs=1e-6)
    assert (g.scale_method, g.scale_factor) == ("mad", approx(1.803927))
    assert g.t == approx(t, abs=1e-6)
    assert g.threshold == approx(threshold, abs=1e-6)
    assert g.keep is keep


def test_zero_mad_falls_back_to_sd():
    g = deltas_gate([0.0, 0.0, 0.0, 0.3, -0.1])
    assert g.s_r == approx(0.1613402, abs=1e-6)  # sqrt(.023) / c4(5), see test_robust_scale
    assert g.scale_method == "sd"
    assert g.delta == approx(0.04)
    assert g.keep


@pytest.mark.parametrize(
    ("prior", "df", "threshold"),
    [
        ([], 0, 0.05),  # no noise estimate: raw min_improvement
        ([Comparison(n=5, s_r=0.1)], 4, 0.05 - 1.141627 * 0.1),  # s .1, SE .1/√1
    ],
    ids=["alone", "with-prior"],
)
def test_single_task_contributes_no_df(prior, df, threshold):
    g = gate({"only": 0.5}, {"only": 0.4}, prior=prior, min_improvement=0.05)
    assert (g.n, g.s_r, g.df) == (1, 0.0, df)
    assert g.threshold == approx(threshold, abs=1e-6)
    assert g.delta == approx(0.1)
    assert g.keep


def test_band_narrows_as_df_grows():
    deltas = [0.2, -0.2, 0.1, -0.1, -0.1]
    same = Comparison(n=5, s_r=0.1803927)  # this comparison's own figures, so s stays put
    gates = [deltas_gate(deltas, prior=[same] * k) for k in range(4)]
    assert [g.df for g in gates] == [4, 8, 12, 16]
    ts = [g.t for g in gates]
    assert ts == approx([1.142, 1.067, 1.043, 1.032], abs=5e-4)
    assert all(a > b for a, b in pairwise(ts))
    assert all(t > 1.0 for t in ts)
    thresholds = [g.threshold for g in gates]
    assert all(a < b for a, b in pairwise(thresholds))


def test_df_nine_gives_t_1_059():
    g = deltas_gate([0.2, -0.2, 0.1, -0.1, -0.1], prior=[Comparison(n=6, s_r=0.2)])
    assert g.df == 9
    assert g.t == approx(1.059, abs=5e-4)


def test_delta_split_sums_to_delta():
    inc = per_task([cell("a", 0, 0.5, 0.2, 10), cell("b", 0, 1.0, 0.4, 10)], W, NORM)  # .35, .75
    cand = per_task([cell("a", 0, 1.0, 0.4, 20), cell("b", 0, 1.0, 0.3, 5)], W, NORM)  # .7, .825
    g = compare(cand, inc, prior=[], min_improvement=0.0, gate_z=1.0)
    assert g.deltas == {"a": approx(0.35), "b": approx(0.075)}
    assert g.delta == approx(0.2125)
    assert g.delta_eval == approx(0.25)  # (.5 + 0)/2
    assert g.delta_cost == approx(-0.025)  # (-.1 + .05)/2: a got dearer, b cheaper
    assert g.delta_steps == approx(-0.0125)  # (-.05 + .025)/2
    assert g.delta_eval + g.delta_cost + g.delta_steps == approx(g.delta, abs=1e-12)


def test_unpaired_tasks_ignored():
    g = gate({"a": 0.9, "b": 0.5, "c": 0.6}, {"b": 0.4, "c": 0.4, "d": 0.0})
    assert list(g.deltas) == ["b", "c"]
    assert g.n == 2
    assert g.delta == approx(0.15)


@pytest.mark.parametrize(
    ("cand", "inc"),
    [({"a": 0.5}, {"b": 0.5}), ({}, {"b": 0.5}), ({}, {})],
    ids=["disjoint", "empty-candidate", "both-empty"],
)
def test_no_paired_tasks_raises(cand, inc):
    with pytest.raises(ScoreError, match="no paired tasks"):
        gate(cand, inc)


def test_float_noise_at_threshold_is_kept():
    g = gate({"a": 0.3, "b": 0.3}, {"a": 0.2, "b": 0.2}, min_improvement=0.1, gate_z=0.0)
    assert g.delta < 0.1  # 0.3 - 0.2 == 0.09999999999999998
    assert g.keep


def test_hand_built_figures_with_inconsistent_split_raise():
    bad = {"a": TaskFigures(task_id="a", eval=0.9, cost=0.2, steps=10, composite=0.7, n_cells=1)}
    with pytest.raises(ScoreError, match="per_task"):
        compare(bad, tasks({"a": 0.5}), prior=[], min_improvement=0.0, gate_z=1.0)


def test_to_json_has_every_figure():
    g = deltas_gate([0.2, -0.2, 0.1, -0.1, -0.1], prior=[Comparison(n=3, s_r=0.1)])
    data = json.loads(json.dumps(g.to_json(), allow_nan=False))
    assert set(data) == {
        "deltas",
        "n",
        "delta",
        "delta_eval",
        "delta_cost",
        "delta_steps",
        "s_r",
        "s",
        "df",
        "se",
        "t",
        "threshold",
        "min_improvement",
        "gate_z",
        "keep",
        "scale_method",
        "scale_factor",
        "pooling",
        "method",
        "t_student",
        "flip",
        "tie",
    }
    assert set(data["tie"]) == {"rule", "gate_keep", "tie", "delta_cost", "se", "z", "t", "adds_cost", "keep"}
    assert data["deltas"] == {"t0": 0.2, "t1": -0.2, "t2": 0.1, "t3": -0.1, "t4": -0.1}
    assert data["df"] == 6 and data["keep"] is True
    assert g.comparison == Comparison(n=5, s_r=g.s_r, delta=g.delta)


@pytest.mark.parametrize("deltas", [[0.1, -0.2, 0.05, 0.3, 0.0, -0.1, 0.22, 0.07], [1.0, 2.0, 4.0], [0.5, 0.5, 0.1, -3.0]])
def test_robust_scale_matches_scipy_stats(deltas) -> None:
    from scipy import stats

    from mutator.scoring.mad import mad_constant
    raw = float(stats.median_abs_deviation(deltas, scale=1.0))
    assert robust_scale(deltas) == pytest.approx(mad_constant(len(deltas)) * raw, rel=1e-12)


@pytest.mark.parametrize("z, df", [(1.0, 4), (1.0, 9), (0.5, 2), (2.0, 30), (1.0, 10_000)])
def test_gate_t_matches_scipy_stats(z: float, df: int) -> None:
    from scipy import stats
    assert gate_t(z, df) == pytest.approx(float(stats.t.ppf(stats.norm.cdf(z), df)), rel=1e-10)
