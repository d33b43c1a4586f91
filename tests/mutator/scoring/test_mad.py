"""The gate's finite-sample MAD correction: C_n·MAD is unbiased for σ at small n (simulated, fixed seed), the
table joins the asymptotic formula, the SD fallback is unbiased too, and the gate built on it rejects a null
change at the designed rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mutator.scoring.gate import compare
from mutator.scoring.mad import MAD_NORMAL_SCALE, MAD_TABLE, c4, mad_constant, robust_scale_of
from mutator.scoring.score import Comparison, TaskFigures


@pytest.mark.parametrize("n", [4, 8, 16])
def test_corrected_scale_is_unbiased_for_sigma(n):
    rng = np.random.default_rng(20260412 + n)
    sigma = 0.7
    samples = rng.normal(0.0, sigma, size=(200_000, n))
    raw = stats.median_abs_deviation(samples, axis=1, scale=1.0)
    corrected = mad_constant(n) * raw
    assert corrected.mean() == pytest.approx(sigma, rel=0.02)
    # the uncorrected 1.4826·MAD is the bias being fixed: clearly low at these n
    assert (MAD_NORMAL_SCALE * raw).mean() < 0.97 * sigma


def test_the_table_joins_the_asymptotic_formula():
    # Park, Kim & Wang's n > 100 fit continues their table within its Monte-Carlo noise, and tends to 1.4826
    assert mad_constant(101) == pytest.approx(MAD_TABLE[100], rel=2e-3)
    assert mad_constant(10_000) == pytest.approx(MAD_NORMAL_SCALE, rel=1e-4)
    assert all(mad_constant(n) > MAD_NORMAL_SCALE for n in range(2, 500))


@pytest.mark.parametrize("n, expected", [(2, 0.797885), (4, 0.921318), (8, 0.965030)])
def test_c4(n, expected):
    assert c4(n) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "deltas, method",
    [([], "none"), ([0.3], "none"), ([0.1, 0.1, 0.1], "sd"), ([0.0, 0.0, 0.0, 0.5], "sd"), ([0.1, -0.2, 0.4], "mad")],
    ids=["empty", "one-task", "all-tie", "zero-mad", "mad"],
)
def test_scale_says_how_it_was_made(deltas, method):
    scale = robust_scale_of(deltas)
    assert scale.method == method
    d = np.asarray(deltas, dtype=float)
    if method == "mad":
        assert scale.s_r == pytest.approx(scale.factor * stats.median_abs_deviation(d, scale=1.0))
    elif method == "sd":
        assert scale.s_r == pytest.approx(scale.factor * d.std(ddof=1))
        assert scale.factor == pytest.approx(1 / c4(len(deltas)))
    else:
        assert scale.s_r == 0.0


@pytest.mark.parametrize("method", ["t", "signflip"])
@pytest.mark.parametrize("n", [4, 8])
def test_null_change_is_rejected_at_the_designed_rate(n, method):
    """k = 0 through the real gate, one comparison (df = n − 1), normal deltas: design 1 − Φ(1) = 15.9%."""
    rng = np.random.default_rng(7 + n)
    runs = 3000
    incumbent = {f"t{i}": TaskFigures(f"t{i}", 0.5, 0.0, 0.0, 0.5, 1) for i in range(n)}
    rejects = 0
    for _ in range(runs):
        cand = {f"t{i}": TaskFigures(f"t{i}", float(v), 0.0, 0.0, float(v), 1)
                for i, v in enumerate(0.5 + rng.normal(0.0, 0.1, n))}
        rejects += not compare(cand, incumbent, prior=[], min_improvement=0.0, gate_z=1.0, method=method).keep
    design = float(stats.norm.sf(1.0))
    mc = math.sqrt(design * (1 - design) / runs)
    assert abs(rejects / runs - design) < 3 * mc


@pytest.mark.parametrize("method", ["t", "signflip"])
def test_pooling_keeps_the_rate_after_many_rounds(method):
    """Ten rounds pooled at n = 4 (df 30): still the designed rate (squares pooled gave ~12.5%)."""
    rng = np.random.default_rng(11)
    n, runs = 4, 3000
    incumbent = {f"t{i}": TaskFigures(f"t{i}", 0.5, 0.0, 0.0, 0.5, 1) for i in range(n)}
    rejects = 0
    for _ in range(runs):
        prior = [Comparison(n, robust_scale_of(rng.normal(0.0, 0.1, n)).s_r) for _ in range(9)]
        cand = {f"t{i}": TaskFigures(f"t{i}", float(v), 0.0, 0.0, float(v), 1)
                for i, v in enumerate(0.5 + rng.normal(0.0, 0.1, n))}
        rejects += not compare(cand, incumbent, prior=prior, min_improvement=0.0, gate_z=1.0, method=method).keep
    design = float(stats.norm.sf(1.0))
    assert abs(rejects / runs - design) < 3 * math.sqrt(design * (1 - design) / runs)


# Composites that equal 0.3 in exact arithmetic but not in floats: 0.1 + 0.2 and 0.7 − 0.4 differ from 0.3 by
# ~5.6e-17. Five of six tasks tie (a pass/fail-like suite), one loses 0.05.
FLOAT_TIES = [0.1 + 0.2, 0.3, 0.1 + 0.2, 0.7 - 0.4, 0.3, 0.25]
EXACT_TIES = [0.3, 0.3, 0.3, 0.3, 0.3, 0.25]


def _tasks(values):
    return {f"t{i}": TaskFigures(f"t{i}", float(v), 0.0, 0.0, float(v), 1) for i, v in enumerate(values)}


def test_a_mad_of_float_noise_is_zero_and_falls_back_to_the_sd():
    deltas = [c - 0.3 for c in FLOAT_TIES]
    assert 0 < abs(deltas[0]) < 1e-15          # the float noise this is about
    scale = robust_scale_of(deltas)
    exact = robust_scale_of([c - 0.3 for c in EXACT_TIES])
    assert scale.method == exact.method == "sd"
    assert scale.s_r == pytest.approx(exact.s_r, rel=1e-12)
    assert scale.s_r == pytest.approx(float(np.std([0, 0, 0, 0, 0, -0.05], ddof=1)) / c4(6), rel=1e-12)
    # every delta tying in exact arithmetic: the SD is float noise too, and the scale is 0, as with exact ties
    assert robust_scale_of([0.1 + 0.2 - 0.3, 0.0, 0.7 - 0.4 - 0.3, 0.0]).s_r == 0.0
    # a real but small MAD is kept as it is
    assert robust_scale_of([1e-6, -1e-6, 2e-6, 0.0]).method == "mad"


def test_the_float_noise_case_keeps_the_candidate_as_the_exact_deltas_do():
    # The old gate took MAD ~1e-16 as the scale: SE ~4e-17, threshold ~0, and the one lost task rejected the
    # candidate. Exact arithmetic (MAD 0 → SD/c4) gives SE 0.0088, threshold −0.0097, Δ −0.0083: kept.
    for values in (FLOAT_TIES, EXACT_TIES):
        g = compare(_tasks(values), _tasks([0.3] * 6), prior=[], min_improvement=0.0, gate_z=1.0, method="t")
        assert (g.keep, g.scale_method) == (True, "sd")
        assert g.threshold == pytest.approx(-0.0097256, abs=1e-7)


def test_the_sign_flip_reference_of_float_ties_is_the_exact_one():
    # the sign-flip patterns' own scales make the same fallback: t 0.9515 and the atom's ρ, not t ~4e14
    figures = []
    for values in (FLOAT_TIES, EXACT_TIES):
        g = compare(_tasks(values), _tasks([0.3] * 6), prior=[], min_improvement=0.0, gate_z=1.0)
        figures.append((round(g.t, 9), g.flip["below"], g.flip["at"], round(g.flip["rho"], 12), g.flip["position"]))
    assert figures[0] == figures[1] == (0.951532862, 0.0, 0.5, round(0.31731050786291415, 12), 0)
