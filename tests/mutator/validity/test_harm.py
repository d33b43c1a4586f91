"""No task harmed: the exact per-task permutation test over replicate cells, Holm over tasks, the smallest p the
replicates allow (said, not hidden) and the minimum detectable harm; proposeNoHarm refuses a flagged champion."""

from __future__ import annotations

import math

import pytest

from mutator.scoring.score import CellFigures, Normalisers, Weights
from mutator.validity import harm


@pytest.mark.parametrize(("a", "b", "alternative", "p"), [
    ([0, 0, 0], [1, 1, 1], "less", 1 / 20),          # the one split of 6 cells (of C(6,3) = 20) this extreme
    ([0, 0.5, 1], [1, 1, 1], "less", 4 / 20),        # sum(a) <= 1.5 needs {0, 0.5, one of four 1s}: 4 splits
    ([0, 0, 0], [1, 1, 1], "greater", 1.0),
    ([0.4, 0.6], [0.65, 0.65], "less", 1 / 6),       # at 2 replicates a side nothing goes below 1/C(4,2)
    ([0.2], [0.7], "less", 1 / 2),                   # one replicate a side: two splits
])
def test_exact_p_by_hand(a, b, alternative, p) -> None:
    assert harm.exact_p(a, b, alternative) == pytest.approx(p)


@pytest.mark.parametrize(("p", "rejected"), [
    ({"a": 0.01, "b": 0.02, "c": 0.04}, {"a", "b", "c"}),   # 0.01 <= 0.05/3, 0.02 <= 0.05/2, 0.04 <= 0.05
    ({"a": 0.01, "b": 0.03, "c": 0.04}, {"a"}),             # 0.03 > 0.025 stops the steps
    ({"a": 0.02, "b": 0.03}, {"a", "b"}),                   # 0.02 <= 0.05/2, then 0.03 <= 0.05
    ({"a": 0.03, "b": 0.04}, set()),                        # 0.03 > 0.05/2: none
])
def test_holm_steps_down(p, rejected) -> None:
    got = {k for k, v in harm.holm(p, 0.05).items() if v}
    assert got == rejected


def test_one_task_at_three_replicates_can_be_flagged_two_cannot() -> None:
    one = harm.harm({"t": [0.0, 0.0, 0.0]}, {"t": [1.0, 1.0, 1.0]})
    assert one["can_flag"] and one["min_p"] == pytest.approx(0.05) and one["flagged"] == ["t"]
    assert one["tasks"][0]["verdict"] == "worse" and one["tasks"][0]["delta"] == -1.0
    two = harm.harm({"t": [0.0] * 3, "u": [1.0] * 3}, {"t": [1.0] * 3, "u": [0.0] * 3})
    # 1/20 = 0.05 > 0.05/2: however clear, no task of two can be flagged at 3 replicates, and the report says so
    assert not two["can_flag"] and two["flagged"] == [] and two["below"] == ["t"] and two["mdh"] is None
    text = "\n".join(harm.render(two, "the seed"))
    assert "the smallest p any task can reach is 0.05 > 0.05/2: no task can be flagged" in text
    assert "below  t" in text


def test_minimum_detectable_harm_by_hand() -> None:
    cells = [0.4, 0.6, 0.4, 0.6, 0.5]      # mean 0.5, squares 4 x 0.01 over 4 df in each of 6 groups: SD 0.1
    found = harm.harm({t: cells for t in "abc"}, {t: cells for t in "abc"})
    assert found["min_p"] == pytest.approx(1 / 252) and found["can_flag"] and found["sigma"] == pytest.approx(0.1)
    # (z at 1 − 0.05/3 + z at 0.8) x 0.1 x √(1/5 + 1/5) = (2.12805 + 0.84162) x 0.063246
    assert found["mdh"] == pytest.approx((2.12805 + 0.84162) * 0.1 * math.sqrt(0.4), abs=1e-4)
    assert found["flagged"] == [] and {r["verdict"] for r in found["tasks"]} == {"same"}


def test_cell_composites_per_task_and_model() -> None:
    cells = [CellFigures("t", 1, 0.5, 0.2, 4, True, "m1"), CellFigures("t", 0, 1.0, 0.1, 2, True, "m1"),
             CellFigures("t", 0, 0.0, 0.1, 2, False, "m2")]
    norm = Normalisers(0.0, 0.0, by_model=(("m1", 0.1, 2.0), ("m2", 0.2, 4.0)))
    got = harm.cell_composites(cells, Weights(0.1, 0.5), norm)
    # m1 replicate 0: 1 − 0.1·0.1/0.1 − 0.5·2/2 = 0.4; replicate 1: 0.5 − 0.1·0.2/0.1 − 0.5·4/2 = −0.7;
    # m2 (failed: score 0): 0 − 0.1·0.1/0.2 − 0.5·2/4 = −0.3
    assert got == {"t@m1": [pytest.approx(0.4), pytest.approx(-0.7)], "t@m2": [pytest.approx(-0.05 - 0.25)]}


def test_propose_no_harm_names_the_flagged_tasks() -> None:
    report = {"harm": {"seed": harm.harm({"t": [0.0] * 3}, {"t": [1.0] * 3}), "none": None}}
    assert harm.flagged_reason(report).startswith("proposeNoHarm: its latest test finds it worse than the seed on t (")
    assert harm.flagged_reason({"harm": {"seed": harm.harm({"t": [1.0] * 3}, {"t": [1.0] * 3})}}) == ""
    assert harm.flagged_reason(None) == ""


def test_with_w_trigger_a_cell_counts_its_hit_and_trigger_term_as_the_gate_does() -> None:
    """score.wTrigger 0.5: a near-miss cell that loaded the skill scores 0 (not its grade) and loses 0.5; one that
    left it alone scores 1; a should-trigger cell that did not load loses 0.5 on its grade. Without it: the grades."""
    cells = [CellFigures("near", 0, 1.0, 0.0, 0, True, loaded=True, trigger=False),
             CellFigures("near", 1, 1.0, 0.0, 0, True, loaded=False, trigger=False),
             CellFigures("should", 0, 0.8, 0.0, 0, True, loaded=False, trigger=True),
             CellFigures("should", 1, 0.8, 0.0, 0, True, loaded=None, trigger=True)]   # no telemetry: its grade
    norm = Normalisers(0.0, 0.0)
    scored = harm.cell_composites(cells, Weights(0.0, 0.0, 0.5), norm)
    assert scored["near"] == [-0.5, 1.0] and scored["should"] == pytest.approx([0.3, 0.8])
    assert harm.cell_composites(cells, Weights(0.0, 0.0), norm) == {"near": [1.0, 1.0], "should": [0.8, 0.8]}
