"""The `proposals` and `proposal_decisions` tables: a champion offered for review and every decision on
it. What a proposal may become (its statuses and their rules) is mutator/after/proposals.py's; here are
its rows."""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils

from mutator.store.db import rows

DECISION = ("insert into proposal_decisions (proposal_id, action, status_from, status_to, note, at) "
            "values (?, ?, ?, ?, ?, ?)")
SUPERSEDE = ("insert into proposal_decisions (proposal_id, action, status_from, status_to, note, at) "
             "values (?, 'supersede', 'proposed', 'superseded', ?, ?)")
PROPOSE = ("insert into proposal_decisions (proposal_id, action, status_from, status_to, note, at) "
           "values (?, 'propose', null, 'proposed', ?, ?)")
NEW = ("insert into proposals (run_id, genome_hash, seed_hash, skill_name, status, diff, val, test, gates, "
       "target_dir, created_at, updated_at) values (?, ?, ?, ?, 'proposed', ?, ?, ?, ?, ?, ?, ?)")


@dataclass(frozen=True)
class NewProposal:
    """A proposal as first written (status `proposed`): JSON columns already encoded."""
    run_id: str
    genome_hash: str
    seed_hash: str
    skill_name: str | None
    diff: str
    val: str
    test: str
    gates: str
    target_dir: str | None


def proposal_row(db: sqlite_utils.Database, proposal_id: int) -> dict | None:
    found = rows(db, "select * from proposals where id = ?", [proposal_id])
    return found[0] if found else None


def recent_proposal_ids(db: sqlite_utils.Database, limit: int = 5) -> list[int]:
    return [r["id"] for r in db.query("select id from proposals order by id desc limit ?", [limit])]


def decisions_of(db: sqlite_utils.Database, proposal_id: int) -> list[dict]:
    return rows(db, "select * from proposal_decisions where proposal_id = ? order by id", [proposal_id])


def decisions_of_run(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """Every decision on the run's proposals, in order, with its proposal's genome ([] for a store without
    them)."""
    if "proposals" not in db.table_names():
        return []
    return rows(db, "select d.proposal_id, d.action, d.status_from, d.status_to, d.note, d.at, "
                    "p.genome_hash from proposal_decisions d join proposals p on p.id = d.proposal_id "
                    "where p.run_id = ? order by d.id", [run_id])


def record_decision(db: sqlite_utils.Database, proposal_id: int, action: str, status_from: str | None,
                    status_to: str, note: str | None, at: float) -> None:
    """Move a proposal to `status_to` and keep the decision: both commit together."""
    with db.conn:
        db.conn.execute("update proposals set status = ?, updated_at = ? where id = ?",
                        [status_to, at, proposal_id])
        db.conn.execute(DECISION, [proposal_id, action, status_from, status_to, note, at])


def proposals_of(db: sqlite_utils.Database, run_id: str, genome_hash: str) -> list[dict]:
    """The run's proposals of this champion, newest first."""
    return rows(db, "select * from proposals where run_id = ? and genome_hash = ? order by id desc",
                [run_id, genome_hash])


def open_proposal_ids(db: sqlite_utils.Database, run_id: str) -> list[int]:
    found = rows(db, "select id from proposals where run_id = ? and status = 'proposed'", [run_id])
    return [r["id"] for r in found]


def latest_of_run(db: sqlite_utils.Database, run_id: str) -> dict | None:
    """{id, status} of the run's newest proposal (None when it has none, or the store has no proposals)."""
    if "proposals" not in db.table_names():
        return None
    found = rows(db, "select id, status from proposals where run_id = ? order by id desc limit 1", [run_id])
    return found[0] if found else None


def insert_proposal(db: sqlite_utils.Database, new: NewProposal, *, note: str, at: float,
                    supersedes: list[int]) -> int:
    """Write the proposal and its `propose` decision, and supersede the run's open ones, in one
    transaction; returns the new proposal's id."""
    with db.conn:
        cursor = db.conn.execute(NEW, [new.run_id, new.genome_hash, new.seed_hash, new.skill_name, new.diff,
                                       new.val, new.test, new.gates, new.target_dir, at, at])
        proposal_id = cursor.lastrowid
        db.conn.execute(PROPOSE, [proposal_id, note, at])
        for old in supersedes:   # a newer champion of the same run supersedes an open proposal
            db.conn.execute("update proposals set status = 'superseded', updated_at = ? where id = ?",
                            [at, old])
            db.conn.execute(SUPERSEDE, [old, f"superseded by proposal {proposal_id}", at])
    return proposal_id


def listing_rows(db: sqlite_utils.Database, limit: int) -> list[dict]:
    """Newest first, without the diff; JSON columns as stored."""
    return rows(db, "select id, run_id, genome_hash, seed_hash, skill_name, status, val, test, gates, "
                    "target_dir, created_at, updated_at from proposals order by id desc limit ?", [limit])
