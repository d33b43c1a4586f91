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
from mutator.round.summary import count_val_queries
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
        count_val_queries(session.figures().rows().values(), 10**6, print)

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
