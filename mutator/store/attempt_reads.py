"""Reads of the `attempts` table by the commands after a run and the A/A run (proposals, reports,
audits): the attempt rows as stored, as dicts. Writes stay in mutator/store/attempts.py."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows

EVALUATION_COLUMNS = ("val_evaluation_id", "train_evaluation_id")


def champion_attempt(db: sqlite_utils.Database, run_id: str, genome_hash: str) -> dict:
    """The run's first attempt of this genome that was evaluated on val ({} when none)."""
    found = rows(db, "select * from attempts where run_id = ? and genome_hash = ? and val_evaluation_id "
                     "is not null order by id limit 1", [run_id, genome_hash])
    return found[0] if found else {}


def attempts_of_run(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """Every attempt of the run, by round and sibling."""
    return rows(db, "select * from attempts where run_id = ? order by round, sibling", [run_id])


def latest_evaluation_id(db: sqlite_utils.Database, run_id: str, genome_hash: str, column: str) -> int | None:
    """The run's newest val or train evaluation (`column`) of this genome."""
    if column not in EVALUATION_COLUMNS:
        raise ValueError(f"not an evaluation column of attempts: {column!r}")
    found = rows(db, f"select {column} from attempts where run_id = ? and genome_hash = ? and {column} "
                     "is not null order by id desc limit 1", [run_id, genome_hash])
    return found[0][column] if found else None


def seed_evaluation_ids(db: sqlite_utils.Database, run_id: str) -> dict | None:
    """{val_evaluation_id, train_evaluation_id} of the run's seed attempt (round 0, sibling 0)."""
    found = rows(db, "select val_evaluation_id, train_evaluation_id from attempts where run_id = ? "
                     "and round = 0 and sibling = 0", [run_id])
    return found[0] if found else None


def round_zero_val_ids(db: sqlite_utils.Database, run_id: str) -> list[int | None]:
    """The val evaluation of each of the run's round-0 attempts."""
    found = rows(db, "select val_evaluation_id from attempts where run_id = ? and round = 0", [run_id])
    return [r["val_evaluation_id"] for r in found]


def first_sibling(db: sqlite_utils.Database, run_id: str, round_no: int) -> dict | None:
    """The round's sibling-0 attempt (an A/A copy), None when not written yet."""
    found = list(db["attempts"].rows_where("run_id = ? and round = ? and sibling = 0", [run_id, round_no]))
    return found[0] if found else None


def gates_before(db: sqlite_utils.Database, run_id: str, round_no: int) -> list[dict]:
    """{gate_n, gate} of the run's gated attempts in rounds 1 .. round_no, by round (gate as stored JSON)."""
    return rows(db, "select gate_n, gate from attempts where run_id = ? and round between 1 and ? and "
                    "gate is not null order by round", [run_id, round_no])


def decided_rounds(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """Every attempt of the run after round 0 that has a verdict, by round."""
    return rows(db, "select * from attempts where run_id = ? and round > 0 and verdict is not null "
                    "order by round", [run_id])
