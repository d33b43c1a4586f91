"""Null controls (config nullControls 1|2): each round, byte-identical copies of the incumbent evaluated on
val beside the candidates under a fresh replicate salt (as --aa does; the cache would otherwise return the
incumbent's own cells), and gated against the incumbent as a candidate would be. Each round so stores its own
noise floor: the null's Δ and what the gate would have called it (a win, a loss or a tie; any call but a tie
is a false one).

A null is never an attempt: it is never integrated, kept or proposed, and its comparison never joins the
gate's pooled noise (Session.prior_comparisons reads attempts only). Its cells pass the run's one budget (the
evaluator).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from mutator.scoring import holm, keep
from mutator.scoring.gate import Gate
from mutator.scoring.score import CellFigures, Normalisers, per_task
from mutator.store.db import dumps, now
from mutator.store.nulls import insert_null, null_rows

if TYPE_CHECKING:
    from eval.suite import Suite
    from mutator.round.session import Session

CALLS = ("win", "loss", "tie")


def salt(run_id: str, round_no: int, copy: int) -> str:
    return f"null:{run_id}:{round_no}:{copy}"


def gate_against(session: Session, candidate: tuple[CellFigures, ...], incumbent: tuple[CellFigures, ...],
                 val_norm: Normalisers, *, exclude: int, suite_hash: str, tie_rule: str,
                 keep_rule: str = "lenient") -> Gate:
    """The run's gate over a comparison outside the round's own attempts (a confirmation, a null control), its
    verdict under `keep_rule` (mutator/scoring/keep.py; a null control's is the lenient gate's)."""
    s = session.settings
    prior = session.prior_comparisons(exclude=exclude, suite_hash=suite_hash)
    return keep.apply(keep_rule, holm.gate(per_task(candidate, session.weights, val_norm),
                                           per_task(incumbent, session.weights, val_norm), prior=prior,
                                           min_improvement=s.score.min_improvement, gate_z=s.score.gate_z,
                                           method=s.score.gate_method, tie_rule=tie_rule,
                                           model_gate=s.score.model_gate), prior)


def call(gate: Gate, min_improvement: float) -> str:
    """What the gate would call a comparison: a loss when it rejects, a win past the sequential win boundary
    (the mirror image of its reject line), else a tie."""
    if not gate.keep:
        return "loss"
    return "win" if holm.early(gate, min_improvement) == "win" else "tie"


def null_controls(session: Session, val: Suite, round_no: int, incumbent: str, val_norm: Normalisers, *,
                  tie_rule: str) -> list[dict]:
    """This round's null controls (run, or read when a resumed round stored them), each said in one line."""
    done = {r["copy"]: r for r in null_rows(session.db, session.run_id, round_no)}
    for copy in range(1, session.settings.null_controls + 1):
        if copy not in done:
            done[copy] = _measure(session, val, round_no, copy, incumbent, val_norm, tie_rule=tie_rule)
        row = done[copy]
        session.progress.say(f"  null control {copy} (the incumbent again, salt {row['salt']}): Δcomposite "
                             f"{row['delta']:+.4f} vs gate threshold {row['threshold']:+.4f} → the gate "
                             f"would call it "
                             f"{row['call']}" + ("" if row["call"] == "tie" else " (a false call: noise)"))
    return [done[c] for c in sorted(done)]


def _measure(session: Session, val: Suite, round_no: int, copy: int, incumbent: str, val_norm: Normalisers, *,
             tie_rule: str) -> dict:
    fresh = dataclasses.replace(session.contract, salt=salt(session.run_id, round_no, copy))
    null = session.account(session.measure(incumbent, val, f"round {round_no} · null control {copy} on val",
                                           contract=fresh), val, f"round {round_no} · null control {copy}")
    base = session.account(session.measure(incumbent, val, "val (cached)"), val,
                           f"round {round_no} · incumbent")
    gate = gate_against(session, null.cells, base.cells, val_norm, exclude=-1, suite_hash=val.content_hash,
                        tie_rule=tie_rule)
    row = {"run_id": session.run_id, "round": round_no, "copy": copy, "genome_hash": incumbent,
           "salt": fresh.salt, "evaluation_id": null.evaluation_id,
           "incumbent_evaluation_id": base.evaluation_id, "delta": gate.delta, "threshold": gate.threshold,
           "keep": int(gate.keep), "call": call(gate, session.settings.score.min_improvement),
           "gate": dumps(gate.to_json()), "created_at": now()}
    insert_null(session.db, row)
    return row
