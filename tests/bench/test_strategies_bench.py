"""bench/strategies.py's summary figures: rollouts-to-90% with censored seeds, the paired significance line, and
one line's search staying inside its rollout budget."""

from __future__ import annotations

import importlib.util
import random
import sys

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("strategies_bench", ROOT / "bench" / "strategies.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def test_censored_seeds_count_in_the_median(bench):
    assert bench.censored_median([100, 200, None], 640) == "200"
    assert bench.censored_median([100, None, None], 640) == "> 640"     # most never got there
    assert bench.censored_median([100, 300, None, None], 640) == "> 640"
    assert bench.censored_median([100, 300, 500, None], 640) == "400"


def test_significance_is_paired_over_seeds_and_holm_adjusted(bench):
    out = lambda v: bench.Outcome([(0, v)], v, v, 0, 0.0)  # noqa: E731
    rows = {"good": [out(0.5 + i / 100) for i in range(12)], "bad": [out(0.1 + i / 100) for i in range(12)],
            "same": [out(0.1 + i / 100) for i in range(12)]}
    found = bench.significant(rows, lambda o: o.test_true)
    assert found[0].startswith("good > ") and len(found) == 2        # good beats both; bad vs same all tie
    assert bench.wilcoxon_p([0.1, 0.2], [0.1, 0.2]) == 1.0


def test_a_search_never_passes_its_budget(bench):
    land = bench.Landscape(random.Random(0))
    for line in (bench.LINES[0], bench.LINES[-1]):
        outcome = bench.run_search(land, line, budget=120, replicates=1, seed=0)
        assert outcome.rollouts <= 120
