"""A test run's row: `running` when started, `done` with its figures, or ended `stopped`/`failed`; the newest
finished one of a champion is the one read."""

from __future__ import annotations

from mutator.store import holdout as H

from .conftest import RUN


def test_a_test_run_from_start_to_done_and_one_that_failed(db) -> None:
    start = {"run_id": RUN, "suite": "clean-test", "genome_hash": "c" * 64, "round_no": 3, "kind": "test",
             "suite_hash": "h"}
    done = H.start_test_run(db, **start)
    assert H.test_run_row(db, done)["status"] == "running" and H.latest_done_test(db, RUN, "c" * 64) is None
    H.test_run_done(db, done, {"composite": 0.5, "report": "{}"})
    failed = H.start_test_run(db, **start)
    H.test_run_ended(db, failed, "failed")
    row = H.latest_done_test(db, RUN, "c" * 64)
    assert row["id"] == done and row["composite"] == 0.5 and row["round"] == 3 and row["finished_at"]
    assert H.test_run_row(db, failed)["status"] == "failed"
