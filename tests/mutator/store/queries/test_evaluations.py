"""The evaluation reads: by id (one, several, none), the newest of a genome, a one-model evaluation's
members."""

from __future__ import annotations

from mutator.store.queries import attempts, evaluations


def test_evaluations_by_id(reader, run_id) -> None:
    seed = attempts.seed_evaluations(reader, run_id)
    val, train = seed["val_evaluation_id"], seed["train_evaluation_id"]
    found = evaluations.by_ids(reader, [val, train, None])
    assert sorted(found) == sorted([val, train]) and found[val] == evaluations.by_id(reader, val)
    assert evaluations.by_ids(reader, []) == {}
    assert evaluations.by_id(reader, 10 ** 9) is None
    assert set(evaluations.figures(reader, val)) == {"eval", "cost", "steps"}


def test_the_newest_evaluation_of_the_seed_is_done(reader, run_id) -> None:
    light = attempts.light_rows(reader, run_id)
    seed_ev = evaluations.by_id(reader, attempts.seed_evaluations(reader, run_id)["val_evaluation_id"])
    newest = evaluations.newest(reader, light[0]["genome_hash"], seed_ev["suite"], seed_ev["replicates"])
    assert newest["status"] == "done" and newest["id"] >= seed_ev["id"]
    shape = (light[0]["genome_hash"], seed_ev["suite"], seed_ev["replicates"])
    assert evaluations.unfinished(reader, *shape) is None
    assert evaluations.members(reader, seed_ev["id"]) == {} and evaluations.members(reader, None) == {}
