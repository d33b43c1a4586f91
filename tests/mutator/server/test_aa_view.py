"""The A/A view's figures: the false-call count and rate with an exact binomial 95% CI."""

from __future__ import annotations

import json

import pytest

from mutator.server.aa_view import clopper_pearson, summary


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (0, 3, 0.0, 0.707598), (1, 3, 0.008403, 0.905700), (3, 3, 0.292402, 1.0), (2, 20, 0.012349, 0.316990),
])
def test_clopper_pearson_matches_the_exact_interval(k, n, low, high):
    got = clopper_pearson(k, n)
    assert got == pytest.approx((low, high), abs=1e-5)


def test_no_copies_has_no_rate():
    assert clopper_pearson(0, 0) == (None, None)
    found = summary({"gate_z": 1.0, "min_improvement": 0.0}, [{"round": 0, "verdict": "SEED", "delta": None}])
    assert found["n"] == 0 and found["rate"] is None and found["ci_low"] is None


def test_rejects_and_false_improvements_are_both_false_calls():
    rows = [{"round": 0, "verdict": "SEED", "delta": None, "gate_threshold": None},
            {"round": 1, "verdict": "REJECT", "delta": -0.1, "gate_threshold": -0.05, "gate": json.dumps(
                {"aa": {"false_improvement": False}})},
            {"round": 2, "verdict": "KEEP", "delta": 0.08, "gate_threshold": -0.05, "gate": json.dumps(
                {"aa": {"false_improvement": True}})},
            {"round": 3, "verdict": "KEEP", "delta": 0.01, "gate_threshold": -0.05, "gate": None}]
    found = summary({"gate_z": 1.0, "min_improvement": 0.0}, rows)
    assert [c["called"] for c in found["copies"]] == [True, True, False]
    assert found["copies"][0]["upper"] == pytest.approx(0.05)
    assert (found["n"], found["false_calls"], found["rejects"], found["false_improvements"]) == (3, 2, 1, 1)
    assert found["rate"] == pytest.approx(2 / 3)
    assert (found["ci_low"], found["ci_high"]) == pytest.approx(clopper_pearson(2, 3))
    assert found["design_one_side"] == pytest.approx(0.158655, abs=1e-6)
