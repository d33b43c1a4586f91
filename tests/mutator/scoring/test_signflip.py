"""The sign-flip gate: a hand-computed decision, the coin on the threshold, a re-derivation from the stored JSON by
a plain loop over patterns, and the designed false-reject rate under noise where the Student-t gate is off."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from mutator.scoring import signflip
from mutator.scoring.gate import compare
from mutator.scoring.mad import c4, robust_scale_of
from mutator.scoring.score import Comparison, TaskFigures

ALPHA = float(stats.norm.sf(1.0))   # gateZ 1: 0.158655


def tasks(values) -> dict[str, TaskFigures]:
    return {f"t{i:02d}": TaskFigures(f"t{i:02d}", float(v), 0.0, 0.0, float(v), 1) for i, v in enumerate(values)}


def gate(deltas, prior=(), min_improvement=0.0, method="signflip"):
    return compare(tasks(deltas), tasks([0.0] * len(deltas)), prior=list(prior), min_improvement=min_improvement,
                   gate_z=1.0, method=method)


def test_a_uniform_loss_on_every_task_is_rejected_with_hand_computed_figures():
    """d = −0.1 on all 4 tasks, one earlier comparison (n 4, s_r 0.2): prior weight 0.6, df 6.

    The 16 sign patterns of |d| = 0.1 with j negatives: j = 4 (the observed) mean −0.1, s_r 0 (SD of equal
    values), SE = 0.6/6/2 = 0.05, T = −2 (1 pattern); j = 3: mean −0.05, MAD 0 → SD 0.1/c4(4) = 0.108540,
    SE = (0.6 + 3·0.108540)/6/2 = 0.077135, T = −0.64822 (4 patterns); j = 2: T 0 (6); j = 1, 0: mirror images.
    α·16 = 2.54 → q = the 3rd smallest = −0.64822; P(T* < q) = 1/16, P(T* = q) = 4/16, ρ = (α − 1/16)/(4/16).
    The observed T = −2 < q: rejected. t = 0.64822, threshold = −t·SE = −0.032411."""
    g = gate([-0.1] * 4, prior=[Comparison(4, 0.2)])
    se3 = (0.6 + 3 * 0.1 / c4(4)) / 6 / 2
    assert se3 == pytest.approx(0.077135, abs=1e-6)
    assert g.method == "signflip" and g.df == 6 and g.se == pytest.approx(0.05)
    assert g.t == pytest.approx(0.05 / se3, abs=1e-8) == pytest.approx(0.64822, abs=1e-5)
    assert g.threshold == pytest.approx(-0.05 * 0.05 / se3, abs=1e-9) == pytest.approx(-0.032411, abs=1e-6)
    assert g.flip["patterns"] == 16 and g.flip["exhaustive"] is True
    assert g.flip["below"] == 1 / 16 and g.flip["at"] == 4 / 16
    assert g.flip["rho"] == pytest.approx((ALPHA - 1 / 16) / (4 / 16)) == pytest.approx(0.384621, abs=1e-6)
    assert g.flip["position"] == -1 and g.keep is False
    # the Student-t gate on the same figures: t(z=1, df=6) = 1.09057 -> threshold −0.054528, also a reject
    assert g.t_student == pytest.approx(1.09057, abs=1e-5)
    assert gate([-0.1] * 4, prior=[Comparison(4, 0.2)], method="t").threshold == pytest.approx(-0.05 * g.t_student)


@pytest.mark.parametrize("deltas", [[-0.1, -0.1, -0.1, 0.1], [0.1, -0.1, -0.1, -0.1], [-0.1, 0.1, -0.1, -0.1]])
def test_a_delta_on_the_threshold_is_decided_by_its_stored_coin(deltas):
    """Three losses and a gain of equal size: T = −0.64822 = q, the atom itself, so the coin decides."""
    g = gate(deltas, prior=[Comparison(4, 0.2)])
    assert g.flip["position"] == 0
    assert g.delta == pytest.approx(g.threshold, abs=1e-9)
    assert g.flip["u"] == signflip.coin(deltas)
    assert g.keep is (not g.flip["u"] < g.flip["rho"])
    assert g.to_json()["keep"] is g.keep
    assert gate(deltas, prior=[Comparison(4, 0.2)]).keep is g.keep   # the same comparison decides the same


def independent_critical(deltas: list[float], prior: list[tuple[int, float]], alpha: float) -> tuple[float, float]:
    """(q, ρ) by a plain loop over every pattern, with mad.robust_scale_of: the gate's rule written out."""
    n = len(deltas)
    k0 = sum(m - 1 for m, _ in prior)
    w0 = sum((m - 1) * s for m, s in prior)
    stats_: list[float] = []
    for signs in itertools.product((1, -1), repeat=n):
        x = [s * d for s, d in zip(signs, deltas, strict=True)]
        se = (w0 + (n - 1) * robust_scale_of(x).s_r) / (k0 + n - 1) / math.sqrt(n)
        stats_.append(round(sum(x) / n / se, 9) if se > 0 else math.copysign(math.inf, sum(x)))
    ordered = sorted(stats_)
    q = ordered[math.ceil(alpha * len(ordered)) - 1]
    below = sum(v < q for v in stats_) / len(stats_)
    at = sum(v == q for v in stats_) / len(stats_)
    return q, min(max((alpha - below) / at, 0.0), 1.0)


def test_stored_figures_re_derive_from_the_gate_json_alone():
    """A real-looking comparison (8 tasks, tied pass/fail deltas, two earlier comparisons): the stored JSON's
    deltas, the prior and gateZ give back t, ρ and the verdict through an independent loop."""
    deltas = [0.0, 0.0, -0.5, 0.0, 0.25, -0.25, 0.0, -0.5]
    prior = [(8, 0.21), (8, 0.3)]
    stored = json.loads(json.dumps(gate(deltas, prior=[Comparison(n, s) for n, s in prior]).to_json()))
    q, rho = independent_critical(list(stored["deltas"].values()), prior, ALPHA)
    assert stored["t"] == pytest.approx(-q, abs=1e-8)
    assert stored["flip"]["rho"] == pytest.approx(rho)
    assert stored["threshold"] == pytest.approx(stored["min_improvement"] + q * stored["se"], abs=1e-10)
    observed = stored["delta"] / stored["se"]
    assert stored["keep"] is (observed > q + 1e-7 or (abs(observed - q) <= 1e-7 and stored["flip"]["u"] >= rho))


def test_min_improvement_shifts_the_deltas_before_flipping():
    """Testing Δ against minImprovement m flips d − m: the same decision as flipping d − m with m = 0."""
    deltas = [0.05, 0.12, -0.02, 0.08, 0.01]
    shifted = gate([d - 0.03 for d in deltas])
    g = gate(deltas, min_improvement=0.03)
    assert g.t == pytest.approx(shifted.t) and g.keep is shifted.keep
    assert g.threshold == pytest.approx(0.03 + shifted.threshold)


def test_beyond_twelve_tasks_a_seeded_sample_is_used_and_repeats():
    rng = np.random.default_rng(3)
    deltas = list(rng.normal(-0.01, 0.1, 20))
    a, b = gate(deltas), gate(deltas)
    assert a.flip["exhaustive"] is False and a.flip["patterns"] == signflip.SAMPLED + 1
    assert a.flip == b.flip and a.t == b.t and a.flip["sample_seed"] != 0


@pytest.mark.parametrize("raw", [dict(deltas=[0.0] * 5), dict(deltas=[0.2]), dict(deltas=[0.1, -0.3], gate_z=0.0)])
def test_no_noise_estimate_gives_the_raw_gate(raw):
    """All deltas equal with no prior (s = 0), one task (df 0) or gateZ 0: keep iff Δ ≥ minImprovement."""
    d = raw["deltas"]
    g = compare(tasks(d), tasks([0.0] * len(d)), prior=[], min_improvement=0.0, gate_z=raw.get("gate_z", 1.0))
    assert g.t * g.se == 0.0 and g.flip is None and g.threshold == 0.0 and g.keep is (sum(d) / len(d) >= 0)


def t3(rng, n):
    return rng.standard_t(3, n) * 0.1 / math.sqrt(3.0)


def tied(rng, n):
    """Pass/fail-like deltas: mostly 0, some ±0.5 and ±0.25 (half a replicate pair flipping)."""
    return rng.choice([0.0, 0.0, 0.0, 0.25, 0.5], n) * rng.choice([-1.0, 1.0], n)


@pytest.mark.parametrize("family", [t3, tied])
@pytest.mark.parametrize("n, rounds", [(4, 1), (8, 5)])
def test_null_changes_are_rejected_at_the_designed_rate_for_heavy_tailed_and_tied_noise(family, n, rounds):
    """k = 0: 3000 comparisons, the run's earlier comparisons drawn from the same family; design 15.9% ± 3 SE."""
    rng = np.random.default_rng(100 * n + rounds)
    runs = 3000
    rejects = 0
    for _ in range(runs):
        prior = [Comparison(n, robust_scale_of(family(rng, n)).s_r) for _ in range(rounds - 1)]
        rejects += not gate(list(family(rng, n)), prior=prior).keep
    assert abs(rejects / runs - ALPHA) < 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


def test_the_student_t_gate_is_off_design_under_heavy_tails():
    """Why the sign flips: under t(3) noise C_n·MAD measures the centre, not the SD, and after a few pooled
    rounds the Student-t gate rejects far more than 15.9% of null changes (n 16, 5 rounds)."""
    rng = np.random.default_rng(5)
    runs, n = 2000, 16
    rejects = 0
    for _ in range(runs):
        prior = [Comparison(n, robust_scale_of(t3(rng, n)).s_r) for _ in range(4)]
        rejects += not gate(list(t3(rng, n)), prior=prior, method="t").keep
    assert rejects / runs > ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
