"""The keep rules (mutator/scoring/keep.py) on constructed gates and attempt histories: exact decisions."""

import math
import statistics

import pytest

from mutator.scoring import keep
from mutator.scoring.gate import Gate
from mutator.scoring.score import Comparison


def gate(delta, *, s=0.2, n=8, t=1.0, keep_=True, min_improvement=0.0):
    se = s / math.sqrt(n)
    return Gate(deltas={}, n=n, delta=delta, delta_eval=delta, delta_cost=0.0, delta_steps=0.0, s_r=s, s=s, df=20,
                se=se, t=t, threshold=min_improvement - t * se, min_improvement=min_improvement, gate_z=1.0,
                keep=keep_)


def history(deltas, n=8):
    return [Comparison(n, 0.2, d) for d in deltas]


def test_eb_rejects_a_positive_delta_when_the_runs_proposals_are_noise_around_a_loss():
    past = [-0.10, -0.08, -0.06, -0.05, -0.04, -0.03, -0.02, 0.0, 0.02]
    g = keep.apply("eb", gate(0.03), history(past))
    everything = [*past, 0.03]
    mu = statistics.mean(everything)
    # the spread of the measured Δ's (var ≈ 0.0017) is below the noise (SE² = 0.2²/8 = 0.005): τ² = 0, B = 0,
    # so the posterior is μ < 0 — the rule rejects what 'positive' and the lenient gate keep
    assert statistics.variance(everything) < 0.2 ** 2 / 8
    assert g.keep_rule["tau2"] == 0.0 and g.keep_rule["shrink"] == 0.0
    assert g.keep_rule["mu"] == pytest.approx(mu) and g.keep_rule["posterior"] == pytest.approx(mu)
    assert g.keep is False and g.keep_rule["gate_keep"] is True and g.keep_rule["history"] == 10
    assert keep.apply("positive", gate(0.03), history(past)).keep is True
    assert keep.apply("lenient", gate(0.03), history(past)).keep is True


def test_eb_barely_shrinks_when_true_effects_are_wide():
    past = [-0.4, -0.3, -0.35, 0.3, 0.35, 0.4]
    g = keep.apply("eb", gate(0.05, s=0.1), history(past))
    everything = [*past, 0.05]
    se2 = 0.1 ** 2 / 8
    mu, tau2 = statistics.mean(everything), statistics.variance(everything) - se2
    shrink = tau2 / (tau2 + se2)
    assert g.keep_rule["tau2"] == pytest.approx(tau2) and g.keep_rule["shrink"] == pytest.approx(shrink)
    assert g.keep_rule["posterior"] == pytest.approx(mu + shrink * (0.05 - mu))
    assert shrink > 0.9 and g.keep is True
    # the same history, a small loss: its posterior stays below 0
    assert keep.apply("eb", gate(-0.01, s=0.1), history(past)).keep is False


def test_eb_history_uses_each_comparisons_own_task_count_and_ignores_unread_deltas():
    past = [Comparison(4, 0.2, -0.2), Comparison(16, 0.2, 0.2), Comparison(8, 0.2, None),
            Comparison(8, 0.2, -0.1), Comparison(8, 0.2, 0.1)]
    g = keep.apply("eb", gate(0.0, s=0.2), past)
    ses2 = [0.04 / 4, 0.04 / 16, 0.04 / 8, 0.04 / 8, 0.04 / 8]
    deltas = [-0.2, 0.2, -0.1, 0.1, 0.0]
    assert g.keep_rule["history"] == 5
    assert g.keep_rule["tau2"] == pytest.approx(statistics.variance(deltas) - statistics.mean(ses2))


def test_eb_cold_start_keeps_iff_the_delta_is_positive():
    g = keep.apply("eb", gate(0.01), history([-0.3, -0.3, -0.3]))
    assert g.keep_rule["mu"] is None and g.keep_rule["history"] == 4 and g.keep is True
    assert keep.apply("eb", gate(-0.01), history([0.3, 0.3, 0.3])).keep is False


@pytest.mark.parametrize("delta, strict, positive", [(0.08, True, True), (0.05, False, True),
                                                     (0.0, False, False), (-0.05, False, False)])
def test_strict_keeps_only_a_decisive_win_and_positive_any_gain(delta, strict, positive):
    # SE = 0.2/√8 = 0.0707, t 1: the strict bar is 0.0707
    assert keep.apply("strict", gate(delta)).keep is strict
    assert keep.apply("positive", gate(delta)).keep is positive
    assert keep.apply("strict", gate(delta)).keep_rule["bar"] == pytest.approx(0.2 / math.sqrt(8))


def test_lenient_is_the_gate_unchanged_and_stores_nothing_new():
    g = gate(-0.05, keep_=True)
    assert keep.apply("lenient", g) is g and "keep_rule" not in g.to_json()
    assert keep.apply("strict", g).to_json()["keep_rule"]["rule"] == "strict"


def test_an_unknown_rule_names_the_key():
    with pytest.raises(ValueError, match="score.keepRule 'bayes'"):
        keep.apply("bayes", gate(0.0))
