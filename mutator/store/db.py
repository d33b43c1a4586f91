"""THE SQLite store (sqlite-utils, WAL): runs, attempts, evaluations, cells, tests, genomes.

One writer (the loop); readers (dashboard, reports) open it read-only. Schema changes are
versioned migrations applied in order; a released migration is never edited.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils


def now() -> float:
    return time.time()


def _v1(db: sqlite_utils.Database) -> None:
    db["runs"].create({
        "id": str, "kind": str, "status": str, "strategy": str, "strategy_opts": str, "seed_hash": str,
        "skill_name": str, "suite": str, "suite_hash": str, "val": str, "val_hash": str, "holdout": str,
        "model": str, "mutator_model": str, "agent": str, "replicates": int, "rounds_target": int,
        "rounds_done": int, "rng_seed": int, "w_cost": float, "w_steps": float, "min_improvement": float,
        "gate_z": float, "config": str, "incumbent_hash": str, "seed_cost": float, "seed_steps": float,
        "seed_val_cost": float, "seed_val_steps": float, "cost_usd": float, "pid": int, "error": str,
        "created_at": float, "updated_at": float, "finished_at": float,
    }, pk="id", not_null={"status", "kind"}, defaults={"kind": "evolve", "rounds_done": 0, "cost_usd": 0.0})
    db["genomes"].create({
        "hash": str, "parent_hash": str, "skill_name": str, "n_files": int, "size_bytes": int,
        "git_commit": str, "created_at": float,
    }, pk="hash")
    db["attempts"].create({
        "id": int, "run_id": str, "round": int, "sibling": int, "parent_hash": str, "genome_hash": str,
        "ref_hashes": str, "status": str, "verdict": str, "summary": str, "reasoning": str, "critic": str,
        "error": str, "val_evaluation_id": int, "train_evaluation_id": int,
        "composite": float, "eval": float, "cost": float, "steps": float,
        "delta": float, "delta_eval": float, "delta_cost": float, "delta_steps": float,
        "gate_threshold": float, "gate_se": float, "gate_s": float, "gate_df": int, "gate_t": float,
        "gate_n": int, "gate": str, "pool_snapshot": str, "mutator_cost_usd": float, "diff_stat": str,
        "started_at": float, "finished_at": float,
    }, pk="id", not_null={"run_id", "round", "status"}, defaults={"sibling": 0, "mutator_cost_usd": 0.0},
        foreign_keys=[("run_id", "runs", "id")])
    db["attempts"].create_index(["run_id", "round", "sibling"], unique=True)
    db["attempts"].create_index(["run_id", "verdict"])
    db["evaluations"].create({
        "id": int, "key": str, "genome_hash": str, "suite": str, "suite_hash": str, "split": str,
        "contract": str, "model": str, "replicates": int, "status": str, "n_cells": int, "n_done": int,
        "eval": float, "cost": float, "steps": float, "cost_usd_total": float,
        "started_at": float, "finished_at": float,
    }, pk="id", not_null={"key", "status"})
    db["evaluations"].create_index(["key"], unique=True)
    db["evaluations"].create_index(["genome_hash"])
    db["cells"].create({
        "id": int, "evaluation_id": int, "task_id": str, "replicate": int, "status": str, "score": float,
        "cost_usd": float, "steps": int, "input_tokens": int, "output_tokens": int,
        "cache_write_tokens": int, "cache_read_tokens": int, "duration_ms": int, "agent_subtype": str,
        "error": str, "cell_dir": str, "finished_at": float,
    }, pk="id", not_null={"evaluation_id", "task_id", "replicate", "status"},
        foreign_keys=[("evaluation_id", "evaluations", "id")])
    db["cells"].create_index(["evaluation_id", "task_id", "replicate"], unique=True)
    db["tests"].create({"id": int, "cell_id": int, "name": str, "score": float}, pk="id",
                       foreign_keys=[("cell_id", "cells", "id")])
    db["tests"].create_index(["cell_id"])
    db["test_runs"].create({
        "id": int, "run_id": str, "suite": str, "genome_hash": str, "round": int, "evaluation_id": int,
        "status": str, "eval": float, "cost": float, "steps": float, "composite": float,
        "train_composite": float, "created_at": float, "finished_at": float,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db["test_runs"].create_index(["run_id"])


def _v2(db: sqlite_utils.Database) -> None:
    # The honest test report (champion vs seed: paired Δ ± SE, CI, sign test, McNemar; train/val beside it).
    db["test_runs"].add_column("report", str)


def _v3(db: sqlite_utils.Database) -> None:
    # Solve phase, meta skill and val accounting per run; the winner's-curse confirmation per attempt.
    db["runs"].add_column("solve", str)          # JSON: per-task best solve score, passes used, cost
    db["runs"].add_column("meta_skill", str)     # JSON list of {round, lessons, cost_usd}
    db["runs"].add_column("val_queries", int)    # candidate evaluations that queried val
    db["runs"].add_column("confirm", int)        # 1 when keeps are re-checked on fresh val replicates
    db["attempts"].add_column("confirm", str)    # JSON: fresh evaluations, confirmed gate, stands/overturned


def _v4(db: sqlite_utils.Database) -> None:
    # After the run: proposals and their timestamped decisions, deploys (with the kept previous version),
    # health checks (fingerprint, per-task scores, drift band, partial flag) and the store's spend limits.
    db["proposals"].create({
        "id": int, "run_id": str, "genome_hash": str, "seed_hash": str, "skill_name": str, "status": str,
        "diff": str, "val": str, "test": str, "gates": str, "target_dir": str, "created_at": float,
        "updated_at": float,
    }, pk="id", not_null={"run_id", "genome_hash", "status"}, foreign_keys=[("run_id", "runs", "id")])
    db["proposals"].create_index(["run_id", "genome_hash"])
    db["proposals"].create_index(["status"])
    db["proposal_decisions"].create({
        "id": int, "proposal_id": int, "action": str, "status_from": str, "status_to": str, "note": str,
        "at": float,
    }, pk="id", not_null={"proposal_id", "action", "status_to", "at"},
        foreign_keys=[("proposal_id", "proposals", "id")])
    db["proposal_decisions"].create_index(["proposal_id"])
    db["deployments"].create({
        "id": int, "proposal_id": int, "target_dir": str, "backup_dir": str, "genome_hash": str,
        "previous_hash": str, "status": str, "error": str, "deployed_at": float, "rolled_back_at": float,
    }, pk="id", not_null={"target_dir", "status"}, foreign_keys=[("proposal_id", "proposals", "id")])
    db["deployments"].create_index(["target_dir", "id"])
    db["health_checks"].create({
        "id": int, "skill_dir": str, "skill_name": str, "genome_hash": str, "fingerprint": str, "suites": str,
        "contract": str, "status": str, "partial": int, "score": float, "previous_id": int,
        "previous_score": float, "delta": float, "band": str, "summary": str, "tasks": str, "n_cells": int,
        "n_done": int, "cost_usd": float, "evaluation_ids": str, "started_at": float, "finished_at": float,
    }, pk="id", not_null={"skill_dir", "fingerprint", "status"}, defaults={"partial": 0, "cost_usd": 0.0})
    db["health_checks"].create_index(["skill_dir", "fingerprint", "id"])
    db["health_checks"].create_index(["started_at"])
    db["spend_limits"].create({"name": str, "usd": float, "set_at": float}, pk="name")


def _v5(db: sqlite_utils.Database) -> None:
    # Parent / champion lookups (loop evidence, dashboard, test report) filter attempts by run and genome.
    db["attempts"].create_index(["run_id", "genome_hash"])


def _v6(db: sqlite_utils.Database) -> None:
    # Honest failures: a cell's infrastructure retries and the cost of its earlier tries (a re-run replaces
    # an infra_error cell, its spend stays counted); an evaluation's failure counts by kind.
    db["cells"].add_column("retries", int, not_null_default=0)
    db["cells"].add_column("prior_cost_usd", float, not_null_default=0.0)
    db["cells"].add_column("grader_cost_usd", float, not_null_default=0.0)   # an LLM judge's own calls
    db["evaluations"].add_column("n_failed", int)
    db["evaluations"].add_column("failures", str)        # JSON {status: count} of the cells that are not ok
    db["attempts"].add_column("failures", str)           # JSON: the val evaluation's failure counts, when FAILED


def _v7(db: sqlite_utils.Database) -> None:
    # Liveness: a running writer beats these every few seconds; a dead one's record shows as `stale`.
    # Idempotent: migrations are numbered by position, and a branch may have run this one under another number.
    for table in ("runs", "test_runs", "health_checks"):
        if "heartbeat_at" not in db[table].columns_dict:
            db[table].add_column("heartbeat_at", float)




class StoreError(RuntimeError):
    """The store cannot be used: its file is damaged or its folder not writable. The message says which, and the fix."""


DAMAGED = ("malformed", "not a database", "corrupt", "disk i/o error")
UNWRITABLE = ("readonly", "read-only", "unable to open", "permission", "access")


def store_problem(path: Path, err: BaseException) -> StoreError | None:
    """Name a sqlite/OS failure the user can act on: damaged (move it aside) or not writable; None otherwise."""
    text = str(err)
    if isinstance(err, sqlite3.DatabaseError) and any(word in text.lower() for word in DAMAGED):
        return StoreError(f"`mutator.db` is damaged: {path}: {text}; move it aside (or restore a backup) and re-run, "
                          f"or pass another --data-dir")
    if isinstance(err, OSError) or any(word in text.lower() for word in UNWRITABLE):
        return StoreError(f"`mutator.db` is not writable: {path}: {text}; make {path.parent} writable or pass a "
                          f"writable --data-dir")
    return None


class DiskFull(RuntimeError):
    """The disk under the data dir is full: the run stops (status `stopped`, with the reason) and resumes later."""


def disk_full_reason(err: BaseException, data_dir: Path) -> str | None:
    """The stop reason when err is a full disk (ENOSPC / EDQUOT, or SQLite's 'database or disk is full')."""
    full = (isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        isinstance(err, sqlite3.OperationalError) and "disk is full" in str(err))
    return f"disk full ({err}); free space under {data_dir}, then re-run the same command to resume" if full else None


RESERVE_BYTES = 256 * 1024


def keep_reserve(data_dir: Path) -> None:
    """A small file of zeros beside the store, given back when the disk fills so the run can still record that
    it stopped (SQLite needs room for a WAL frame even to write one row)."""
    reserve = data_dir / "locks" / "disk-reserve"
    if reserve.is_file() and reserve.stat().st_size == RESERVE_BYTES:
        return
    try:
        reserve.parent.mkdir(exist_ok=True)
        reserve.write_bytes(bytes(RESERVE_BYTES))
    except OSError:
        reserve.unlink(missing_ok=True)   # no room even for this: the run will say so when it writes


def release_reserve(data_dir: Path) -> None:
    (data_dir / "locks" / "disk-reserve").unlink(missing_ok=True)


@contextmanager
def store_lock(data_dir: Path) -> Iterator[None]:
    """A short lock while a store's parts are created: two processes opening a fresh store at once must not
    both create its tables (or its genome repository)."""
    (data_dir / "locks").mkdir(exist_ok=True)
    fd = os.open(data_dir / "locks" / "store.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
def _v8(db: sqlite_utils.Database) -> None:
    # What each call really used, not only its cost: a cell's priced and agent-reported cost side by side
    # and its API retries and its judge's tokens; a mutation's tokens (input, output, cache write, cache read), retries and costs.
    # api_retries: API calls the agent itself retried (cells.retries, from _v6, counts the harness's re-runs)
    for column, kind in (("priced_cost_usd", float), ("reported_cost_usd", float), ("api_retries", int),
                         ("grader_input_tokens", int), ("grader_output_tokens", int)):
        db["cells"].add_column(column, kind)
    for column, kind in (("mutator_input_tokens", int), ("mutator_output_tokens", int),
                         ("mutator_cache_write_tokens", int), ("mutator_cache_read_tokens", int),
                         ("mutator_retries", int), ("mutator_priced_cost_usd", float),
                         ("mutator_reported_cost_usd", float)):
        db["attempts"].add_column(column, kind)
    # Where a run's suites are (a suite given by path resolves again) and the agent flags it ran with.
    for column in ("suite_path", "val_path", "holdout_path", "agents"):
        db["runs"].add_column(column, str)


def _v9(db: sqlite_utils.Database) -> None:
    # The opt-in watch (mutator/mining/watch.py): one row per tick, whatever it decided.
    if "triggers" in db.table_names():
        return
    db["triggers"].create({
        "id": int, "at": float, "skill_dir": str, "suites": str, "traces_seen": int, "eligible": int,
        "new_eligible": int, "min_traces": int, "outcome": str, "run_id": str, "proposal_id": int, "reason": str,
        "watermark": float, "finished_at": float,
    }, pk="id", not_null={"at", "skill_dir", "suites", "outcome"})
    db["triggers"].create_index(["suites", "id"])
    db["triggers"].create_index(["at"])


def _v10(db: sqlite_utils.Database) -> None:
    # Which machine ran each cell: "local", or the Ray node id under --executor ray (eval/executors).
    if "node" not in db["cells"].columns_dict:
        db["cells"].add_column("node", str)


def _v11(db: sqlite_utils.Database) -> None:
    # Several eval models: an evaluation over models a,b is a group row whose `members` = {model: evaluation id}
    # of the one-model evaluations it is made of (each cached under its own key, so a later one-model or
    # two-model run reuses them); its cells are theirs. A run's per-model seed normalisers
    # ({"val"|"train": [[model, seed_cost, seed_steps], ...]}), so each model's composite re-derives.
    db["evaluations"].add_column("members", str)
    db["runs"].add_column("seed_models", str)
    # The no-skill control of a test run: the suite measured with no skill installed.
    db["test_runs"].add_column("control_evaluation_id", int)


def _v12(db: sqlite_utils.Database) -> None:
    # What a watch tick's judge pass over the mined requests cost (mining.json's judge.cost_usd), so it counts
    # in the store's spend, the Cost page and the daily budget like every other model call.
    if "triggers" in db.table_names() and "judge_cost_usd" not in db["triggers"].columns_dict:
        db["triggers"].add_column("judge_cost_usd", float)


def _v13(db: sqlite_utils.Database) -> None:
    # Cheaper decisions (mutator/scoring/sequential.py): the kill-only train screen's record and every look of
    # sequential val, each with its gate figures, so a SCREENED or early verdict re-derives from the store.
    for name in ("screen", "looks"):
        if name not in db["attempts"].columns_dict:
            db["attempts"].add_column(name, str)


def _v14(db: sqlite_utils.Database) -> None:
    # The run's own skill folder (resolved), so --propose RUN prints an accept line aimed at it, not at the
    # config's skillDir. Idempotent: another branch may have run this under another number.
    if "skill_dir" not in db["runs"].columns_dict:
        db["runs"].add_column("skill_dir", str)


MIGRATIONS: tuple[Callable[[sqlite_utils.Database], None], ...] = (_v1, _v2, _v3, _v4, _v5, _v6, _v7, _v8, _v9,
                                                                   _v10, _v11, _v12, _v13, _v14)


def connect(path: Path) -> sqlite_utils.Database:
    """Open (creating) the writer's connection: WAL, foreign keys, migrations applied.

    A damaged or unwritable store raises StoreError before anything is written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise PermissionError("permission denied")
        if path.exists():  # read it first: a damaged file is reported, never written to
            probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                probe.execute("select count(*) from sqlite_master").fetchone()
            finally:
                probe.close()
        with store_lock(path.parent):
            db = sqlite_utils.Database(path)
            db.execute("PRAGMA busy_timeout = 5000")
            db.enable_wal()
            db.execute("PRAGMA foreign_keys = ON")
            migrate(db)
    except (OSError, sqlite3.DatabaseError) as err:
        problem = store_problem(path, err)
        if problem is None:
            raise
        raise problem from None
    return db


def connect_readonly(path: Path) -> sqlite_utils.Database:
    """A reader's connection that can never take a write lock (dashboard, reports)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.OperationalError as err:
        if "unable to open" not in str(err) or not path.is_file():
            raise
        # A WAL store in a read-only folder cannot get its -shm file: no writer can be live there either, so
        # read it as the immutable file it is (an export or a look at an archived store still works).
        conn.close()
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    return sqlite_utils.Database(conn)


def migrate(db: sqlite_utils.Database) -> int:
    if "schema_migrations" not in db.table_names():
        db["schema_migrations"].create({"version": int, "applied_at": float}, pk="version")
    done = {row["version"] for row in db["schema_migrations"].rows}
    for version, step in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        with db.conn:
            step(db)
            db["schema_migrations"].insert({"version": version, "applied_at": now()})
    return len(MIGRATIONS)


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def loads(text: str | None, default: Any = None) -> Any:
    return json.loads(text) if text else default


def rows(db: sqlite_utils.Database, sql: str, params: Iterable[Any] | dict = ()) -> list[dict]:
    return [dict(row) for row in db.query(sql, params)]
