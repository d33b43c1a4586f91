"""Attempt reads: the newest evaluation of a genome, and only an evaluation column may be asked for."""

from __future__ import annotations

import pytest

from mutator.store.attempt_reads import champion_attempt, latest_evaluation_id, seed_evaluation_ids

from .conftest import RUN


def test_the_newest_train_evaluation_and_the_seeds(db) -> None:
    empty = {"val_evaluation_id": None, "train_evaluation_id": None}
    db["attempts"].insert_all([
        {"run_id": RUN, "round": 0, "sibling": 0, "genome_hash": "s", "status": "seed", **empty},
        {"run_id": RUN, "round": 1, "sibling": 0, "genome_hash": "c", "status": "kept", **empty}])
    db.conn.commit()
    assert latest_evaluation_id(db, RUN, "c", "train_evaluation_id") is None
    assert champion_attempt(db, RUN, "c") == {} and seed_evaluation_ids(db, RUN) == empty
    with pytest.raises(ValueError):
        latest_evaluation_id(db, RUN, "c", "id; drop table runs")
