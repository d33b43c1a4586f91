"""bench/calibrated.py: a calibrated landscape's per-cell noise and its proposals' effects match the parameters
they were made from (the beta prior fitted from SkillsBench's trials, the calibration note's effect prior)."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from scipy import special, stats

from bench import calibrated
from mutator.validity.calibration import preset


@pytest.mark.parametrize("name", ["skillsbench", "tau"])
def test_per_cell_sd_matches_the_prior(name):
    prior = preset(name)
    lands = [calibrated.make(name, seed) for seed in range(40)]
    ps = [p for land in lands for p in land.p0.values()]          # 40 seeds × 50 tasks
    # E[√(p(1−p))] under Beta(a, b) = B(a + ½, b + ½) / B(a, b); E[p(1−p)] = the fit's trial variance
    mean_sd = math.exp(special.betaln(prior.alpha + 0.5, prior.beta + 0.5) - special.betaln(prior.alpha, prior.beta))
    assert statistics.mean(math.sqrt(p * (1 - p)) for p in ps) == pytest.approx(mean_sd, abs=0.02)
    assert statistics.mean(p * (1 - p) for p in ps) == pytest.approx(prior.trial_var, abs=0.01)
    # a cell is a Bernoulli trial at its task's p: its SD over keyed draws is √(p(1−p))
    land = lands[0]
    task = min(land.suites["val"], key=lambda t: abs(land.p0[("val", t)] - 0.5))
    p = land.p0[("val", task)]
    scores = [land.cell(land.seed_genome, "val", task, 0, stream=f"t{k}")[0].score for k in range(4000)]
    assert statistics.pstdev(scores) == pytest.approx(math.sqrt(p * (1 - p)), abs=0.02)


@pytest.mark.parametrize("name", ["skillsbench", "tau"])
def test_the_share_of_harmful_proposals_matches_the_effect_prior(name):
    land = calibrated.make(name, 7)
    rng = random.Random(3)
    edits = [land.edit(rng.getrandbits(48)) for _ in range(4000)]
    share = {kind: sum(e.kind == kind for e in edits) / len(edits) for kind in ("neutral", "helpful", "harmful",
                                                                               "cost")}
    assert share["harmful"] == pytest.approx(calibrated.HARMFUL, abs=0.02)
    assert share["helpful"] == pytest.approx(calibrated.HELPFUL, abs=0.02)
    assert share["cost"] == pytest.approx(calibrated.COST_ONLY, abs=0.015)
    assert share["neutral"] == pytest.approx(calibrated.NEUTRAL - calibrated.COST_ONLY, abs=0.02)
    assert sum(e.effect <= -0.10 for e in edits) / len(edits) == pytest.approx(calibrated.TAIL, abs=0.012)
    assert all(abs(e.effect) < 0.01 for e in edits if e.kind == "neutral")
    assert all(e.effect == 0 and not e.b and e.steps > 1 for e in edits if e.kind == "cost")
    # the effect acts on the logit: an edit's realised change of the pass rate over the 30 test tasks has
    # the sign of its class on average
    norm = land.norm("test")
    base = land.expected(land.seed_genome, "test", norm)
    by_kind = {kind: statistics.mean(land.expected(frozenset({e.id}), "test", norm) - base
                                     for e in edits[:1500] if e.kind == kind) for kind in ("helpful", "harmful")}
    assert by_kind["helpful"] > 0.01 and by_kind["harmful"] < -0.01


def test_an_edit_is_the_same_in_every_line_and_the_mutator_targets_failing_tasks():
    a, b = calibrated.make("skillsbench", 5), calibrated.make("skillsbench", 5)
    assert a.edit(12345) == b.edit(12345) and a.edit(12345) != a.edit(12346)
    mutator = calibrated.CalibratedMutator.for_seed(a, 5)
    failing = {"train-03": ["train-03:fail"]}
    children = [mutator(frozenset(), objective=None, refs=[], failing=failing, targets=())[0] for _ in range(200)]
    targeted = [a.edits[next(iter(c))] for c in children if c and next(iter(c)) in a.edits]
    touching = sum(("train", "train-03") in e.b for e in targeted) / len(targeted)
    # SMART of the proposals touch the failing task for sure, the rest with the touch share (40–60%)
    assert touching > calibrated.SMART + (1 - calibrated.SMART) * calibrated.TOUCH[0] - 0.08


def test_the_true_composite_is_exact_and_the_seed_normalises_to_the_penalties():
    land = calibrated.make("tau", 2)
    norm = land.norm("val")
    mean_p = statistics.mean(land.p0[("val", t)] for t in land.suites["val"])
    # the seed's cost and steps are the normalisers: its composite is its pass rate − wCost − wSteps
    assert land.expected(land.seed_genome, "val", norm) == pytest.approx(mean_p - 0.1 - 0.02)


def test_a_graded_cell_has_its_tasks_mean_and_the_stated_share_of_the_bernoulli_variance():
    land = calibrated.make("skillsbench-graded", 3)
    share = calibrated.GRADED_SHARE
    assert isinstance(land, calibrated.Graded) and land.k == pytest.approx(1 / share - 1)
    n = 6000
    for task in sorted(land.suites["val"], key=lambda t: land.p0[("val", t)])[2::3]:   # low to high p
        p = land.p0[("val", task)]
        # the construction, exactly: Beta(p·k, (1−p)·k) has mean p and variance share · p(1−p)
        mean, var, kurt = stats.beta.stats(p * land.k, (1 - p) * land.k, moments="mvk")
        assert float(mean) == pytest.approx(p) and float(var) == pytest.approx(share * p * (1 - p))
        cells = [land.cell(land.seed_genome, "val", task, 0, stream=f"g{k}") for k in range(n)]
        scores = [cell.score for cell, _ in cells]
        assert all(0 <= s <= 1 for s in scores) and len(set(scores)) > n * 0.99   # continuous, not 0/1
        assert all(bool(failing) == (cell.score < 0.5) for cell, failing in cells)
        # the draws against the parameters, each within 4 standard errors of its estimate
        assert statistics.fmean(scores) == pytest.approx(p, abs=4 * math.sqrt(var / n))
        # Var(sample variance) ≈ (μ4 − σ⁴)/n, μ4 = (excess kurtosis + 3) σ⁴
        se_var = math.sqrt((float(kurt) + 2) * float(var) ** 2 / n)
        assert statistics.pvariance(scores) == pytest.approx(float(var), abs=4 * se_var)
    # the seed's per-cell SD is the share's root of skillsbench's (Bernoulli) at the same p's
    twin = calibrated.make("skillsbench", 3)
    assert land.cell_sd() == pytest.approx(math.sqrt(share) * twin.cell_sd())


def test_the_graded_landscape_is_skillsbench_of_the_same_seed_but_its_cells():
    graded, twin = calibrated.make("skillsbench-graded", 5), calibrated.make("skillsbench", 5)
    assert graded.p0 == twin.p0 and graded.steps0 == twin.steps0 and graded.prior == twin.prior
    assert graded.edit(12345) == twin.edit(12345)
    genome = frozenset({graded.edit(12345).id})
    twin.edit(12345)
    norm = graded.norm("test")
    assert graded.expected(genome, "test", norm) == twin.expected(genome, "test", norm)
    assert "graded cells" in calibrated.describe(graded) and "Bernoulli" in calibrated.describe(twin)
