"""Attempts as the run page, Round Analysis, the lineage, the A/A view and the mutator view read them: whole
rows, the light columns the curve reads, a round's siblings, and a genome's first attempt in its run."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import one, q
from mutator.store.queries.verdicts import has_confirm, touched_column, verdict_note_column, verdict_note_sql

ATTEMPT_LIST = ("id, run_id, round, sibling, parent_hash, genome_hash, status, verdict, summary, error, "
                "critic, val_evaluation_id, train_evaluation_id, composite, eval, cost, steps, delta, "
                "delta_eval, delta_cost, delta_steps, gate_threshold, gate_se, gate_df, gate_t, gate_n, "
                "diff_stat, mutator_cost_usd, started_at, finished_at, reason")
# What the curve and the incumbent per round read for every attempt of a run: the loop's stored decisions.
LIGHT_NAMES = ("round", "sibling", "genome_hash", "verdict", "status", "composite", "incumbent_after")
LIGHT = ", ".join(f"a.{name}" for name in LIGHT_NAMES)


def attempt_list(db: sqlite_utils.Database) -> str:
    """ATTEMPT_LIST plus `confirm` (null when the store lacks it: has_confirm) and the verdict's note."""
    confirm = has_confirm(db)
    return (f"{ATTEMPT_LIST}, {'confirm' if confirm else 'null as confirm'}, {touched_column(db)}, "
            f"{verdict_note_sql(confirm=confirm)} as verdict_note")


def decided_round(db: sqlite_utils.Database, run_id: str) -> int | None:
    """The last round of the run with a verdict stored."""
    return db.conn.execute("select max(round) from attempts where run_id = ? and verdict is not null",
                           [run_id]).fetchone()[0]


def light_with_train(db: sqlite_utils.Database, run_id: str) -> list:
    """Every attempt of the run in (round, sibling) order as plain rows: LIGHT_NAMES, then its train
    evaluation's eval, cost and steps (the curve covers every round: no per-row dicts)."""
    return db.conn.execute(f"select {LIGHT}, t.eval, t.cost, t.steps from attempts a left join evaluations t "
                           "on t.id = a.train_evaluation_id where a.run_id = ? order by a.round, a.sibling",
                           [run_id]).fetchall()


def light_rows(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """Every attempt of the run as {LIGHT_NAMES}, in (round, sibling) order."""
    cursor = db.conn.execute(f"select {LIGHT} from attempts a where a.run_id = ? order by a.round, a.sibling",
                             [run_id])
    return [dict(zip(LIGHT_NAMES, r)) for r in cursor.fetchall()]


def history_rows(db: sqlite_utils.Database, run_id: str) -> list:
    """Every attempt of the run as plain rows: id, its val eval, cost, steps, its train evaluation's eval,
    cost, steps, then LIGHT_NAMES (from index 7), in (round, sibling) order."""
    return db.conn.execute(
        f"select a.id, a.eval, a.cost, a.steps, t.eval, t.cost, t.steps, {LIGHT} from attempts a left join "
        "evaluations t on t.id = a.train_evaluation_id where a.run_id = ? order by a.round, a.sibling",
        [run_id]).fetchall()


def window(db: sqlite_utils.Database, run_id: str, low: int) -> list[dict]:
    """attempt_list of the run's attempts from round `low` on, in (round, sibling) order."""
    return q(db, f"select {attempt_list(db)} from attempts where run_id = ? and round >= ? "
                 "order by round, sibling", [run_id, low])


def aa_copies(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """What the A/A view reads of every attempt of an A/A run, in round order."""
    return q(db, "select id, round, verdict, delta, gate_threshold, gate_se, gate_t, gate from attempts "
                 "where run_id = ? order by round", [run_id])


def attempt(db: sqlite_utils.Database, attempt_id: int) -> dict | None:
    """The attempt's whole row and its verdict_note; None when there is none."""
    return one(db, f"select *, {verdict_note_column(db)} from attempts where id = ?", [attempt_id])


def seed_evaluations(db: sqlite_utils.Database, run_id: str) -> dict | None:
    """{val_evaluation_id, train_evaluation_id} of the run's seed (round 0's first attempt)."""
    return one(db, "select val_evaluation_id, train_evaluation_id from attempts where run_id = ? and round = "
                   "0 order by sibling limit 1", [run_id])


def first_of_genome(db: sqlite_utils.Database, run_id: str, genome_hash: str) -> dict | None:
    """{id, round, sibling, genome_hash, verdict, summary} of the run's first attempt producing
    `genome_hash`."""
    return one(db, "select id, round, sibling, genome_hash, verdict, summary from attempts where run_id = ? "
                   "and genome_hash = ? order by id limit 1", [run_id, genome_hash])


def siblings(db: sqlite_utils.Database, run_id: str, round_no: int) -> list[dict]:
    """A round's attempts by sibling: figures, status, error, reason and verdict_note."""
    return q(db, "select id, round, sibling, verdict, summary, delta, composite, status, error, reason, "
                 f"{verdict_note_column(db)} from attempts where run_id = ? and round = ? order by sibling",
             [run_id, round_no])


def lineage_nodes(db: sqlite_utils.Database, run_id: str) -> list[dict]:
    """Every attempt of the run as a lineage node (its edges and verdict), in (round, sibling) order."""
    return q(db, "select id as attempt_id, round, sibling, parent_hash, genome_hash, ref_hashes, verdict, "
                 f"status, summary, composite, delta, error, reason, {touched_column(db)}, "
                 f"{verdict_note_column(db)} from attempts "
                 "where run_id = ? order by round, sibling",
             [run_id])


def mutator_call(db: sqlite_utils.Database, attempt_id: int) -> dict | None:
    """The attempt's place and its mutator call's figures (cost, tokens, retries)."""
    return one(db, "select id, run_id, round, sibling, parent_hash, mutator_cost_usd, mutator_input_tokens, "
                   "mutator_output_tokens, mutator_cache_write_tokens, mutator_cache_read_tokens, "
                   "mutator_retries from attempts where id = ?", [attempt_id])


def genomes(db: sqlite_utils.Database, attempt_id: int) -> dict | None:
    """{parent_hash, genome_hash} of the attempt."""
    return one(db, "select parent_hash, genome_hash from attempts where id = ?", [attempt_id])


def train_evaluation_id(db: sqlite_utils.Database, run_id: str, round_no: int, sibling: int) -> int | None:
    """The train evaluation of the attempt at (round, sibling); None without one (or without the attempt)."""
    found = db.conn.execute("select train_evaluation_id from attempts where run_id = ? and round = ? and "
                            "sibling = ?", [run_id, round_no, sibling]).fetchone()
    return found[0] if found else None


def gate_text(db: sqlite_utils.Database, attempt_id: int) -> str | None:
    """The attempt's stored gate JSON, None when it has none (or there is no such attempt)."""
    found = db.conn.execute("select gate from attempts where id = ?", [attempt_id]).fetchone()
    return found[0] if found else None
