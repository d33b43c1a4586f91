"""Sequential val's design and decisions on constructed deltas: the last look's z, early losses and wins, and a
null that runs every wave (mutator/scoring/sequential.py, mutator/round/waves.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special, stats

from mutator.round.evaluations import Outcome
from mutator.round.waves import Gating, looked_at, sequential_val
from mutator.scoring.gate import compare, gate_t
from mutator.scoring.score import CellFigures, Normalisers, Weights, per_task
from mutator.scoring.sequential import (
    Design,
    SequentialError,
    early_decision,
    expected_looks,
    last_look_z,
    screen_tasks,
    wave,
)

NORM = Normalisers(seed_cost=0.0, seed_steps=0.0)
TASKS = [f"t{i}" for i in range(8)]
VAL = SimpleNamespace(name="val", tasks=[SimpleNamespace(id=t) for t in TASKS])


def test_one_look_or_no_early_spend_is_the_fixed_gate():
    assert last_look_z(1, 1.0, 2.0) == 1.0
    assert last_look_z(4, 1.0, 9.0) == pytest.approx(1.0, abs=1e-4)   # early looks that never fire spend nothing
    assert last_look_z(4, 0.0, 2.0) == 0.0                             # the raw gate has no looks to adjust


def test_the_last_look_pays_for_the_early_ones():
    z = last_look_z(4, 1.0, 2.0)
    assert z == pytest.approx(1.058561, abs=1e-6)
    assert last_look_z(2, 1.0, 2.0) < z < last_look_z(8, 1.0, 2.0)
    # the overall false-reject of the design, by simulation of the cumulative looks: 1 − Φ(1) = 15.87%
    rng = np.random.default_rng(3)
    walks = np.cumsum(rng.standard_normal((200_000, 4)), axis=1) / np.sqrt(np.arange(1, 5))
    stops = np.abs(walks[:, :3]) > 2.0                   # the first early look past ±2 decides: loss or win
    first = stops.argmax(axis=1)
    early_loss = stops.any(axis=1) & (walks[np.arange(len(walks)), first] < -2.0)
    rejected = early_loss | (~stops.any(axis=1) & (walks[:, 3] < -z))
    design = float(special.ndtr(-1.0))
    assert abs(rejected.mean() - design) < 3 * math.sqrt(design * (1 - design) / 200_000)


def mvn_false_reject(looks: int, early_z: float, last_z: float) -> float:
    """P(reject | null) of the design, from scipy's multivariate normal CDF (Genz), independent of the
    recursive integration: Σ_k P(|Z_j| < early_z for j < k, Z_k < −early_z) + P(all early |Z_j| < early_z,
    Z_K < −last_z), with Corr(Z_i, Z_j) = √(i/j) for i ≤ j."""
    k = np.arange(1, looks + 1)
    corr = np.sqrt(np.minimum.outer(k, k) / np.maximum.outer(k, k))
    total = 0.0
    for look in range(1, looks + 1):
        z = last_z if look == looks else early_z
        if look == 1:
            total += float(special.ndtr(-z))
            continue
        mvn = stats.multivariate_normal(np.zeros(look), corr[:look, :look], abseps=1e-8, releps=1e-8,
                                        maxpts=100_000 * look, seed=7)
        lower = np.r_[np.full(look - 1, -early_z), -np.inf]
        upper = np.r_[np.full(look - 1, early_z), -z]
        total += float(mvn.cdf(upper, lower_limit=lower))
    return total


@pytest.mark.parametrize("looks", [2, 3, 4])
def test_the_last_z_gives_the_design_false_reject_to_six_decimals(looks):
    # early wins stop (keep) too, so they enter: P(any look rejects | null) = 1 − Φ(gateZ) = 0.158655...
    z = last_look_z(looks, 1.0, 2.0)
    assert mvn_false_reject(looks, 2.0, z) == pytest.approx(float(special.ndtr(-1.0)), abs=1e-6)


def test_expected_looks_matches_the_walk_it_describes():
    # 4 waves, early looks at |Z| > 2, a change 3 SE worse: simulated stops agree with the integration
    rng = np.random.default_rng(5)
    walks = np.cumsum(rng.standard_normal((200_000, 4)) - 3.0 / 2.0, axis=1) / np.sqrt(np.arange(1, 5))
    stopped = np.abs(walks[:, :3]) > 2.0
    first = np.where(stopped.any(axis=1), stopped.argmax(axis=1) + 1, 4)
    assert expected_looks(4, 2.0, -3.0) == pytest.approx(first.mean(), abs=0.01)
    assert expected_looks(4, 9.0) == pytest.approx(4.0, abs=1e-9)


def test_early_looks_that_spend_the_whole_rate_are_refused_naming_the_key():
    with pytest.raises(SequentialError, match="sequential.earlyZ"):
        last_look_z(8, 1.0, 0.3)


def test_early_decision_is_strict_on_a_win_and_follows_the_gate_on_a_loss():
    assert early_decision(keep=False, delta=-0.2, t=2.0, se=0.05, min_improvement=0.0) == "loss"
    assert early_decision(keep=True, delta=0.1 + 1e-15, t=2.0, se=0.05, min_improvement=0.0) is None  # on the mirror
    assert early_decision(keep=True, delta=0.11, t=2.0, se=0.05, min_improvement=0.0) == "win"
    assert early_decision(keep=True, delta=0.05, t=2.0, se=0.05, min_improvement=0.0) is None
    assert early_decision(keep=False, delta=-0.2, t=0.0, se=0.05, min_improvement=0.0) is None   # raw gate: no look


def evaluator(candidate: dict[str, list[float]], incumbent: dict[str, list[float]], calls: list):
    def evaluate(side, _suite, _label, only):
        values = candidate if side == "cand" else incumbent
        found = tuple(CellFigures(t, r, v, 0.0, 0.0, True) for t, vs in values.items() for r, v in enumerate(vs)
                      if only is None or (t, r) in only)
        calls.append((side, len(found)))
        return Outcome(0, found, 0, 0.0, complete=True, n_cells=len(found))
    return evaluate


def run(candidate, incumbent, *, method="t", early_z=2.0, prior=()):
    gating = Gating(Weights(0.0, 0.0), 0.0, 1.0, method, Design(4, 1.0, early_z))
    calls: list = []
    outcome, gate, looks = sequential_val(gating, evaluator(candidate, incumbent, calls), val=VAL, genome="cand",
                                          incumbent="inc", norm=NORM, prior=list(prior), label="test",
                                          healthy=lambda _o: True)
    return outcome, gate, looks, calls


INCUMBENT = {t: [0.5, 0.6, 0.4, 0.5] for t in TASKS}


def test_a_decisive_loss_stops_after_the_first_wave():
    spread = [0.01, -0.02, 0.015, 0.0, -0.01, 0.02, -0.015, 0.005]
    candidate = {t: [0.2 + spread[i]] * 4 for i, t in enumerate(TASKS)}
    outcome, gate, looks, calls = run(candidate, INCUMBENT)
    assert [look["decision"] for look in looks] == ["loss"] and len(outcome.cells) == 8 and not gate.keep
    # the stored figures re-derive: the same gate from the first replicate's cells, at z = earlyZ, pooling nothing
    mine = per_task([c for c in outcome.cells], Weights(0.0, 0.0), NORM)
    theirs = per_task([CellFigures(t, 0, 0.5, 0.0, 0.0, True) for t in TASKS], Weights(0.0, 0.0), NORM)
    again = compare(mine, theirs, prior=[], min_improvement=0.0, gate_z=2.0, method="t")
    assert looks[0]["gate"]["threshold"] == pytest.approx(again.threshold) and again.t == gate_t(2.0, 7)
    assert looks[0]["z"] == 2.0 and looks[0]["replicates"] == 1 and looks[0]["cells"] == 8


def test_a_decisive_win_stops_early_and_is_kept():
    spread = [0.01, -0.02, 0.015, 0.0, -0.01, 0.02, -0.015, 0.005]
    candidate = {t: [INCUMBENT[t][r] + 0.25 + spread[i] for r in range(4)] for i, t in enumerate(TASKS)}
    outcome, gate, looks, _ = run(candidate, INCUMBENT)
    assert [look["decision"] for look in looks] == ["win"] and gate.keep and len(outcome.cells) == 8
    assert looked_at(looks, VAL) == wave(TASKS, 1)


def test_a_null_change_runs_every_wave_and_the_last_look_uses_the_adjusted_z():
    noise = np.random.default_rng(5).normal(0, 0.02, (8, 4))
    candidate = {t: [INCUMBENT[t][r] + noise[i, r] for r in range(4)] for i, t in enumerate(TASKS)}
    outcome, gate, looks, calls = run(candidate, INCUMBENT)
    assert [look["decision"] for look in looks] == [None, None, None, None]
    assert [look["replicates"] for look in looks] == [1, 2, 3, 4] and len(outcome.cells) == 32
    assert looks[-1]["z"] == pytest.approx(last_look_z(4, 1.0, 2.0)) and gate.gate_z == looks[-1]["z"]
    assert looked_at(looks, VAL) is None                       # the verdict rests on every cell
    assert [n for side, n in calls if side == "cand"] == [8, 16, 24, 32]


def test_the_screen_draws_its_tasks_from_the_run_seed_in_suite_order():
    first = screen_tasks(TASKS, 3, "0:run-x:1:screen")
    assert first == screen_tasks(TASKS, 3, "0:run-x:1:screen") and len(first) == 3
    assert first == [t for t in TASKS if t in first]
    assert screen_tasks(TASKS, 0, "s") == [] and screen_tasks(TASKS, 99, "s") == TASKS


def test_run_ids_hash_the_last_z_they_were_made_with():
    # the gate uses the exact z; a run id keeps hashing the old grid solver's figure (its bits, as 8cec38c
    # stored it), so every stored sequential run and A/A run keeps its id and resumes with 0 cells
    design = Design(4, 1.0, 2.0)
    assert design.identity() == {"looks": 4, "gate_z": 1.0, "early_z": 2.0, "last_z": 1.0586726980153496,
                                 "sequential": True}
    assert design.z(4) == pytest.approx(1.058561, abs=1e-6) and design.to_json()["last_z"] == design.z(4)
    assert Design(1, 1.0, 2.0).identity() == Design(1, 1.0, 2.0).to_json()
