"""Progress: one rich bar per evaluation on a terminal (count, failures, ETA); plain sparse lines otherwise."""

from __future__ import annotations

import io

from mutator.round.progress import Progress


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


def test_the_end_of_run_summary_is_tables_on_a_terminal_and_text_in_a_log(demo_store) -> None:
    from mutator.round.summary import summary
    from mutator.round.summary_table import print_summary
    from mutator.store.db import connect_readonly
    data_dir, _ = demo_store
    db = connect_readonly(data_dir / "mutator.db")
    run_id = next(iter(db.query("select id from runs where kind = 'evolve'")))["id"]
    log = io.StringIO()
    print_summary(db, run_id, stream=log, live=False)
    assert log.getvalue() == summary(db, run_id) + "\n"
    terminal = io.StringIO()
    print_summary(db, run_id, stream=terminal, live=True)
    shown = terminal.getvalue()
    assert "seed vs champion" in shown and "attempts" in shown and "┃" in shown   # rich table borders
    assert "KEEP" in shown and "REJECT" in shown and "CRITIC" in shown
    assert "spend this run" in shown and "dry run" in shown                     # the same closing lines
