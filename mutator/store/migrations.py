"""The store's schema, one named migration per change: adding one is one decorated function at the end.

    @migration()
    def cell_telemetry(db: sqlite_utils.Database) -> None:
        db["cells"].add_column("skill_loaded_turn", int)

`sqlite_utils.Migrations` (sqlite-utils >= 4.2) applies the pending ones in the order they are written, each
in one transaction with its record in `_sqlite_migrations` (set "skill-mutator"), so a name runs once per
store whatever order branches land in. Stores made before names (table `schema_migrations`, versions 1..13 by
position) are adopted first: each applied version is recorded under its name (`POSITIONAL`), so nothing
re-runs. A released migration is never edited; a new one is appended.
"""

from __future__ import annotations

import datetime
import json

import sqlite_utils

from eval.errors import SkillMutatorError

migration = sqlite_utils.Migrations("skill-mutator")


@migration()
def base_tables(db: sqlite_utils.Database) -> None:   # was _v1
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


@migration()
def test_report(db: sqlite_utils.Database) -> None:   # was _v2
    # The honest test report (champion vs seed: paired Δ ± SE, CI, sign test, McNemar; train/val beside it).
    db["test_runs"].add_column("report", str)


@migration()
def solve_meta_skill_and_confirm(db: sqlite_utils.Database) -> None:   # was _v3
    # Solve phase, meta skill and val accounting per run; the winner's-curse confirmation per attempt.
    db["runs"].add_column("solve", str)          # JSON: per-task best solve score, passes used, cost
    db["runs"].add_column("meta_skill", str)     # JSON list of {round, lessons, cost_usd}
    db["runs"].add_column("val_queries", int)    # candidate evaluations that queried val
    db["runs"].add_column("confirm", int)        # 1 when keeps are re-checked on fresh val replicates
    db["attempts"].add_column("confirm", str)    # JSON: fresh evaluations, confirmed gate, stands/overturned


@migration()
def after_the_run(db: sqlite_utils.Database) -> None:   # was _v4
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


@migration()
def attempts_by_genome(db: sqlite_utils.Database) -> None:   # was _v5
    # Parent / champion lookups (loop evidence, dashboard, test report) filter attempts by run and genome.
    db["attempts"].create_index(["run_id", "genome_hash"])


@migration()
def honest_failures(db: sqlite_utils.Database) -> None:   # was _v6
    # Honest failures: a cell's infrastructure retries and the cost of its earlier tries (a re-run replaces
    # an infra_error cell, its spend stays counted); an evaluation's failure counts by kind.
    db["cells"].add_column("retries", int, not_null_default=0)
    db["cells"].add_column("prior_cost_usd", float, not_null_default=0.0)
    db["cells"].add_column("grader_cost_usd", float, not_null_default=0.0)   # an LLM judge's own calls
    db["evaluations"].add_column("n_failed", int)
    db["evaluations"].add_column("failures", str)        # JSON {status: count} of the cells that are not ok
    # JSON: the val evaluation's failure counts, when FAILED
    db["attempts"].add_column("failures", str)


@migration()
def heartbeats(db: sqlite_utils.Database) -> None:   # was _v7
    # Liveness: a running writer beats these every few seconds; a dead one's record shows as `stale`.
    # Idempotent: when migrations were numbered by position, a branch may have run
    # this one under another number.
    for table in ("runs", "test_runs", "health_checks"):
        if "heartbeat_at" not in db[table].columns_dict:
            db[table].add_column("heartbeat_at", float)


@migration()
def call_usage_and_suite_paths(db: sqlite_utils.Database) -> None:   # was _v8
    # What each call really used, not only its cost: a cell's priced and agent-reported cost side by side
    # and its API retries and its judge's tokens; a mutation's tokens (input, output, cache write, cache
    # read), retries and costs. api_retries: API calls the agent itself retried (cells.retries, from _v6,
    # counts the harness's re-runs)
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


@migration()
def watch_triggers(db: sqlite_utils.Database) -> None:   # was _v9
    # The opt-in watch (mutator/mining/watch.py): one row per tick, whatever it decided.
    if "triggers" in db.table_names():
        return
    db["triggers"].create({
        "id": int, "at": float, "skill_dir": str, "suites": str, "traces_seen": int, "eligible": int,
        "new_eligible": int, "min_traces": int, "outcome": str, "run_id": str, "proposal_id": int,
        "reason": str, "watermark": float, "finished_at": float,
    }, pk="id", not_null={"at", "skill_dir", "suites", "outcome"})
    db["triggers"].create_index(["suites", "id"])
    db["triggers"].create_index(["at"])


@migration()
def cell_node(db: sqlite_utils.Database) -> None:   # was _v10
    # Which machine ran each cell: "local", or the Ray node id under --executor ray (eval/executors).
    if "node" not in db["cells"].columns_dict:
        db["cells"].add_column("node", str)


@migration()
def several_models_and_control(db: sqlite_utils.Database) -> None:   # was _v11
    # Several eval models: an evaluation over models a,b is a group row whose `members` = {model: evaluation
    # id} of the one-model evaluations it is made of (each cached under its own key, so a later one-model or
    # two-model run reuses them); its cells are theirs. A run's per-model seed normalisers
    # ({"val"|"train": [[model, seed_cost, seed_steps], ...]}), so each model's composite re-derives.
    db["evaluations"].add_column("members", str)
    db["runs"].add_column("seed_models", str)
    # The no-skill control of a test run: the suite measured with no skill installed.
    db["test_runs"].add_column("control_evaluation_id", int)


@migration()
def watch_judge_cost(db: sqlite_utils.Database) -> None:   # was _v12
    # What a watch tick's judge pass over the mined requests cost (mining.json's judge.cost_usd), so it counts
    # in the store's spend, the Cost page and the daily budget like every other model call.
    if "triggers" in db.table_names() and "judge_cost_usd" not in db["triggers"].columns_dict:
        db["triggers"].add_column("judge_cost_usd", float)


@migration()
def screen_and_looks(db: sqlite_utils.Database) -> None:   # was _v13
    # Cheaper decisions (mutator/scoring/sequential.py): the kill-only train screen's record and every look of
    # sequential val, each with its gate figures, so a SCREENED or early verdict re-derives from the store.
    for name in ("screen", "looks"):
        if name not in db["attempts"].columns_dict:
            db["attempts"].add_column(name, str)


@migration()
def agent_keys(db: sqlite_utils.Database) -> None:
    # Agent work keyed apart from grading (eval/suite_parts.py): an evaluation's agent key (its stored rows
    # get theirs when next opened: same key, same suite), the cell whose agent run a re-graded cell reuses
    # (its agent cost is that cell's, never spent twice), a run's id by the agent-side identity (a run made
    # before keeps its id and is found by this one) and its suites' manifests (to
    # name what changed). Idempotent.
    for table, column in (("evaluations", "agent_key"), ("cells", "agent_cell_id"), ("runs", "identity_id"),
                          ("runs", "suites")):
        if column not in db[table].columns_dict:
            db[table].add_column(column, int if column == "agent_cell_id" else str)
    db["evaluations"].create_index(["agent_key"], if_not_exists=True)
    db["runs"].create_index(["identity_id"], if_not_exists=True)


@migration()
def run_skill_dir(db: sqlite_utils.Database) -> None:
    # The run's own skill folder (resolved), so --propose RUN prints an accept line aimed at it, not at the
    # config's skillDir.
    if "skill_dir" not in db["runs"].columns_dict:
        db["runs"].add_column("skill_dir", str)


@migration()
def stored_decisions(db: sqlite_utils.Database) -> None:
    # Decisions are stored, never re-derived: why each attempt got its verdict (the strategy's words for KEEP
    # and REJECT, the loop's for the rest) and the incumbent once its round was integrated. Runs stored before
    # this get both filled in once, with the dashboard's derivation of the day (mutator/store/backfill.py).
    from mutator.store import backfill
    for name in ("reason", "incumbent_after"):
        if name not in db["attempts"].columns_dict:
            db["attempts"].add_column(name, str)
    backfill.fill(db)


@migration()
def spend_ledger(db: sqlite_utils.Database) -> None:
    # One row per charge (mutator/store/ledger.py), so every figure of a run's spend is one SQL sum. A store
    # made before keeps each run's total as one row "before itemised spend" (at its last update), a health
    # check's cost and a watch tick's judge pass as theirs: a run's sum equals its
    # runs.cost_usd, as it does from now on.
    db["charges"].create({"id": int, "run_id": str, "kind": str, "usd": float, "at": float,
                          "evaluation_id": int, "attempt_id": int, "ref": str},
                         pk="id", not_null={"kind", "usd", "at"}, if_not_exists=True)
    db["charges"].create_index(["run_id", "kind"], if_not_exists=True)
    db["charges"].create_index(["at"], if_not_exists=True)
    db["charges"].create_index(["ref"], unique=True, if_not_exists=True)
    from mutator.store import ledger
    db.execute(f"insert or ignore into charges ({ledger.COLUMNS}) {ledger.before_ledger(db)}")


@migration()
def test_looks(db: sqlite_utils.Database) -> None:
    # A sealed test (mutator/store/looks.py): each finished test run's look number at its suite for its skill
    # (a repeated test of the same champion is that look again: `repeat_of` its first test), how it was asked
    # for (`kind`: test | compare) and the suite's content hash; a run's `seal_test` makes its first champion
    # test on a suite final. Test runs stored before this are numbered once, in the order they were made.
    from mutator.store import looks
    for table, column, kind in (("test_runs", "look", int), ("test_runs", "repeat_of", int),
                                ("test_runs", "kind", str), ("test_runs", "suite_hash", str),
                                ("runs", "seal_test", int)):
        if column not in db[table].columns_dict:
            db[table].add_column(column, kind)
    looks.number_all(db)


@migration()
def run_gate_method(db: sqlite_utils.Database) -> None:
    # How a run's gate decides, as columns beside gate_z (its id is unchanged: the identity names a method
    # only when it is not 't', a model rule only when it is not 'mean'): a run whose
    # identity names no method ran 't'.
    for column in ("gate_method", "model_gate"):
        if column not in db["runs"].columns_dict:
            db["runs"].add_column(column, str)
    for run in db.query("select id, config from runs where gate_method is null"):
        identity = json.loads(run["config"] or "{}") or {}
        db["runs"].update(run["id"], {"gate_method": identity.get("gate_method") or "t",
                                      "model_gate": identity.get("model_gate") or "mean"})


@migration()
def gate_comparator(db: sqlite_utils.Database) -> None:
    # What each gate compared with: the incumbent's genome and the evaluation of it the deciding look read.
    # Older attempts keep null; the dashboard then falls back to the run's own stored
    # evaluation (never another run's).
    for name, kind in (("comparator_hash", str), ("comparator_evaluation_id", int)):
        if name not in db["attempts"].columns_dict:
            db["attempts"].add_column(name, kind)


@migration()
def run_command_and_notes(db: sqlite_utils.Database) -> None:
    # The command line that started a run (secrets redacted; null for older runs), and a researcher's name,
    # tags and note per run or attempt, in a table of their own (written by run.py
    # --note, never by the dashboard).
    if "command" not in db["runs"].columns_dict:
        db["runs"].add_column("command", str)
    if "notes" not in db.table_names():
        db["notes"].create({"target": str, "name": str, "tags": str, "note": str, "updated_at": float},
                           pk="target")


@migration()
def cell_skill_use(db: sqlite_utils.Database) -> None:
    # What each cell's agent did with the skill (eval/skill_use.py::SkillUse as JSON: loaded, turn, files
    # read, scripts run, read tokens estimated). Null for older cells and bare cells;
    # evaluation keys are unchanged.
    if "skill_use" not in db["cells"].columns_dict:
        db["cells"].add_column("skill_use", str)


@migration()
def trigger_scores(db: sqlite_utils.Database) -> None:
    # Triggering (issue 31): a run's score.wTrigger (null before it existed: 0), and per evaluation its
    # trigger recall and false-trigger rate beside eval, with the ids of its trigger:false tasks (JSON) so
    # both re-derive from the cells' skill_use rows alone.
    if "w_trigger" not in db["runs"].columns_dict:
        db["runs"].add_column("w_trigger", float)
    for name, kind in (("trigger_recall", float), ("false_trigger_rate", float), ("no_trigger_tasks", str)):
        if name not in db["evaluations"].columns_dict:
            db["evaluations"].add_column(name, kind)


@migration()
def null_controls(db: sqlite_utils.Database) -> None:
    # Per-round null controls (mutator/round/nulls.py): a byte-identical copy of the incumbent under a fresh
    # salt, its Δ against the incumbent and the gate's call on it; a store made before
    # has none (nullControls was 0).
    db["null_controls"].create({"id": int, "run_id": str, "round": int, "copy": int, "genome_hash": str,
                                "salt": str,
                                "evaluation_id": int, "incumbent_evaluation_id": int, "delta": float,
                                "threshold": float, "keep": int, "call": str, "gate": str,
                                "created_at": float},
                               pk="id", if_not_exists=True)
    db["null_controls"].create_index(["run_id", "round", "copy"], unique=True, if_not_exists=True)


@migration()
def change_counts(db: sqlite_utils.Database) -> None:
    # How many rows of attempts and evaluations any connection has inserted, updated or deleted (a counter
    # each, bumped by a trigger in the store), so a long-lived reader can tell its own changes from another
    # process's (mutator/store/figures.py) and re-read only what changed. Older code
    # writing a newer store bumps it too.
    db.execute("create table if not exists store_changes (tbl text primary key, n integer not null)")
    for table in ("attempts", "evaluations"):
        db.execute("insert or ignore into store_changes (tbl, n) values (?, 0)", [table])
        for op in ("insert", "update", "delete"):
            db.execute(f"create trigger if not exists store_changes_{table}_{op} after {op} on {table} begin "
                       f"update store_changes set n = n + 1 where tbl = '{table}'; end")


@migration()
def skills_touched(db: sqlite_utils.Database) -> None:
    # Which skill(s) of a skill set an attempt's change touched (eval/skill_set.py; comma-separated member
    # names, derived from the changed paths); null for a one-skill genome and for attempts from before.
    db["attempts"].add_column("skills_touched", str)


@migration()
def test_run_spend(db: sqlite_utils.Database) -> None:
    # What each test (--test-run, --compare) added to its run's spend: the cells it ran, their judges; 0 when
    # every evaluation came from the cache; null for tests from before.
    if "spent_usd" not in db["test_runs"].columns_dict:
        db["test_runs"].add_column("spent_usd", float)


# The positional versions stores were migrated with before names: version -> the migration's name. Never edit
# a line; a positional `_vN` that landed on main after this table (and ran on someone's store) is added here.
POSITIONAL: dict[int, str] = {
    1: "base_tables", 2: "test_report", 3: "solve_meta_skill_and_confirm", 4: "after_the_run",
    5: "attempts_by_genome", 6: "honest_failures", 7: "heartbeats", 8: "call_usage_and_suite_paths",
    9: "watch_triggers", 10: "cell_node", 11: "several_models_and_control", 12: "watch_judge_cost",
    13: "screen_and_looks",
}


class MigrationError(SkillMutatorError, RuntimeError):
    """The store was migrated by code this checkout does not know; the message
    names the version and the fix."""


def adopt_positional(db: sqlite_utils.Database) -> list[str]:
    """Record a pre-names store's applied versions under their names (once); returns the names adopted."""
    if "schema_migrations" not in db.table_names():
        return []
    applied = {m.name for m in migration.applied(db)}
    found = sorted(db["schema_migrations"].rows, key=lambda row: row["version"])
    unknown = [row["version"] for row in found if row["version"] not in POSITIONAL]
    if unknown:
        raise MigrationError(f"{db.conn.execute('PRAGMA database_list').fetchone()[2]}: positional "
                             f"migration(s) {unknown} were applied by other code (a branch); this checkout "
                             "does not know them. Open the store with the code that wrote it, or add the "
                             "version's name to mutator/store/migrations.py POSITIONAL")
    adopted = [(POSITIONAL[row["version"]], row["applied_at"]) for row in found
               if POSITIONAL[row["version"]] not in applied]
    if adopted:
        migration.ensure_migrations_table(db)
        with db.atomic():
            db[migration.migrations_table].insert_all(
                {"migration_set": migration.name, "name": name,
                 "applied_at": str(datetime.datetime.fromtimestamp(at or 0, datetime.UTC))}
                for name, at in adopted)
    return [name for name, _ in adopted]


def migrate(db: sqlite_utils.Database) -> list[str]:
    """Bring the store to this code's schema; returns the names applied now (adopted ones are not applied)."""
    adopt_positional(db)
    pending = [m.name for m in migration.pending(db)]
    migration.apply(db)
    return pending
