"""The `attempts` table's writes, owned here: an attempt row is made with `insert_attempt` and changed with
`update_attempt`; its verdict and status are the round's vocabulary (strategies/verdicts.py), any other string
is refused, and a misspelt column is refused rather than added."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows
from mutator.store.rows import AttemptRow
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


def set_genome_figures(db: sqlite_utils.Database, run_id: str, round_no: int, genome_hash: str, *,
                       composite: float, eval: float, cost: float, steps: float) -> None:
    """A round's attempts of one genome get its figures (an incumbent kept at an early look, once its
    remaining val waves ran: the whole val evaluation's)."""
    db.execute("update attempts set composite = ?, eval = ?, cost = ?, steps = ? where run_id = ? and round "
               "= ? and genome_hash = ?", [composite, eval, cost, steps, run_id, round_no, genome_hash])


def set_incumbent_after(db: sqlite_utils.Database, run_id: str, round_no: int, incumbent: str) -> None:
    """Every attempt of an integrated round carries the incumbent the strategy left (the dashboard reads
    it)."""
    db.execute("update attempts set incumbent_after = ? where run_id = ? and round = ?",
               [incumbent, run_id, round_no])


# ---- reads: each gives the round records (AttemptRow) or plain values, never a row to read by key
# -------------
def attempt_at(db: sqlite_utils.Database, run_id: str, round_no: int, sibling: int) -> AttemptRow | None:
    """The run's attempt at (round, sibling), or None before it is made."""
    found = list(db["attempts"].rows_where("run_id = ? and round = ? and sibling = "
                                           "?", [run_id, round_no, sibling]))
    return AttemptRow.of(found[0]) if found else None


def incumbent_before(db: sqlite_utils.Database, run_id: str, round_no: int) -> str | None:
    """The incumbent the last integrated round before `round_no` left (None: no round left one yet)."""
    left = rows(db, "select incumbent_after from attempts where run_id = ? and round < ? and "
                    "incumbent_after is not null order by round desc, id desc limit 1", [run_id, round_no])
    return left[0]["incumbent_after"] if left else None


def scored_genomes(db: sqlite_utils.Database, run_id: str, round_no: int) -> list[str]:
    """Every genome scored on val before round `round_no` (not FAILED), in the order first scored."""
    return [r["genome_hash"] for r in rows(
        db, "select distinct genome_hash from attempts where run_id = ? and round < ? and "
            "val_evaluation_id is not null and status != 'failed' order by id", [run_id, round_no])]


def pool_snapshot(db: sqlite_utils.Database, attempt_id: int) -> str | None:
    """The pool snapshot (JSON) attempt `attempt_id` stored, None when the row is gone."""
    found = rows(db, "select pool_snapshot from attempts where id = ?", [attempt_id])
    return found[0]["pool_snapshot"] if found else None


def undecided(db: sqlite_utils.Database, run_id: str, done: int) -> list[AttemptRow]:
    """The run's attempts with a genome after its `done` decided rounds."""
    return [AttemptRow.of(r) for r in rows(
        db, "select * from attempts where run_id = ? and round > ? and genome_hash is not "
            "null", [run_id, done])]


def scored(db: sqlite_utils.Database, run_id: str) -> list[AttemptRow]:
    """The run's attempts with a genome that did not fail, in the order made."""
    return [AttemptRow.of(r) for r in rows(
        db, "select * from attempts where run_id = ? and genome_hash is not null and status != 'failed' "
            "order by id", [run_id])]


def of_run(db: sqlite_utils.Database, run_id: str) -> list[AttemptRow]:
    """Every attempt of the run, by round and sibling."""
    return [AttemptRow.of(r) for r in rows(
        db, "select * from attempts where run_id = ? order by round, sibling", [run_id])]


def mean_mutation_cost(db: sqlite_utils.Database, run_id: str) -> float:
    """Mean USD of this run's mutator calls that ran (measured_mutation_cost); 0 before any."""
    return measured_mutation_cost(db, run_id) or 0.0


# a mutator call that ran: it was charged, or it returned a change (a summary) without failing; a failed
# launch ($0, no summary) is no measurement
def ran(alias: str = "") -> str:
    """SQL: the attempt (`alias.`) made a mutator call that ran."""
    a = f"{alias}." if alias else ""
    return (f"{a}round > 0 and ({a}mutator_cost_usd > 0 or ({a}summary is not null and "
            f"{a}status != 'failed'))")


def measured_mutation_cost(db: sqlite_utils.Database, run_id: str) -> float | None:
    """Mean USD of this run's mutator calls that ran, a call that spent nothing (an own --mutator-cmd that
    pays its own way, the fake) counted at $0; None before any ran."""
    found = list(db.query("select count(*) as n, avg(mutator_cost_usd) as mean from attempts where "
                          f"run_id = ? and {ran()}", [run_id]))
    return float(found[0]["mean"] or 0.0) if found and found[0]["n"] else None
