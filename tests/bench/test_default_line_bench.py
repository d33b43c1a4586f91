"""bench/default_line.py: the default's choice rule on constructed results (exact picks, ties to the cheaper)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def rule():
    spec = importlib.util.spec_from_file_location("default_line_bench", ROOT / "bench" / "default_line.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def result(name, lines):
    return {"landscape": name, "default": "greedy:seq+screen", "cell_sd": 0.2, "cell_sd_rms": 0.3, "seeds": [0, 1],
            "lines": {n: {"true_test": t, "cells_per_decision": c, "harmful_kept_share": 0.1} for n, (t, c) in lines.items()},
            "vs_default": {n: {"diff": 0.0, "p_holm": 1.0} for n in lines if n != "greedy:seq+screen"}}


def test_the_highest_mean_over_landscapes_wins_and_gepa_is_not_a_candidate(rule):
    a = result("quiet", {"greedy:seq+screen": (0.50, 20), "greedy:seq:eb": (0.49, 15), "gepa": (0.9, 10)})
    b = result("tau", {"greedy:seq+screen": (0.30, 20), "greedy:seq:eb": (0.34, 15), "gepa": (0.9, 10)})
    chosen, mean = rule.choose([a, b])
    assert chosen == "greedy:seq:eb" and mean["greedy:seq:eb"] == pytest.approx(0.415)
    assert "gepa" not in mean


def test_a_tie_goes_to_the_cheaper_then_to_todays_default(rule):
    a = result("quiet", {"greedy:seq+screen": (0.400, 20), "greedy:seq:eb": (0.401, 15), "greedy:fixed:eb": (0.4, 20)})
    assert rule.choose([a])[0] == "greedy:seq:eb"                          # within 0.002: the cheaper
    b = result("quiet", {"greedy:seq+screen": (0.400, 20), "greedy:fixed:eb": (0.401, 20)})
    assert rule.choose([b])[0] == "greedy:seq+screen"                      # as cheap: today's default
    assert "| greedy:seq+screen | 0.4000 (default) · 10% | 0.4000 |" in rule.side_by_side([b])
