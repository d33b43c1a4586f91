"""The attempt reads: the light rows the curve reads, the window of the run page, one attempt, a round's
siblings, the lineage's nodes, and the verdict note computed by SQLite."""

from __future__ import annotations

import pytest

from mutator.store.queries import attempts
from mutator.store.queries.verdicts import has_confirm, verdict_note_column, verdict_note_sql


def test_the_light_rows_cover_every_attempt_in_round_order(reader, run_id) -> None:
    light = attempts.light_rows(reader, run_id)
    assert [(r["round"], r["sibling"]) for r in light] == sorted((r["round"], r["sibling"]) for r in light)
    assert light[0]["verdict"] == "SEED" and set(light[0]) == set(attempts.LIGHT_NAMES)
    with_train = attempts.light_with_train(reader, run_id)
    width = len(attempts.LIGHT_NAMES)
    assert [tuple(row)[:width] for row in with_train] == [tuple(r.values()) for r in light]
    history = attempts.history_rows(reader, run_id)
    assert [tuple(row)[7:] for row in history] == [tuple(r.values()) for r in light]


@pytest.mark.parametrize("low", [-1, 0, 3, 99])
def test_the_window_holds_the_rounds_from_low_on(reader, run_id, low) -> None:
    shown = attempts.window(reader, run_id, low)
    every = attempts.light_rows(reader, run_id)
    assert [a["round"] for a in shown] == [r["round"] for r in every if r["round"] >= low]
    assert all("verdict_note" in a and "confirm" in a for a in shown)


def test_one_attempt_its_round_and_its_seed(reader, run_id) -> None:
    first = attempts.window(reader, run_id, 1)[0]
    whole = attempts.attempt(reader, first["id"])
    assert whole["id"] == first["id"] and "gate" in whole and "verdict_note" in whole
    assert attempts.attempt(reader, 10 ** 9) is None
    assert [s["id"] for s in attempts.siblings(reader, run_id, first["round"])] == [first["id"]]
    seed = attempts.seed_evaluations(reader, run_id)
    assert seed["val_evaluation_id"] and seed["train_evaluation_id"]
    assert attempts.first_of_genome(reader, run_id, whole["parent_hash"])["round"] == 0
    assert attempts.genomes(reader, first["id"]) == {"parent_hash": whole["parent_hash"],
                                                     "genome_hash": whole["genome_hash"]}
    assert attempts.mutator_call(reader, first["id"])["run_id"] == run_id
    assert len(attempts.lineage_nodes(reader, run_id)) == len(attempts.light_rows(reader, run_id))


def test_the_verdict_note_column_is_the_sql_for_this_store(reader) -> None:
    assert has_confirm(reader) is True   # a store written today has attempts.confirm
    expected = f"{verdict_note_sql(confirm=True, alias='a.')} as verdict_note"
    assert verdict_note_column(reader, "a.") == expected
    assert "confirm" not in verdict_note_sql(confirm=False)
