"""The `deployments` table: each deploy of a proposal into a skill folder, its outcome and its rollback.
How a folder is swapped and checked is mutator/after/deploy.py's; here are the rows."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import now, rows


def start_deployment(db: sqlite_utils.Database, proposal_id: int, target_dir: str, genome_hash: str) -> int:
    """A deploy under way (status `deploying`); returns its id."""
    return db["deployments"].insert({
        "proposal_id": proposal_id, "target_dir": target_dir, "genome_hash": genome_hash,
        "status": "deploying", "deployed_at": now()}).last_pk


def deployment_failed(db: sqlite_utils.Database, deployment_id: int, reason: str) -> None:
    db["deployments"].update(deployment_id, {"status": "failed", "error": reason})


def deployment_done(db: sqlite_utils.Database, deployment_id: int, previous_hash: str | None,
                    backup_dir: str | None) -> None:
    db["deployments"].update(deployment_id, {
        "status": "deployed", "previous_hash": previous_hash, "backup_dir": backup_dir})


def rolled_back(db: sqlite_utils.Database, deployment_id: int) -> None:
    db["deployments"].update(deployment_id, {"status": "rolled_back", "rolled_back_at": now()})


def deployment_row(db: sqlite_utils.Database, deployment_id: int) -> dict:
    return rows(db, "select * from deployments where id = ?", [deployment_id])[0]


def live_deployment(db: sqlite_utils.Database, target_dir: str) -> dict | None:
    """The latest deploy into the folder that is still `deployed`."""
    found = rows(db, "select * from deployments where target_dir = ? and status = 'deployed' "
                     "order by id desc limit 1", [target_dir])
    return found[0] if found else None


def last_rolled_back(db: sqlite_utils.Database, target_dir: str) -> dict | None:
    found = rows(db, "select * from deployments where target_dir = ? and status = 'rolled_back' order by "
                     "rolled_back_at desc limit 1", [target_dir])
    return found[0] if found else None


def deployments_of(db: sqlite_utils.Database, proposal_id: int) -> list[dict]:
    return rows(db, "select * from deployments where proposal_id = ? order by id", [proposal_id])
