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


# ---- 'ebc': empirical Bayes with the incumbent's winner's curse (mutator/scoring/curse.py) ----------------------

def chain(deltas_keeps, n=8):
    return [Comparison(n, 0.2, d, k) for d, k in deltas_keeps]


def by_hand(deltas, keeps, se2, *, floor=0.2, passes=2):
    """The ebc figures re-derived step by step (h = SE²/2, τ² floored at floor·SE², PASSES re-estimates)."""
    h = se2 / 2

    def moments(ds):
        mu = statistics.mean(ds)
        return mu, max(floor * se2, statistics.variance(ds) - se2)

    def walk(mu, tau2):
        b, v, biases = 0.0, h, []
        for d, kept in zip(deltas[:-1], keeps):
            biases.append(b)
            total = tau2 + h + v
            y = d + b - mu
            if kept:
                b, v = h / total * y, h - h * h / total
            else:
                precision = 1 / v + 1 / (tau2 + h)
                b, v = (b / v - (d - mu) / (tau2 + h)) / precision, 1 / precision
        biases.append(b)
        total = tau2 + h + v
        return biases, mu + tau2 / total * (deltas[-1] + b - mu)

    mu, tau2 = moments(deltas)
    biases, post = walk(mu, tau2)
    for _ in range(passes):
        mu, tau2 = moments([d + b for d, b in zip(deltas, biases)])
        biases, post = walk(mu, tau2)
    return mu, tau2, biases[-1], post


def test_ebc_keeps_a_small_loss_against_an_incumbent_whose_keep_was_lucky():
    # the incumbent was kept on a large Δ (+0.25, SE 0.07) and every candidate since measured below it: its
    # val figure is inflated. A candidate 0.01 below it is kept by ebc; positive and eb reject it
    past = [(0.02, False), (-0.03, False), (0.25, True), (-0.12, False), (-0.15, False), (-0.10, False),
            (-0.13, False)]
    g = keep.apply("ebc", gate(-0.01), chain(past))
    se2 = 0.2 ** 2 / 8
    mu, tau2, bias, post = by_hand([d for d, _ in past] + [-0.01], [k for _, k in past], se2)
    r = g.keep_rule
    assert r["rule"] == "ebc" and r["history"] == 8 and r["gate_keep"] is True
    assert r["mu"] == pytest.approx(mu) and r["tau2"] == pytest.approx(tau2)
    assert r["incumbent_bias"] == pytest.approx(bias) and r["posterior"] == pytest.approx(post)
    assert bias > 0.05 and post > 0 and g.keep is True
    assert keep.apply("positive", gate(-0.01), chain(past)).keep is False
    assert keep.apply("eb", gate(-0.01), chain(past)).keep is False


def test_ebc_reads_the_verdicts_the_same_deltas_with_no_keep_compare_with_an_unselected_seed():
    # the same Δ's, but the +0.25 was rejected: every comparison is against the seed, whose error is estimated
    # from all of them (their mean is near μ), so the bias is small and the small loss is rejected
    past = [(0.02, False), (-0.03, False), (0.25, False), (-0.12, False), (-0.15, False), (-0.10, False),
            (-0.13, False)]
    g = keep.apply("ebc", gate(-0.01), chain(past))
    mu, tau2, bias, post = by_hand([d for d, _ in past] + [-0.01], [k for _, k in past], 0.2 ** 2 / 8)
    assert g.keep_rule["incumbent_bias"] == pytest.approx(bias) and abs(bias) < 0.02
    assert g.keep_rule["posterior"] == pytest.approx(post) and post < 0 and g.keep is False


def test_ebc_cold_start_keeps_iff_the_delta_plus_the_incumbent_error_is_positive():
    # the first comparison is against the seed: no error, Δ decides
    assert keep.apply("ebc", gate(0.01)).keep is True and keep.apply("ebc", gate(-0.01)).keep is False
    first = keep.apply("ebc", gate(0.01)).keep_rule
    assert first["incumbent_bias"] == 0.0 and first["mu"] is None and first["posterior"] == pytest.approx(0.01)
    # below EB_MIN comparisons, after a keep: Δ + b, b the kept candidate's estimated error (> 0)
    g = keep.apply("ebc", gate(-0.005), chain([(0.3, True)]))
    assert g.keep_rule["mu"] is None and g.keep_rule["incumbent_bias"] > 0.005 and g.keep is True
    assert g.keep_rule["posterior"] == pytest.approx(-0.005 + g.keep_rule["incumbent_bias"])


def test_ebc_is_stored_in_the_gate_json():
    g = keep.apply("ebc", gate(0.03), chain([(0.1, True), (-0.1, False), (0.0, False), (0.05, False)]))
    stored = g.to_json()["keep_rule"]
    assert stored["rule"] == "ebc" and stored["keep"] is g.keep and stored["history"] == 5
    assert set(stored) >= {"mu", "tau2", "incumbent_bias", "incumbent_var", "posterior", "gate_keep"}
