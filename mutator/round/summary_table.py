"""The end-of-run summary as `rich` tables, for a terminal; a log or a pipe gets the plain text of
mutator/round/summary.py, which holds the same figures. Rendered from the store alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import sqlite_utils
from rich.console import Console
from rich.table import Table

from mutator.round.summary import attempt_label, attempt_note, model_deltas, seed_vs_champion, summary
from mutator.store.runs import run_row
from strategies.verdicts import Verdict

VERDICT_STYLE = {Verdict.KEEP: "green", Verdict.REJECT: "red", Verdict.SCREENED: "dark_orange",
                 Verdict.CRITIC: "yellow", Verdict.FAILED: "magenta"}


def _cells(s) -> list[str]:
    return ["—"] * 4 if s is None else [f"{s.composite:.4f}", f"{s.eval:.3f}", f"{s.cost:.5f}",
                                        f"{s.steps:.2f}"]


def tables(db: sqlite_utils.Database, run_id: str) -> tuple[Table, Table]:
    """(seed vs champion on val and train, one row per attempt)."""
    run = run_row(db, run_id)
    both = seed_vs_champion(db, run)
    attempts, champion = both.attempts, both.champion
    figures = Table(title=f"{run_id} · seed vs champion {run['incumbent_hash'][:12]} (round "
                          f"{champion.round})")
    figures.add_column("")
    for split in ("val", "train"):
        for name in ("composite", "eval", "cost/cell", "steps"):
            figures.add_column(f"{split} {name}", justify="right")
    figures.add_row("seed", *_cells(both.seed_val), *_cells(both.seed_train))
    figures.add_row("champion", *_cells(both.champion_val), *_cells(both.champion_train))
    for model, (seed_val, seed_train, champion_val, champion_train) in both.models.items():
        figures.add_row(f"· {model}: seed", *_cells(seed_val), *_cells(seed_train))
        figures.add_row(f"· {model}: champion", *_cells(champion_val), *_cells(champion_train))
    rounds = Table(title="attempts")
    for name, justify in (("round", "left"), ("verdict", "left"), ("Δcomposite", "right"),
                          ("gate threshold", "right"), ("summary", "left")):
        rounds.add_column(name, justify=justify, overflow="fold")
    for a in attempts[1:]:
        verdict = a.verdict or a.status
        rounds.add_row(attempt_label(a),
                       f"[{VERDICT_STYLE.get(verdict, 'default')}]{verdict}[/]",
                       "—" if a.delta is None else f"{a.delta:+.4f}",
                       "—" if a.gate_threshold is None else f"{a.gate_threshold:+.4f}",
                       attempt_note(a) + (f" (per model Δ: {model_deltas(a)})" if model_deltas(a) else ""))
    return figures, rounds


def print_summary(db: sqlite_utils.Database, run_id: str, *, val_query_warn: int | None = None,
                  data_dir: Path | None = None, stream: TextIO | None = None, live: bool | None = None,
                  spend: dict | None = None) -> None:
    """Tables on a terminal, the plain summary elsewhere; the closing lines (counts, spend, val queries,
    disk) are the same text in both."""
    stream = stream or sys.stdout
    text = summary(db, run_id, val_query_warn=val_query_warn, data_dir=data_dir, spend=spend)
    if not (stream.isatty() if live is None else live):
        print(text, file=stream)
        return
    console = Console(file=stream, force_terminal=True)
    console.print(text.splitlines()[0], markup=False, highlight=False)
    for table in tables(db, run_id):
        console.print(table)
    lines = text.splitlines()
    tail = next((i for i, line in enumerate(lines) if line.strip().startswith("KEEP ")), len(lines))
    console.print("\n".join(lines[tail:]), markup=False, highlight=False)
