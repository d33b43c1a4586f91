"""The `runs` table's writes, owned here: a run row is made from one `RunRow`, changed through `update_run`,
and its spend added with `add_spend`; the loop and the A/A run call these and never spell the row
themselves."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

import sqlite_utils

from mutator.store import ledger
from mutator.store.db import now
from mutator.store.liveness import Heartbeat
from strategies.verdicts import RunStatus


@dataclass(frozen=True)
class RunRow:
    """What a new run is: its kind and strategy, seed, suites, agents, settings and identity (`config`)."""
    id: str
    kind: str                      # evolve | aa
    strategy: str
    strategy_opts: str             # JSON
    seed_hash: str
    skill_name: str
    suite: str | None
    suite_hash: str | None
    val: str
    val_hash: str
    model: str
    agent: str
    replicates: int
    rounds_target: int
    rng_seed: int
    w_cost: float
    w_steps: float
    min_improvement: float
    gate_z: float
    config: str                    # JSON: the run's identity
    holdout: str | None = None
    mutator_model: str | None = None
    confirm: int | None = None
    w_trigger: float | None = None   # score.wTrigger (null: a run from before it, or an A/A run: 0)


def columns(db: sqlite_utils.Database, table: str, fields: dict) -> dict:
    """The fields, checked against the table's columns (a misspelt column is a bug, never a silent new
    column)."""
    unknown = sorted(set(fields) - set(db[table].columns_dict))
    if unknown:
        raise ValueError(f"{table} has no column(s) {unknown}")
    return fields


def insert_run(db: sqlite_utils.Database, row: RunRow) -> None:
    """A new run, running in this process, with its seed as the incumbent and nothing spent."""
    at = now()
    db["runs"].insert({**asdict(row), "status": RunStatus.RUNNING, "rounds_done": 0,
                       "incumbent_hash": row.seed_hash, "cost_usd": 0.0, "pid": os.getpid(), "created_at": at,
                       "updated_at": at})


def update_run(db: sqlite_utils.Database, run_id: str, **fields) -> None:
    """Change a run's columns (a status must be a RunStatus)."""
    if "status" in fields:
        fields["status"] = RunStatus(fields["status"])
    db["runs"].update(run_id, columns(db, "runs", fields))


def resume_run(db: sqlite_utils.Database, run_id: str, **fields) -> None:
    """An existing run taken up again by this process."""
    update_run(db, run_id, status=RunStatus.RUNNING, pid=os.getpid(), updated_at=now(), error=None, **fields)


def add_spend(db: sqlite_utils.Database, run_id: str, usd: float, kind: str = "other") -> None:
    """Charge spend to the run (on the ledger, committed at once, so a crash right after loses none of it)."""
    with db.conn:
        ledger.charge(db.conn, run_id=run_id, usd=usd, kind=kind)


def run_heartbeat(db_path: Path, run_id: str) -> Heartbeat:
    """Beat the run's `heartbeat_at` while this process writes it (a killed writer's run then shows
    `stale`)."""
    return Heartbeat(db_path, "update runs set heartbeat_at = ? where id = ?", [run_id])


def run_row(db: sqlite_utils.Database, run_id: str) -> dict:
    """The run's row (NotFoundError when there is none)."""
    return dict(db["runs"].get(run_id))


def runs_with_id(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """The run stored under `run_id` ([] or one row)."""
    return list(db["runs"].rows_where("id = ?", [run_id]))


def runs_with_identity(db: sqlite_utils.Database, identity_id: str) -> list[dict]:
    """The runs last resumed under the id `identity_id` (runs.identity_id)."""
    return list(db["runs"].rows_where("identity_id = ?", [identity_id]))


def run_spent(db: sqlite_utils.Database, run_id: str) -> float:
    """The run's spend so far in USD (0 when there is no such run)."""
    found = list(db.query("select cost_usd from runs where id = ?", [run_id]))
    return float(found[0]["cost_usd"] or 0.0) if found else 0.0


def evolve_runs(conn) -> list[tuple[str, str, str | None, str | None]]:
    """(id, seed_hash, config, suites) of every evolve run, newest first (`conn`: a sqlite3 connection)."""
    return list(conn.execute(
        "select id, seed_hash, config, suites from runs where kind = 'evolve' order by created_at desc"))
