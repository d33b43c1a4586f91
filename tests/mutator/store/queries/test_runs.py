"""The run reads: the skill list, the run list, one run's row, whether a store holds a run."""

from __future__ import annotations

from mutator.store.queries import runs


def test_one_demo_run_is_listed_by_its_skill(reader, run_id) -> None:
    listed = [(s["skill_name"], s["n_runs"], s["n_running"]) for s in runs.skills(reader)]
    assert listed == [("csv-clean", 1, 0)]
    assert [r["id"] for r in runs.run_list(reader, None)] == [run_id]
    assert [r["id"] for r in runs.run_list(reader, "csv-clean")] == [run_id]
    assert runs.run_list(reader, "no-such-skill") == []
    assert [r["id"] for r in runs.runs_of_skill(reader, "csv-clean")] == [run_id]


def test_a_run_row_is_the_whole_row_and_unknown_ids_are_none(reader, run_id) -> None:
    row = runs.run(reader, run_id)
    assert row["id"] == run_id and "config" in row and row["status"] == "finished"
    assert runs.run(reader, "run-ffffff") is None
    assert runs.holds_run(reader, run_id) and not runs.holds_run(reader, "run-ffffff")


def test_a_finished_store_has_no_running_run(reader) -> None:
    assert runs.running(reader) == [] and runs.running_pids(reader) == []
