"""The watch's ticks: each written at once, and the watermark read from the newest tick that ran."""

from __future__ import annotations

from mutator.store import watch_ticks as W


def test_the_watermark_is_the_newest_ran_ticks(db) -> None:
    base = {"skill_dir": "/s", "suites": "/out", "min_traces": 2, "traces_seen": 3, "eligible": 3,
            "new_eligible": 3, "at": 1.0, "finished_at": 2.0, "reason": "", "run_id": None,
            "proposal_id": None}
    assert W.last_watermark(db, "/out", ("proposed", "skipped-delta")) is None
    first = W.insert_tick(db, {**base, "outcome": "proposed", "watermark": 10.0})
    W.insert_tick(db, {**base, "outcome": "skipped-trigger", "watermark": 20.0})
    W.insert_tick(db, {**base, "outcome": "skipped-delta", "watermark": 15.0, "suites": "/other"})
    assert first == 1
    assert W.last_watermark(db, "/out", ("proposed", "skipped-delta")) == 10.0
