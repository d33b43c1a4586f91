"""The attempt the store gives back is a frozen AttemptRow holding every column of `attempts` (a migration that
adds a column adds a field); the round reads it by attribute, and the store's reads return it."""

from __future__ import annotations

import dataclasses

import pytest

from mutator.store.attempts import attempt_at, insert_attempt, of_run, scored, undecided, update_attempt
from mutator.store.db import connect
from mutator.store.rows import AttemptRow
from mutator.store.runs import RunRow, insert_run
from strategies.verdicts import AttemptStatus, Verdict


@pytest.fixture
def db(tmp_path):
    db = connect(tmp_path / "mutator.db")
    yield db
    db.close()


def test_the_record_has_a_field_for_every_column_of_the_table(db):
    fields = [f.name for f in dataclasses.fields(AttemptRow)]
    assert fields == list(db["attempts"].columns_dict)


def test_the_store_reads_attempts_as_frozen_records(db):
    insert_run(db, RunRow(id="r1", kind="evolve", strategy="greedy", strategy_opts="{}", seed_hash="g0",
                          skill_name="csv-clean", suite="t", suite_hash="h1", val="v", val_hash="h2", model="m",
                          agent="fake@1", replicates=1, rounds_target=1, rng_seed=0, w_cost=0.1, w_steps=0.05,
                          min_improvement=0.0, gate_z=1.0, config="{}"))
    assert attempt_at(db, "r1", 1, 0) is None
    first = insert_attempt(db, run_id="r1", round=1, sibling=0, status=AttemptStatus.PENDING, genome_hash="g1")
    insert_attempt(db, run_id="r1", round=0, sibling=0, status=AttemptStatus.SEED, verdict=Verdict.SEED,
                   genome_hash="g0")
    update_attempt(db, first, {"status": AttemptStatus.FAILED, "failures": '{"timeout": 2}'})
    row = attempt_at(db, "r1", 1, 0)
    assert (row.id, row.genome_hash, row.status, row.failures) == (first, "g1", "failed", '{"timeout": 2}')
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.status = "scored"
    assert [a.round for a in of_run(db, "r1")] == [0, 1]
    assert [a.genome_hash for a in scored(db, "r1")] == ["g0"]   # a FAILED attempt is not scored
    assert [a.id for a in undecided(db, "r1", 0)] == [first]
