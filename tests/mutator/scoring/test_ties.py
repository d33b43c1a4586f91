"""The tie rule (mutator/scoring/ties.py) through score.compare: constructed per-task figures, exact decisions.

Each case builds a candidate whose per-task composite deltas are given and splits every delta between eval, cost
and steps as it says, so the gate's own figures stay the same while only the split changes. The gate is the
Student-t one (method 't') at gateZ 1 with no prior: for the deltas LOSSES (mean −0.05, C_4·MAD = 2.016673·0.05)
its threshold is −t.ppf(Φ(1), 3)·0.10083/2 = −0.0603, so Δ = −0.05 is a statistical tie."""

from __future__ import annotations

import random

import pytest

from mutator.scoring import ties
from mutator.scoring.gate import compare
from mutator.scoring.score import ScoreError, TaskFigures

BASE_EVAL, BASE_COST = 0.5, -0.10
LOSSES = (-0.01, -0.13, 0.02, -0.08)      # mean −0.05: inside the gate's band at n = 4
GAINS = (0.06, 0.04, 0.07, 0.05)          # mean +0.055


def incumbent(n: int) -> dict[str, TaskFigures]:
    return {f"t{i}": TaskFigures(f"t{i}", eval=BASE_EVAL, cost=0.0, steps=0.0, composite=BASE_EVAL + BASE_COST,
                                 n_cells=2, cost_term=BASE_COST, steps_term=0.0) for i in range(n)}


def candidate(deltas, cost_changes, steps_changes=None) -> dict[str, TaskFigures]:
    """Per task: composite = the incumbent's + delta, of which the cost term moved by cost_change and the steps term
    by steps_change (negative: dearer); the eval part is what is left."""
    steps_changes = steps_changes or [0.0] * len(deltas)
    out = {}
    for i, (d, c, s) in enumerate(zip(deltas, cost_changes, steps_changes, strict=True)):
        out[f"t{i}"] = TaskFigures(f"t{i}", eval=BASE_EVAL + d - c - s, cost=0.0, steps=0.0,
                                   composite=BASE_EVAL + BASE_COST + d, n_cells=2, cost_term=BASE_COST + c,
                                   steps_term=s)
    return out


def gate(deltas, cost_changes, steps_changes=None, *, rule="noAddedCost", min_improvement=0.0):
    return compare(candidate(deltas, cost_changes, steps_changes), incumbent(len(deltas)), prior=[],
                   min_improvement=min_improvement, gate_z=1.0, method="t", tie_rule=rule)


def test_a_tie_that_adds_cost_is_rejected_and_the_spec_rule_keeps_it():
    g = gate(LOSSES, [-0.03] * 4)                             # every task 0.03 dearer: no noise in the cost
    assert g.threshold == pytest.approx(-0.0603, abs=1e-4) and g.delta == pytest.approx(-0.05)
    assert g.delta_cost == pytest.approx(-0.03) and g.delta_eval == pytest.approx(-0.02)
    assert (g.tie.gate_keep, g.tie.tie, g.tie.adds_cost, g.keep) == (True, True, True, False)
    assert g.tie.se == pytest.approx(0.0, abs=1e-15)
    spec = gate(LOSSES, [-0.03] * 4, rule="keep")
    assert (spec.threshold, spec.delta) == (g.threshold, g.delta)   # the gate's own figures do not move
    assert (spec.tie.tie, spec.tie.adds_cost, spec.keep) == (True, True, True)


@pytest.mark.parametrize(("costs", "steps", "keep"), [
    ([0.0] * 4, None, True),                  # the same cost: a tie rides forward, as in the spec
    ([0.02] * 4, None, True),                 # cheaper
    ([0.0] * 4, [-0.01] * 4, False),          # more steps for the same cost is added cost too
    ([0.01] * 4, [-0.01] * 4, True),          # cost down by what steps went up: nothing added
    ([-1e-13] * 4, None, True),               # a float's last bit is not a cost
])
def test_which_ties_are_kept(costs, steps, keep):
    g = gate(LOSSES, costs, steps)
    assert g.delta == pytest.approx(-0.05) and g.tie.gate_keep and g.tie.tie
    assert g.keep is keep


def test_a_gain_that_adds_cost_is_kept():
    g = gate(GAINS, [-0.03] * 4)
    assert g.delta == pytest.approx(0.055)
    assert (g.tie.tie, g.tie.adds_cost, g.keep) == (False, True, True)


def test_a_decisive_loss_stays_rejected_however_cheap():
    g = gate([d - 0.3 for d in LOSSES], [0.05] * 4)
    assert g.delta < g.threshold
    assert (g.tie.gate_keep, g.tie.tie, g.tie.adds_cost, g.keep) == (False, False, False, False)


def test_below_a_positive_min_improvement_is_a_tie_too():
    g = gate([d + 0.08 for d in LOSSES], [-0.01] * 4, min_improvement=0.05)   # Δ +0.03, threshold 0.05 − 0.0603
    assert g.threshold < g.delta < 0.05 and g.delta == pytest.approx(0.03)
    assert (g.tie.tie, g.tie.adds_cost, g.keep) == (True, True, False)


def test_noisy_costs_count_as_added_only_past_the_student_t_bound():
    # per-task cost changes −0.02, +0.01, −0.03, 0: mean −0.01, SD 0.018257, SE 0.0091287; t.ppf(Φ(3), 3) = 9.2189
    noisy = [-0.02, 0.01, -0.03, 0.0]
    g = gate(LOSSES, noisy)
    assert g.tie.delta_cost == pytest.approx(-0.01) and g.tie.se == pytest.approx(0.0091287, abs=1e-6)
    assert g.tie.t == pytest.approx(9.2189, abs=1e-4)
    assert g.tie.tie and not g.tie.adds_cost and g.keep
    g = gate(LOSSES, [c - 0.1 for c in noisy])                  # mean −0.11 < −9.2189·0.0091287 = −0.0842
    assert g.tie.tie and g.tie.adds_cost and not g.keep


def test_one_task_has_no_noise_estimate_so_any_added_cost_counts():
    g = gate([-0.001], [-0.03])
    assert (g.tie.se, g.tie.t, g.tie.adds_cost) == (0.0, 0.0, True)


def test_a_change_that_costs_nothing_more_gets_the_gates_own_verdict():
    """With no cost change (bench/gate.py's deltas, an A/A copy of a deterministic agent) the rule never fires."""
    rng = random.Random(3)
    for _ in range(300):
        n = rng.choice((4, 6, 8, 16))
        g = gate([rng.gauss(0, 0.1) for _ in range(n)], [0.0] * n)
        assert not g.tie.adds_cost and g.keep is g.tie.gate_keep


def test_noise_alone_rarely_makes_a_change_dearer():
    """A change of no true cost measured with noisy per-task costs is called dearer 1 − Φ(3) = 0.13% of the time at
    every task count, far inside the gate's own 1 − Φ(1) = 16% (4000 draws each: 0.4% allows 4.5 SE)."""
    rng = random.Random(11)
    for n in (4, 8, 16):
        paired = [f"t{i}" for i in range(n)]
        dearer = sum(ties.check(candidate([0.0] * n, [rng.gauss(0.0, 0.02) for _ in range(n)]), incumbent(n),
                                paired, delta=-0.01, gate_keep=True, min_improvement=0.0,
                                rule="noAddedCost").adds_cost for _ in range(4000))
        assert dearer / 4000 < 0.004, (n, dearer)


def test_the_gate_json_carries_the_rule_and_an_unknown_rule_names_its_key():
    stored = gate(LOSSES, [-0.03] * 4).to_json()["tie"]
    assert stored == {"rule": "noAddedCost", "gate_keep": True, "tie": True, "delta_cost": pytest.approx(-0.03),
                      "se": pytest.approx(0.0, abs=1e-15), "z": ties.COST_Z, "t": pytest.approx(9.2189, abs=1e-4),
                      "adds_cost": True, "keep": False}
    with pytest.raises(ScoreError, match="unknown tieRule 'sometimes'.*'score.tieRule' in config.json"):
        gate(LOSSES, [0.0] * 4, rule="sometimes")
