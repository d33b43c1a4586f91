"""Audit export of one run (`run.py --audit RUN --out FILE.json|.csv`): for review outside the tool.

Every attempt with its verdict, critic gate rows, noise-gate figures and cost (its mutator call plus
the cells of the evaluations it ran first), then every proposal decision. Reads the store read-only.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from eval.errors import SkillMutatorError
from mutator.after.spend import run_spend
from mutator.store.attempt_reads import attempts_of_run
from mutator.store.db import connect_readonly, loads
from mutator.store.proposals import decisions_of_run
from mutator.store.run_lookup import recent_run_ids, run_row
from mutator.store.spending import cell_cost_by_evaluation

GATE_FIGURES = ("delta", "delta_eval", "delta_cost", "delta_steps", "gate_threshold", "gate_se", "gate_s",
                "gate_df", "gate_t", "gate_n")
COLUMNS = ("kind", "round", "sibling", "status", "verdict", "genome_hash", "parent_hash", "summary", "critic",
           "confirm", *GATE_FIGURES, "composite", "eval", "cost", "steps", "mutator_cost_usd",
           "cells_cost_usd", "cost_usd", "error", "at", "proposal_id", "action", "status_from", "status_to",
           "note")


class AuditError(SkillMutatorError, ValueError):
    """The audit cannot be written as asked; the message says the fix."""


def audit(db_path: Path, run_id: str) -> dict:
    if not db_path.is_file():
        raise AuditError(f"no store at {db_path}; pass the --data-dir the run was made with")
    db = connect_readonly(db_path)
    try:
        run = run_row(db, run_id)
        if run is None:
            known = recent_run_ids(db)
            raise AuditError(f"run {run_id!r} is not in {db_path}; recent runs: "
                             f"{', '.join(known) or '(none)'}")
        # what the run was charged for each evaluation's cells (agents and judge; a cached one was paid by the
        # run that ran it, a re-graded cell's agent once, where it ran)
        cell_cost = cell_cost_by_evaluation(db, run_id)
        attempts, counted = [], set()
        for a in attempts_of_run(db, run_id):
            # a cached evaluation is paid once: counted on the first of this run's attempts that used it
            paid = [e for e in (a["val_evaluation_id"], a["train_evaluation_id"])
                    if e is not None and e in cell_cost and e not in counted]
            counted.update(paid)
            cells = sum(cell_cost.get(e, 0.0) or 0.0 for e in paid)
            confirm = loads(a["confirm"])
            attempts.append({
                "kind": "attempt", **{k: a[k] for k in ("round", "sibling", "status", "verdict",
                                                        "genome_hash", "parent_hash", "summary",
                                                        *GATE_FIGURES, "composite", "eval", "cost", "steps",
                                                        "error")},
                "critic": loads(a["critic"], []), "gate": loads(a["gate"]), "confirm": confirm,
                "mutator_cost_usd": a["mutator_cost_usd"] or 0.0, "cells_cost_usd": cells,
                "cost_usd": (a["mutator_cost_usd"] or 0.0) + cells,
                "at": a["finished_at"] or a["started_at"]})
        spend = run_spend(db, run_id)
        decisions = decisions_of_run(db, run_id)
    finally:
        db.conn.close()
    return {"run": run, "attempts": attempts, "decisions": [{"kind": "decision", **d} for d in decisions],
            "totals": {"attempts": len(attempts), "cost_usd_recorded_on_run": run["cost_usd"],
                       "cost_usd_run": spend["total"], "cost_usd_by_kind": spend["kinds"],
                       "cost_usd_attempts": sum(a["cost_usd"] for a in attempts)}}


def _cell(value) -> str | float | int | None:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return value


def write(db_path: Path, run_id: str, out: Path) -> Path:
    """JSON (the whole record) or CSV (one row per attempt, then one per decision; JSON in text cells)."""
    if out.suffix not in (".json", ".csv"):
        raise AuditError(f"--out {out}: name a .json or .csv file")
    record = audit(db_path, run_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".json":
        out.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")
        return out
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in record["attempts"]:
            critic = "; ".join(f"{c['gate']}:{c['verdict']}"
                               + (f" ({c['reason']})" if c.get("reason") else "")
                               for c in row["critic"])
            writer.writerow({**{k: _cell(v) for k, v in row.items()}, "critic": critic})
        for row in record["decisions"]:
            writer.writerow({k: _cell(v) for k, v in row.items()})
    return out
