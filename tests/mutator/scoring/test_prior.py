"""The gate's pooled noise kept from round to round (mutator/scoring/prior.py): equal to the bit to pooling the
run's comparisons afresh, and a round's new attempt added without a pass over every earlier one."""

from __future__ import annotations

import json
import random
from pathlib import Path

from mutator.round.session import Session
from mutator.scoring.gate import compare, pooled, pooling_sums
from mutator.scoring.prior import Pool, Prior
from mutator.scoring.score import Comparison, TaskFigures
from tests.mutator.store.test_figures import RUN, store


def session_of(db) -> Session:
    return Session(settings=None, db=db, genomes=None, weights=None, skill_name="s", contract=None, evaluator=None,
                   progress=None, run_id=RUN)


def afresh(db, exclude: int = -1) -> list[Comparison]:
    """What the pooled noise is, read from the store by a new session."""
    return list(session_of(db).prior_comparisons(exclude=exclude, suite_hash="val-hash"))


def test_a_pool_built_one_comparison_at_a_time_sums_to_the_same_floats() -> None:
    rng = random.Random(3)
    comparisons = {i: Comparison(rng.choice([4, 8, 12]), rng.random() / 7) for i in range(1, 300)}
    members = {i: ((c.n, str(c.s_r)), c) for i, c in comparisons.items()}
    member = members.get
    pool = Pool.build([], member)
    for i in comparisons:
        assert pool.update([i], member)
    everything = list(comparisons.values())
    assert pool.prior(-1) == tuple(everything) and pool.prior(-1).sums == pooling_sums(everything)
    assert pooled(pool.prior(-1)) == pooled(everything)             # the briefing's figure, from the carried sums
    assert pool.prior(-1).sums != pooling_sums(everything[::-1])    # the order matters to the floats: it is kept
    assert pool.prior(5) == tuple(everything[:4] + everything[5:]) and pool.prior(5).sums == pooling_sums(
        everything[:4] + everything[5:])
    # a gate a round's sums cannot take in id order: rebuild
    assert not pool.update([7], {**members, 7: ((1, "rewritten"), Comparison(9, 0.5))}.get)
    assert not Pool.build([5], member).update([3], member)      # one before the last
    # the gate decides the same from a Prior as from a plain list of the same comparisons
    rows, other = ({f"t{i}": TaskFigures(f"t{i}", (e := 0.5 + rng.random() / 4), 0.0, 0.0, e, 2) for i in range(8)}
                   for _ in range(2))
    for method in ("signflip", "t"):
        assert compare(rows, other, prior=pool.prior(-1), min_improvement=0.0, gate_z=1.0, method=method) == \
            compare(rows, other, prior=list(everything), min_improvement=0.0, gate_z=1.0, method=method)
    assert pooled([*everything, Comparison(8, 0.25)]) == (
        (pool.prior(-1).sums[0] + 7 * 0.25) / (pool.prior(-1).sums[1] + 7), pool.prior(-1).sums[1] + 7)


def test_a_sessions_pooled_noise_follows_the_store_and_adds_a_rounds_attempt_in_place(tmp_path: Path) -> None:
    db = store(tmp_path, 60)
    session = session_of(db)
    first = session.prior_comparisons(exclude=-1, suite_hash="val-hash")
    assert isinstance(first, Prior) and list(first) == afresh(db) and len(first) == 60
    pool = session.memo.kept["pool val-hash"].value
    for step in range(5):   # a round: its attempt, gated; an earlier attempt's verdict changed (not its gate)
        new = db["attempts"].insert({"run_id": RUN, "round": 100 + step, "status": "done", "verdict": "REJECT",
                                     "gate_n": 8, "gate": json.dumps({"s_r": 0.3 + step / 97}),
                                     "val_evaluation_id": 1}).last_pk
        db["attempts"].update(3 + step, {"verdict": "REJECT"})
        got = session.prior_comparisons(exclude=new, suite_hash="val-hash")
        assert list(got) == afresh(db, exclude=new) and got.sums == pooling_sums(list(got))
        got = session.prior_comparisons(exclude=-1, suite_hash="val-hash")
        assert list(got) == afresh(db) and got.sums == pooling_sums(afresh(db)) and len(got) == 61 + step
    assert session.memo.kept["pool val-hash"].value is pool                     # each round's attempt added in place
    db["attempts"].update(2, {"gate": json.dumps({"s_r": 0.9})})     # an earlier gate rewritten: built again
    got = session.prior_comparisons(exclude=-1, suite_hash="val-hash")
    assert session.memo.kept["pool val-hash"].value is not pool and list(got) == afresh(db) and got.sums == pooling_sums(afresh(db))
    db["attempts"].update(4, {"gate": json.dumps({"s_r": 0.2, "early_look": True})})   # an early look pools nothing
    assert list(session.prior_comparisons(exclude=-1, suite_hash="val-hash")) == afresh(db) and len(afresh(db)) == 64


def test_a_sessions_comparisons_carry_each_stored_verdict_for_the_ebc_chain(tmp_path: Path) -> None:
    db = store(tmp_path, 6)
    for i in range(1, 7):   # the gate JSON as the loop stores it: its Δ and its (keep rule's) verdict
        db["attempts"].update(i, {"gate": json.dumps({"s_r": 0.1, "delta": i / 100, "keep": i % 3 == 0})})
    got = afresh(db)
    assert [(c.delta, c.keep) for c in got] == [(i / 100, i % 3 == 0) for i in range(1, 7)]
    db["attempts"].update(1, {"gate": json.dumps({"s_r": 0.1})})      # a gate stored before: no verdict read
    assert afresh(db)[0].keep is None and afresh(db)[0].delta is None
