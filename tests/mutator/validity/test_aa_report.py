"""The A/A report on constructed evaluations: each copy gated against its own seed re-evaluation, the false-reject
and "beat +t·SE" rates with exact binomial 95% CIs beside the design, in the CLI summary and the dashboard's view."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats

from mutator.scoring.gate import compare
from mutator.scoring.score import CellFigures, Comparison, Normalisers, Weights, per_task
from mutator.server import aa_view
from mutator.store.db import connect, dumps
from mutator.validity import aa

W = Weights(0.0, 0.0)
TASKS = [f"t{i}" for i in range(4)]
# per copy: (seed re-evaluation scores, copy scores) over 4 tasks; the seed run is the normaliser only
COPIES = [
    ([0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]),     # tie: KEEP
    ([0.9, 0.8, 0.9, 0.7], [0.2, 0.3, 0.1, 0.2]),     # a clear (false) loss: REJECT
    ([0.2, 0.3, 0.1, 0.2], [0.9, 0.8, 0.9, 0.7]),     # a clear (false) gain: beats +t·SE
    ([0.5, 0.6, 0.5, 0.4], [0.6, 0.5, 0.4, 0.5]),     # noise: KEEP
    ([0.8, 0.9, 0.8, 0.9], [0.1, 0.2, 0.1, 0.2]),     # REJECT
]


def _evaluation(db, scores: list[float], salt: str) -> int:
    eid = db["evaluations"].insert({"key": f"k-{salt}", "genome_hash": "s" * 64, "suite": "v", "status": "done",
                                    "contract": dumps({"salt": salt})}).last_pk
    for task, score in zip(TASKS, scores, strict=True):
        db["cells"].insert({"evaluation_id": eid, "task_id": task, "replicate": 0, "status": "ok", "score": score,
                            "cost_usd": 0.0, "steps": 0})
    return eid


@pytest.fixture
def store(tmp_path: Path):
    db = connect(tmp_path / "mutator.db")
    db["runs"].insert({"id": "aa-constructed", "kind": "aa", "status": "finished", "strategy": "aa",
                       "seed_hash": "s" * 64, "val": "v", "replicates": 1, "gate_z": 1.0, "min_improvement": 0.0,
                       "w_cost": 0.0, "w_steps": 0.0, "cost_usd": 0.0, "agent": "fake", "rounds_done": len(COPIES)})
    seed = _evaluation(db, [0.5] * 4, "")
    db["attempts"].insert({"run_id": "aa-constructed", "round": 0, "status": "seed", "verdict": "SEED",
                           "genome_hash": "s" * 64, "val_evaluation_id": seed})
    prior: list[Comparison] = []
    for copy, (base_scores, copy_scores) in enumerate(COPIES, start=1):
        base = _evaluation(db, base_scores, aa.seed_salt(copy))
        mine = _evaluation(db, copy_scores, aa.salt(copy))
        figures = [per_task([CellFigures(t, 0, s, 0.0, 0, True) for t, s in zip(TASKS, scores, strict=True)], W,
                            Normalisers(0.0, 0.0)) for scores in (copy_scores, base_scores)]
        gate = compare(figures[0], figures[1], prior=prior, min_improvement=0.0, gate_z=1.0)
        prior.append(gate.comparison)
        db["attempts"].insert({
            "run_id": "aa-constructed", "round": copy, "status": "kept" if gate.keep else "rejected",
            "verdict": "KEEP" if gate.keep else "REJECT", "genome_hash": "s" * 64, "val_evaluation_id": mine,
            "delta": gate.delta, "gate_threshold": gate.threshold, "gate_se": gate.se, "gate_s": gate.s,
            "gate_df": gate.df, "gate_t": gate.t, "gate_n": gate.n,
            "gate": dumps({**gate.to_json(), "aa": {"salt": aa.salt(copy), "seed_salt": aa.seed_salt(copy),
                                                    "seed_evaluation_id": base,
                                                    "false_improvement": gate.delta > gate.t * gate.se}})})
    return db


def test_rates_carry_exact_binomial_cis_and_the_design(store):
    f = aa.figures(store, "aa-constructed")
    assert (f["n"], f["rejects"], f["false_improvements"]) == (5, 2, 1)
    assert f["independent"] is True
    for rate, k in ((f["reject_rate"], 2), (f["improvement_rate"], 1)):
        ci = stats.binomtest(k, 5).proportion_ci(method="exact")
        assert (rate.k, rate.n, rate.rate) == (k, 5, k / 5)
        assert (rate.ci_low, rate.ci_high) == pytest.approx((ci.low, ci.high))
    text = aa.summary(store, "aa-constructed")
    assert "false REJECT     2/5   =  40.0%  95% CI [5.3%, 85.3%] (exact binomial)   design 15.9%" in text
    assert "beat +t·SE       1/5   =  20.0%  95% CI [0.5%, 71.6%] (exact binomial)   design 15.9%" in text
    assert "its own fresh re-evaluation of the seed" in text


def test_the_dashboard_view_shows_the_same_rates(store):
    rows = [dict(r) for r in store.query("select id, round, verdict, delta, gate_threshold, gate_se, gate_t, gate "
                                         "from attempts where run_id = 'aa-constructed' order by round")]
    view = aa_view.summary({"gate_z": 1.0, "min_improvement": 0.0}, rows)
    f = aa.figures(store, "aa-constructed")
    assert view["reject_rate"] == f["reject_rate"].to_json()
    assert view["improvement_rate"] == f["improvement_rate"].to_json()
    assert view["design_one_side"] == pytest.approx(0.158655, abs=1e-6)
    assert view["independent"] is True and view["false_calls"] == 3


def test_an_older_aa_run_sharing_one_seed_evaluation_still_reads(store):
    for row in list(store.query("select id, gate from attempts where round > 0")):
        store["attempts"].update(row["id"], {"gate": row["gate"].replace('"seed_evaluation_id"', '"old_key"')})
    f = aa.figures(store, "aa-constructed")
    assert f["independent"] is False and f["n"] == 5
    assert "share one seed evaluation" in aa.summary(store, "aa-constructed")
