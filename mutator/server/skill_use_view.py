"""The dashboard's skill telemetry: per evaluation a file × (read share, run share) table from the cells'
stored `skill_use` (mutator/store/skill_use.py), the candidate beside its parent so a round shows how they
moved, and the trigger rates the loop stored on each evaluation (mutator/store/triggers.py: recall,
false-trigger rate, the no-trigger tasks), with how they moved round by round. Reads the store and the genome
folders only, never re-derives a rate; tokens reading the skill are an estimate and labelled so.
"""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from mutator.server.stages import STOPPED
from mutator.server.stores import inside
from mutator.store import cache
from mutator.store.queries import evaluations
from mutator.store.queries.rows import loads
from mutator.store.skill_use import evaluation_tally, skill_files
from mutator.store.triggers import stored_rates

NONE_IN_RUN = ("no attempt of this run has skill-use data on {split}: none of its evaluations stores trigger "
               "rates (its cells were stored before telemetry, or run without the skill)")
NO_TELEMETRY = ("rounds not listed: neither this candidate nor the seed has skill-use data on {split} (a run "
                "stored before telemetry, or run without the skill)")


def trigger_rounds(db: sqlite_utils.Database, run_id: str, split: str, *, stale: bool = False,
                   attempt_id: int | None = None) -> tuple[list[dict], str | None]:
    """Every attempt of the run, in round order, with the rates stored on its `split` evaluation, or `reason`:
    why it has none, read from the stored rows (no evaluation and why, no cells, no readable stream, no skill
    use recorded); [] when no attempt of the run has rates (NONE_IN_RUN says so once). Beside it the reason of
    attempt `attempt_id` (None when it has rates). `stale`: the run's writer died (an undecided attempt was
    stopped, not pending). Only the cells of evaluations without rates are counted, in one read."""
    found = evaluations.trigger_rounds(db, run_id, split)
    rated = {r["attempt_id"] for r in found if r["trigger_recall"] is not None
             or r["false_trigger_rate"] is not None}
    shown = found if rated else [r for r in found if r["attempt_id"] == attempt_id]
    bare = [r for r in shown if r["evaluation_id"] and r["attempt_id"] not in rated]
    member_of = {r["evaluation_id"]: list(loads(r["members"], {}).values()) or [r["evaluation_id"]]
                 for r in bare}
    counts = evaluations.telemetry_counts(db, sorted({i for ids in member_of.values() for i in ids}))
    out = []
    for r in shown:
        tally = [counts.get(i) or {"cells": 0, "with_use": 0, "streamed": 0}
                 for i in member_of.get(r["evaluation_id"], [])]
        cells = {k: sum(t[k] or 0 for t in tally) for k in ("cells", "with_use", "streamed")}
        out.append({**{k: r[k] for k in ("attempt_id", "round", "sibling", "verdict", "genome_hash",
                                         "evaluation_id", "trigger_recall", "false_trigger_rate")},
                    "no_trigger_tasks": len(loads(r["no_trigger_tasks"], [])),
                    "reason": None if r["attempt_id"] in rated else why_none(r, cells, split, stale)})
    own = next((r["reason"] for r in out if r["attempt_id"] == attempt_id), None)
    return (out if rated else []), own


def why_none(row: dict, cells: dict, split: str, stale: bool) -> str:
    """Why an attempt shows no skill use on `split`, in words, from its stored row and its cells' counts."""
    if row["evaluation_id"]:
        n = cells["cells"]
        if not n:
            return f"its {split} evaluation has no cells" + (
                "" if row["evaluation_status"] in (None, "done") else f" yet ({row['evaluation_status']})")
        if not cells["streamed"]:
            return f"no agent stream of its {n} cells could be read"
        if not cells["with_use"]:
            return f"none of its {n} cells recorded skill use (run without the skill, or stored before " \
                   "telemetry)"
        return f"{cells['with_use']} of its {n} cells recorded skill use, but no trigger rates are stored " \
               "on the evaluation (stored before them)"
    verdict, status, error = row["verdict"], row["status"], row["error"] or ""
    if verdict == "CRITIC" or status == "critic_rejected":
        return f"no {split} evaluation: the critic rejected the candidate before any cell ran" + (
            f" ({error})" if error else "")
    if verdict == "SCREENED" or status == "screened":
        spent = f" after {row['screen_cells']} train cells" if row["screen_cells"] else ""
        decision = f" ({row['screen_decision']})" if row["screen_decision"] else ""
        return f"no {split} evaluation: the screen stopped the candidate{spent}{decision}"
    if verdict == "FAILED" or status == "failed" or error:
        return f"no {split} evaluation: the mutation failed" + (f" ({error})" if error else "")
    if verdict is None:
        return STOPPED + " before its evaluation" if stale else f"no {split} evaluation yet (in progress)"
    if split == "train":
        return "not evaluated on train (only validation-selected candidates are)"
    return f"no {split} evaluation stored ({verdict})"


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
              split: str = "val", stale: bool = False, attempt_id: int | None = None,
              seed_evaluation: int | None = None, attempt: dict | None = None) -> dict:
    """{candidate, parent} tallies of one attempt on one split and the run's every attempt round by round on
    it (its stored trigger rates, or why it has none); `reason`: why the candidate has no tally (None when it
    has one); `run_reason`: why no round is listed. The rounds are read unless neither the candidate's
    evaluation nor the seed's (`seed_evaluation`) has skill-use data: a run stored before telemetry (or
    without the skill) is not read attempt by attempt to say so (`attempt`: the attempt's stored row, for the
    reason of one with no evaluation)."""
    mine = tally_of(db, *candidate, data_dir)
    if run_id and mine is None and (candidate[0] or attempt) and not stored_rates(db, seed_evaluation):
        screen = (attempt or {}).get("screen") or {}
        row = {"evaluation_id": candidate[0], "evaluation_status": None, **{
            k: (attempt or {}).get(k) for k in ("verdict", "status", "error")},
            "screen_cells": screen.get("cells"), "screen_decision": screen.get("decision")}
        own = why_none(row, _counts(db, candidate[0]) if candidate[0] else {}, split, stale)
        return {"candidate": None, "parent": None, "trigger_rounds": [], "reason": own,
                "run_reason": NO_TELEMETRY.format(split=split)}
    rounds, own = trigger_rounds(db, run_id, split, stale=stale,
                                 attempt_id=attempt_id) if run_id else ([], None)
    reason = None if mine else own or ("no cell of this evaluation recorded skill use (bare cells, or stored "
                                       "before telemetry)")
    return {"candidate": mine, "parent": tally_of(db, *parent, data_dir) if mine else None,
            "trigger_rounds": rounds, "reason": reason,
            "run_reason": None if rounds or not run_id else NONE_IN_RUN.format(split=split)}


def _counts(db: sqlite_utils.Database, evaluation_id: int) -> dict:
    """{cells, with_use, streamed} of one evaluation (a group's over its members)."""
    ids = list(cache.member_ids(db, evaluation_id).values()) or [evaluation_id]
    found = evaluations.telemetry_counts(db, ids).values()
    return {k: sum(c[k] or 0 for c in found) for k in ("cells", "with_use", "streamed")}
