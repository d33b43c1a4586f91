"""bench/threshold_oracle.py: the threshold oracle keeps iff the TRUE val change passes its threshold, and the
threshold is the best of the grid on the tuning seeds by mean TRUE test composite, ties to the smaller."""

from __future__ import annotations

import statistics

import pytest

from bench import calibrated, threshold_oracle
from bench.search import Line, Search, run_search


class Probe(Search):
    """A search that logs (TRUE val change, keep) at each oracle verdict."""

    def gate(self, cand, base, prior):
        gate, keep = super().gate(cand, base, prior)
        norm = self.norms["val"]
        self.log.append((self.land.expected(self.child, "val", norm)
                         - self.land.expected(self.incumbent, "val", norm), keep))
        return gate, keep


@pytest.mark.parametrize("tau", [0.0, 0.02])
def test_the_oracle_keeps_iff_the_true_val_change_passes_its_threshold(tau):
    log = []
    for seed in range(3):
        probe = Probe(calibrated.make("skillsbench", seed), threshold_oracle.oracle_line(tau), 320, 2, seed)
        probe.log = []
        probe.run()
        log += probe.log
    assert all(keep == (change > tau + 1e-12) for change, keep in log)
    assert any(keep for _, keep in log) and any(not keep for _, keep in log)
    if tau:   # the threshold bites: some true rises at or below it are rejected
        assert any(0 < change <= tau and not keep for change, keep in log)


def test_tuning_picks_the_grids_best_mean_true_test_ties_to_the_smaller():
    seeds, budget = range(3), 160
    best, means = threshold_oracle.tune("skillsbench", budget, 2, seeds=seeds, grid=(0.0, 0.01, 5.0, 9.0))
    # a threshold no change reaches keeps nothing: the seed's own test composite, equal for 5 and 9
    seed_test = statistics.mean(
        (land := calibrated.make("skillsbench", s)).expected(land.seed_genome, "test", land.norm("test"))
        for s in seeds)
    assert means[5.0] == means[9.0] == pytest.approx(seed_test)
    assert means[0.0] == statistics.mean(
        run_search(calibrated.make("skillsbench", s), Line("o", "greedy", {}, keep="oracle"), budget, 2,
                   s).test_true for s in seeds)
    top = max(means.values())
    assert best == min(t for t, m in means.items() if m == top)
    tie, _ = threshold_oracle.tune("skillsbench", budget, 2, seeds=seeds, grid=(9.0, 5.0))
    assert tie == 5.0


def test_the_threshold_oracle_line_runs_at_its_tuned_threshold(monkeypatch):
    calls = []

    def tuned(landscape, budget, replicates):
        calls.append((landscape, budget, replicates))
        return 0.0125, {}
    monkeypatch.setattr(threshold_oracle, "tuned", tuned)
    line = Line("threshold-oracle", "greedy", {}, keep="threshold-oracle")
    search = Search(calibrated.make("skillsbench-graded", 1), line, 200, 2, 1)
    assert search.threshold == 0.0125 and calls == [("skillsbench-graded", 200, 2)]
    assert Search(calibrated.make("quiet", 1), line, 200, 2, 1).threshold == 0.0125
    assert calls[-1] == ("quiet", 200, 2)
