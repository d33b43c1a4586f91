"""mutator/validity/stats.py against values worked out by hand (scipy only for the distributions' quantiles)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from mutator.validity.stats import (
    binomial_rate,
    is_pass_fail,
    mcnemar_exact,
    mde,
    paired,
    paired_delta,
    sign_test,
    two_sided_critical,
)


def test_paired_delta_hand_computed() -> None:
    # d = 0.1, 0.2, 0.3, 0.4: mean 0.25; squared deviations 0.0225+0.0025+0.0025+0.0225 = 0.05; var 0.05/3
    result = paired_delta([0.1, 0.2, 0.3, 0.4])
    sd = math.sqrt(0.05 / 3)
    se = sd / 2
    half = sps.t.ppf(0.975, 3) * se                       # 3.18245 · 0.0645497 = 0.205425
    assert result.n == 4 and result.df == 3
    assert result.mean == pytest.approx(0.25)
    assert result.sd == pytest.approx(0.1290994, abs=1e-7) == pytest.approx(sd)
    assert result.se == pytest.approx(0.0645497, abs=1e-7)
    assert (result.ci_low, result.ci_high) == pytest.approx((0.25 - half, 0.25 + half))
    assert result.ci_low == pytest.approx(0.044575, abs=1e-5) and result.ci_high == pytest.approx(0.455425, abs=1e-5)
    assert result.t_stat == pytest.approx(0.25 / se) == pytest.approx(3.872983, abs=1e-6)
    assert result.p_value == pytest.approx(2 * sps.t.sf(0.25 / se, 3))


def test_paired_takes_shared_tasks_and_subtracts_b() -> None:
    deltas = paired({"a": 0.9, "b": 0.5, "x": 1.0}, {"a": 0.4, "b": 0.7, "y": 0.0})
    assert deltas == pytest.approx({"a": 0.5, "b": -0.2})
    assert paired_delta(deltas).mean == pytest.approx(0.15)


@pytest.mark.parametrize(("deltas", "mean", "p"), [([0.3], 0.3, None), ([0.0, 0.0, 0.0], 0.0, 1.0),
                                                  ([0.2, 0.2], 0.2, 0.0)])
def test_paired_delta_edges(deltas, mean, p) -> None:
    result = paired_delta(deltas)
    assert result.mean == pytest.approx(mean) and result.p_value == p
    if len(deltas) == 1:
        assert result.se is None and result.ci_low is None
    else:
        assert result.se == 0 and result.ci_low == result.ci_high == pytest.approx(mean)


def test_paired_delta_refuses_nothing() -> None:
    with pytest.raises(ValueError, match="at least one paired task"):
        paired_delta([])


def test_sign_test_hand_computed() -> None:
    # 5 wins, 1 loss, 2 ties dropped: p = 2·P(X ≤ 1 | n=6, ½) = 2·(1 + 6)/64 = 0.21875
    result = sign_test([0.1, 0.2, 0.05, 0.3, 0.01, -0.4, 0.0, 1e-15])
    assert (result.wins, result.losses, result.ties) == (5, 1, 2)
    assert result.p_value == pytest.approx(14 / 64)
    assert sign_test([1, 1, 1, 1, 1, 1]).p_value == pytest.approx(2 / 64)
    assert sign_test({"a": 0.0, "b": 0.0}).p_value == 1.0


def test_mcnemar_exact_hand_computed() -> None:
    # 10 both pass, 1 only a, 7 only b, 2 both fail: p = 2·P(X ≤ 1 | n=8, ½) = 2·(1 + 8)/256
    pairs = [(True, True)] * 10 + [(True, False)] + [(False, True)] * 7 + [(False, False)] * 2
    result = mcnemar_exact(pairs)
    assert (result.n, result.both_pass, result.only_a, result.only_b, result.both_fail) == (20, 10, 1, 7, 2)
    assert result.p_value == pytest.approx(18 / 256)
    assert mcnemar_exact([(True, True), (False, False)]).p_value == 1.0
    # 3 discordant all one way: p = 2·(1/8) = 0.25
    assert mcnemar_exact([(True, False)] * 3).p_value == pytest.approx(0.25)


@pytest.mark.parametrize(("scores", "expected"), [([0, 1, 1.0], True), ([0.5, 1], False), ([], False), ([0.0], True)])
def test_is_pass_fail(scores, expected) -> None:
    assert is_pass_fail(scores) is expected


def test_mde_hand_computed() -> None:
    # σ 0.2, 16 tasks: SE 0.05; two-sided 5% (1.959964) + 80% power (0.841621) = 2.801585 → 0.140079
    assert two_sided_critical(0.05) == pytest.approx(1.959964, abs=1e-6)
    assert mde(0.2, 16, critical=two_sided_critical(0.05)) == pytest.approx(0.140079, abs=1e-6)
    # the gate at z=1, df=7: t = 1.0767; with the t power quantile (0.896030): (1.0767 + 0.8960)·0.1/√8
    t = sps.t.ppf(sps.norm.cdf(1.0), 7)
    assert mde(0.1, 8, critical=t, df=7) == pytest.approx((t + 0.8960296) * 0.1 / math.sqrt(8), abs=1e-7)
    assert mde(0.1, 8, critical=t, df=7) > mde(0.1, 8, critical=t)   # the t quantile is the wider one
    with pytest.raises(ValueError):
        mde(0.1, 0, critical=1.0)


def test_binomial_rate_is_scipys_exact_interval_in_closed_form() -> None:
    """binomial_rate's beta quantiles give the interval binomtest's root-finding gives, for every k of n ≤ 20
    and a spread of larger n, at two confidence levels; the edges k = 0 and k = n are the bounds 0 and 1."""
    cases = [(k, n) for n in range(1, 21) for k in range(n + 1)] + [(k, n) for n in (50, 100, 400)
                                                                     for k in (0, 1, 7, n // 6, n // 2, n - 1, n)]
    for confidence in (0.95, 0.8):
        for k, n in cases:
            ci = sps.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
            rate = binomial_rate(k, n, confidence=confidence)
            assert abs(rate.ci_low - ci.low) < 1e-10 and abs(rate.ci_high - ci.high) < 1e-10, (k, n)
    assert (binomial_rate(0, 7).ci_low, binomial_rate(7, 7).ci_high) == (0.0, 1.0)
    assert binomial_rate(0, 0).rate is None
