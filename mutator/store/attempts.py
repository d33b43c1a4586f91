"""The `attempts` table's writes, owned here: an attempt row is made with `insert_attempt` and changed with
`update_attempt`; its verdict and status are the round's vocabulary (strategies/verdicts.py), any other string is
refused, and a misspelt column is refused rather than added."""

from __future__ import annotations

import sqlite_utils

from mutator.store.runs import columns
from strategies.verdicts import AttemptStatus, Verdict


def _checked(db: sqlite_utils.Database, fields: dict) -> dict:
    if fields.get("verdict") is not None:
        fields["verdict"] = Verdict(fields["verdict"])
    if fields.get("status") is not None:
        fields["status"] = AttemptStatus(fields["status"])
    return columns(db, "attempts", fields)


def insert_attempt(db: sqlite_utils.Database, **fields) -> int:
    """A new attempt row (run_id, round, sibling and status at least); returns its id."""
    return db["attempts"].insert(_checked(db, fields)).last_pk


def update_attempt(db: sqlite_utils.Database, attempt_id: int, fields: dict) -> None:
    db["attempts"].update(attempt_id, _checked(db, dict(fields)))


def set_genome_figures(db: sqlite_utils.Database, run_id: str, round_no: int, genome_hash: str, *, composite: float,
                       eval: float, cost: float, steps: float) -> None:
    """A round's attempts of one genome get its figures (an incumbent kept at an early look, once its remaining
    val waves ran: the whole val evaluation's)."""
    db.execute("update attempts set composite = ?, eval = ?, cost = ?, steps = ? where run_id = ? and round = ? and "
               "genome_hash = ?", [composite, eval, cost, steps, run_id, round_no, genome_hash])


def set_incumbent_after(db: sqlite_utils.Database, run_id: str, round_no: int, incumbent: str) -> None:
    """Every attempt of an integrated round carries the incumbent the strategy left (the dashboard reads it)."""
    db.execute("update attempts set incumbent_after = ? where run_id = ? and round = ?", [incumbent, run_id, round_no])
