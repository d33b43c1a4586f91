"""The attempts table's rows (the researcher's sortable table and its CSV): every attempt of a run, or of
every run of a skill, with its val evaluation's cell and failure counts, as stored."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import q
from mutator.store.queries.verdicts import verdict_note_column

SQL = """
select a.id, a.run_id, a.round, a.sibling, a.parent_hash, a.genome_hash, a.summary, a.status, a.verdict,
  a.reason,
  a.error, a.comparator_hash, a.gate is not null as gated, a.incumbent_after, {note}, a.delta,
  a.gate_threshold, a.composite, a.eval, a.cost, a.steps, a.mutator_cost_usd, e.n_cells as cells,
  e.n_failed as failures, a.finished_at - a.started_at as duration_s
from attempts a left join evaluations e on e.id = a.val_evaluation_id
where {where} order by a.run_id, a.round, a.sibling"""


def rows(db: sqlite_utils.Database, *, run_id: str | None = None, skill: str | None = None) -> list[dict]:
    """One run's attempts (`run_id`), or every run's of a skill, run by run in round order."""
    note = verdict_note_column(db, "a.")
    if run_id is not None:
        return q(db, SQL.format(where="a.run_id = ?", note=note), [run_id])
    of_skill = "a.run_id in (select id from runs where skill_name = ?)"
    return q(db, SQL.format(where=of_skill, note=note), [skill])
