"""The dashboard's skill telemetry: per evaluation a file × (read share, run share) table from the cells'
stored `skill_use` (mutator/store/skill_use.py), the candidate beside its parent so a round shows how they
moved, and the trigger rates the loop stored on each evaluation (mutator/store/triggers.py: recall,
false-trigger rate, the no-trigger tasks), with how they moved round by round. Reads the store and the genome
folders only, never re-derives a rate; tokens reading the skill are an estimate and labelled so.
"""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from mutator.server.stores import inside
from mutator.store import cache
from mutator.store.queries import evaluations
from mutator.store.queries.rows import has_column, loads
from mutator.store.skill_use import evaluation_tally, skill_files
from mutator.store.triggers import stored_rates


def trigger_rounds(db: sqlite_utils.Database, run_id: str, split: str) -> list[dict]:
    """Every attempt of the run evaluated on `split` with stored rates, in round order: how triggering
    moved."""
    if not has_column(db, "evaluations", "trigger_recall"):
        return []
    return [{**r, "no_trigger_tasks": len(loads(r["no_trigger_tasks"], []))}
            for r in evaluations.trigger_rounds(db, run_id, split)]


def tally_of(db: sqlite_utils.Database, evaluation_id: int | None, genome_hash: str | None,
             data_dir: Path | None) -> dict | None:
    """One evaluation's tally (a group's over its members), every file of its genome listed, and its stored
    trigger rates; None when none of its cells has telemetry (cells stored before it, or bare cells)."""
    if not evaluation_id:
        return None
    folder = inside(data_dir, data_dir / "genomes" / genome_hash) if data_dir and genome_hash else None
    ids = list(cache.member_ids(db, evaluation_id).values()) or [evaluation_id]
    found = evaluation_tally(db, ids, skill_files(folder) if folder else ())
    return {**found.to_json(), "lines": found.lines(), "summary": found.summary(),
            "triggers": stored_rates(db, evaluation_id)} if found.cells else None


def skill_use(db: sqlite_utils.Database, *, candidate: tuple[int | None, str | None],
              parent: tuple[int | None, str | None], data_dir: Path | None, run_id: str = "",
              split: str = "val") -> dict | None:
    """{candidate, parent} tallies of one attempt on one split, and the run's trigger rates round by round on
    it; None when the candidate has no telemetry."""
    mine = tally_of(db, *candidate, data_dir)
    return {"candidate": mine, "parent": tally_of(db, *parent, data_dir),
            "trigger_rounds": trigger_rounds(db, run_id, split) if run_id else []} if mine else None
