"""Progress: one rich bar per evaluation on a terminal (count, failures, ETA); plain sparse lines otherwise."""

from __future__ import annotations

import io

from mutator.progress import Progress


def test_a_terminal_gets_one_bar_per_evaluation_with_failures_and_eta() -> None:
    out = io.StringIO()
    progress = Progress(out, live=True)
    progress.start("round 1 · abc on val", 4, 0)
    progress.update(1, 4, errors=0)
    progress.say("  → a message printed above the bar")
    progress.update(4, 4, errors=1)
    progress.finish()
    progress.start("round 1 · abc on train", 2, 1)
    progress.update(2, 2, errors=0)
    progress.finish()
    text = out.getvalue()
    assert "round 1 · abc on val" in text and "4/4" in text and "1 failed" in text
    assert "ETA" in text and "a message printed above the bar" in text
    assert "round 1 · abc on train" in text and "1/2 cells already done, running 1" in text


def test_a_log_gets_plain_lines() -> None:
    out = io.StringIO()
    progress = Progress(out, live=False)
    progress.start("seed on val", 3, 0)
    progress.update(1, 3, errors=0)          # within the interval: not printed
    progress.update(3, 3, errors=2)
    progress.finish()
    assert out.getvalue().splitlines() == ["  seed on val [####################] 3/3 cells, 2 failed"]
    assert "\x1b[" not in out.getvalue()      # no terminal codes in a log
