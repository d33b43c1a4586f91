"""A session's figures of its run's attempts (mutator/store/figures.py): re-read only where they changed, equal at
every look to a fresh read of the store whoever wrote it, so a round's reads do not grow with the attempts before it."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from mutator.briefing.evidence import Evidence, render_ledger
from mutator.round.session import Session
from mutator.store.db import connect
from mutator.store.figures import Mark, RunFigures, watch

RUN = "run-1"


def store(tmp_path: Path, attempts: int):
    """A run of `attempts` decided attempts, each with a val evaluation (its gate stored), every third kept and
    evaluated on train."""
    db = connect(tmp_path / "mutator.db")
    db["runs"].insert({"id": RUN, "status": "running"})
    for i in range(1, attempts + 1):
        val = db["evaluations"].insert({"key": f"v{i}", "status": "done", "suite_hash": "val-hash",
                                        "finished_at": 1.0}).last_pk
        train = db["evaluations"].insert({"key": f"t{i}", "status": "done", "suite_hash": "train-hash",
                                          "finished_at": 1.0}).last_pk if i % 3 == 0 else None
        db["attempts"].insert({"run_id": RUN, "round": i, "sibling": 0, "status": "done",
                               "verdict": "KEEP" if train else "REJECT", "parent_hash": f"g{3 * ((i - 1) // 3)}",
                               "genome_hash": f"g{i}", "summary": f"change {i}", "reasoning": "why " * 50,
                               "delta": 0.01 * i, "val_evaluation_id": val, "train_evaluation_id": train,
                               "gate_n": 8, "gate": json.dumps({"s_r": 0.1 + i / 1000}),
                               "confirm": json.dumps({}) if i % 5 == 0 else None})
    return db


def fresh(db) -> dict:
    return {k: f[:-1] for k, f in RunFigures(db, RUN).rows().items()}


def test_the_figures_equal_a_fresh_read_after_own_and_other_connections_writes(tmp_path: Path) -> None:
    db = store(tmp_path, 12)
    figures, other = RunFigures(db, RUN), sqlite3.connect(tmp_path / "mutator.db")
    mark = Mark()
    assert watch(db).changed("attempts", mark) is None                      # the first look: read everything
    rng = random.Random(7)
    for step in range(60):
        kind = rng.choice(["own update", "own insert", "own delete", "other update", "heartbeat"])
        ids = list(fresh(db))
        if kind == "own update":
            db["attempts"].update(rng.choice(ids), {"verdict": rng.choice(["KEEP", "REJECT"]), "delta": rng.random()})
        elif kind == "own insert":
            db["attempts"].insert({"run_id": RUN, "round": 100 + step, "status": "done", "verdict": "REJECT"})
        elif kind == "own delete":
            db["attempts"].delete(rng.choice(ids))
        elif kind == "other update":
            other.execute("update attempts set delta = ? where id = ?", [rng.random(), rng.choice(ids)])
            other.commit()
        else:   # the heartbeat's write: another connection, another table
            other.execute("update runs set heartbeat_at = ? where id = ?", [step, RUN])
            other.commit()
        changed = watch(db).changed("attempts", mark)
        assert (changed is None) == (kind == "other update"), kind      # another process's write: read it all
        if kind == "heartbeat":
            assert changed == set()
        assert {k: f[:-1] for k, f in figures.rows().items()} == fresh(db), (step, kind)
        assert list(figures.rows()) == sorted(fresh(db)), (step, kind)   # in id order: a genome's last train is its newest


def test_a_look_inside_a_transaction_makes_the_next_look_read_everything(tmp_path: Path) -> None:
    db = store(tmp_path, 3)
    figures = RunFigures(db, RUN)
    figures.rows()
    db.conn.execute("update attempts set verdict = 'REJECT' where round = 3")   # opens a transaction
    assert figures.rows()[3].verdict == "REJECT"
    db.conn.rollback()                                                         # undone: no trigger says so
    assert figures.rows()[3].verdict == "KEEP"


@pytest.mark.parametrize("attempts", [40, 400])
def test_a_rounds_reads_of_the_store_do_not_grow_with_the_attempts_before_it(tmp_path: Path, attempts: int) -> None:
    """What a round asks of every earlier attempt — its figures, the ledger, the gate's pooled noise, the val-query
    count — costs the same SQLite work at 400 attempts as at 40, once the session has looked once."""
    db = store(tmp_path, attempts)
    session = Session(settings=None, db=db, genomes=None, weights=None, skill_name="s", contract=None,
                      evaluator=None, progress=None, run_id=RUN)
    evidence = Evidence(db=db, genomes=None, store=None, run_id=RUN, train=None, solve_dir=None,
                        train_composite=lambda evaluation_id: evaluation_id / 1000, figures=session.figures())

    def a_round() -> None:
        train = evidence.train_evaluations()
        evidence.ledger(train)
        session.prior_comparisons(exclude=-1, suite_hash="val-hash")
        session.val_queries()
        session.last_pooled(before=10**6)

    a_round()
    steps = [0]
    db.conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 100)
    db["attempts"].insert({"run_id": RUN, "round": attempts + 1, "status": "done", "verdict": "REJECT",
                           "gate_n": 8, "gate": json.dumps({"s_r": 0.2})})             # this round's attempt
    db["attempts"].update(attempts, {"verdict": "REJECT"})                                 # and an earlier one changed
    a_round()
    db.conn.set_progress_handler(None, 0)
    train = evidence.train_evaluations()
    assert evidence.ledger(train) == render_ledger(evidence.ledger_rows(train))
    assert len(session.prior_comparisons(exclude=-1, suite_hash="val-hash")) == attempts
    # measured: 26 and 27 hundred SQLite instructions at 40 and at 400 attempts; the code before read every
    # attempt's figures each round: 47 and 284
    assert steps[0] < 60, steps[0]


def test_the_ledger_follows_a_train_evaluation_regraded_by_this_or_another_connection(tmp_path: Path) -> None:
    db = store(tmp_path, 9)
    composites: dict[int, float] = {}
    evidence = Evidence(db=db, genomes=None, store=None, run_id=RUN, train=None, solve_dir=None,
                        train_composite=lambda evaluation_id: composites.get(evaluation_id, 0.5))
    train = evidence.train_evaluations()
    assert evidence.ledger(train) == render_ledger(evidence.ledger_rows(train))
    kept = train["g6"]
    composites[kept] = 0.9                                    # re-graded here: the evaluation's row is rewritten
    db["evaluations"].update(kept, {"finished_at": 2.0})
    assert evidence.ledger(train) == render_ledger(evidence.ledger_rows(train))
    assert "train Δcomposite +0.4000" in evidence.ledger(train)
    composites[kept] = 0.1                                    # and by another process
    other = sqlite3.connect(tmp_path / "mutator.db")
    other.execute("update evaluations set finished_at = 3.0 where id = ?", [kept])
    other.commit()
    assert evidence.ledger(train) == render_ledger(evidence.ledger_rows(train))
    assert "train Δcomposite -0.4000" in evidence.ledger(train)


def a_session(db) -> tuple[Session, Evidence]:
    session = Session(settings=None, db=db, genomes=None, weights=None, skill_name="s", contract=None,
                      evaluator=None, progress=None, run_id=RUN)
    return session, Evidence(db=db, genomes=None, store=None, run_id=RUN, train=None, solve_dir=None,
                             train_composite=lambda evaluation_id: evaluation_id / 1000, figures=session.figures(),
                             known={})


def test_what_a_round_keeps_from_every_attempt_equals_it_made_afresh_after_each_change(tmp_path: Path) -> None:
    """The val-query count, the last pool snapshot, each genome's newest train evaluation and the ledger, kept by
    the session from round to round, equal what a fresh session makes from the store after any change."""
    db = store(tmp_path, 12)
    session, evidence = a_session(db)
    other = sqlite3.connect(tmp_path / "mutator.db")
    rng = random.Random(3)
    for step in range(120):
        ids = list(fresh(db))
        open_ = [i for i, f in fresh(db).items() if f[3] is None]   # undecided: not in the ledger
        kind = rng.choice(["new round", "new round", "decide", "train", "confirm", "pool", "genome", "delete",
                           "regrade", "other", "parent trained", "open genome"])
        if kind == "new round":   # what a round writes: a val evaluation and its decided attempt
            val = db["evaluations"].insert({"key": f"v-{step}", "status": "done", "suite_hash": "val-hash"}).last_pk
            db["attempts"].insert({"run_id": RUN, "round": 100 + step, "sibling": rng.choice([0, 1]), "status": "done",
                                   "verdict": rng.choice(["KEEP", "REJECT", None]), "val_evaluation_id": val,
                                   "parent_hash": f"g{rng.randrange(12)}", "genome_hash": f"n{step}"})
        elif kind == "decide":
            db["attempts"].update(rng.choice(ids), {"verdict": rng.choice(["KEEP", "REJECT", None])})
        elif kind == "train":     # a genome (new or one of the seed's) evaluated on train, or its evaluation gone
            train = db["evaluations"].insert({"key": f"t-{step}", "status": "done", "suite_hash": "train-hash"}).last_pk
            db["attempts"].update(rng.choice(ids), {"train_evaluation_id": rng.choice([train, None])})
        elif kind == "confirm":
            db["attempts"].update(rng.choice(ids), {"confirm": rng.choice([json.dumps({}), None])})
        elif kind == "pool":
            db["attempts"].update(rng.choice(ids), {"pool_snapshot": rng.choice(["[]", None])})
        elif kind == "parent trained":   # an undecided attempt of a genome other attempts' train Δs compare to
            train = db["evaluations"].insert({"key": f"t-{step}", "status": "done", "suite_hash": "train-hash"}).last_pk
            db["attempts"].insert({"run_id": RUN, "round": 300 + step, "status": "done", "train_evaluation_id": train,
                                   "genome_hash": f"g{3 * rng.randrange(4)}"})
        elif kind == "open genome" and open_:
            db["attempts"].update(rng.choice(open_), {"genome_hash": f"g{3 * rng.randrange(4)}"})
        elif kind == "genome":
            db["attempts"].update(rng.choice(ids), {"genome_hash": f"g{rng.randrange(12)}"})
        elif kind == "delete":
            db["attempts"].delete(rng.choice(ids))
        elif kind == "regrade":
            db["evaluations"].update(rng.choice([r["id"] for r in db["evaluations"].rows]), {"finished_at": step})
        else:
            other.execute("update attempts set verdict = 'REJECT', round = ? where id = ?",
                          [rng.choice([500, 1000]) + step, rng.choice(ids)])
            other.commit()
        again, made = a_session(db)
        before = rng.randrange(200)
        assert session.val_queries() == again.val_queries(), (step, kind)
        assert session.last_pooled(before=before) == again.last_pooled(before=before), (step, kind)
        train = evidence.train_evaluations()
        assert train == made.train_evaluations(), (step, kind)
        assert evidence.ledger(train) == made.ledger(train) == render_ledger(made.ledger_rows(train)), (step, kind)


def test_a_rounds_python_work_does_not_grow_with_the_attempts_before_it() -> None:
    """A round that decided one more attempt walks none of the earlier ones: the Python calls a round makes for the
    ledger, the val-query count, the pool snapshot and the train evaluations are as many at 400 attempts as at 40."""
    import sys
    import tempfile

    def calls(attempts: int) -> int:
        with tempfile.TemporaryDirectory() as folder:
            db = store(Path(folder), attempts)
            session, evidence = a_session(db)

            def a_round() -> None:
                evidence.ledger(evidence.train_evaluations())
                session.val_queries()
                session.last_pooled(before=10**6)

            a_round()
            val = db["evaluations"].insert({"key": "v-new", "status": "done", "suite_hash": "val-hash"}).last_pk
            db["attempts"].insert({"run_id": RUN, "round": attempts + 1, "sibling": 0, "status": "done",
                                   "verdict": "REJECT", "val_evaluation_id": val, "parent_hash": "g0",
                                   "genome_hash": "new", "gate_n": 8, "gate": json.dumps({"s_r": 0.2})})
            count = [0]
            sys.setprofile(lambda frame, event, arg: count.__setitem__(0, count[0] + 1))
            try:
                a_round()
            finally:
                sys.setprofile(None)
            train = evidence.train_evaluations()
            assert evidence.ledger(train) == render_ledger(evidence.ledger_rows(train))
            return count[0]

    small, large = calls(40), calls(400)
    # measured: 353 and 353 profile events; the code before walked every attempt each round (675 and 4275)
    assert large <= small + 50, (small, large)
