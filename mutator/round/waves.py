"""Cheaper decisions for one candidate: the kill-only train screen, then val in waves with early looks.

The screen runs a few train tasks (a seeded draw per round) and compares them with the incumbent's cells on
the same tasks and replicate indices; a decisive loss at the screen's z is SCREENED, and the screen never
keeps. Its cells are the candidate's own train cells (the same evaluation key), so a survivor that is later
evaluated on train reuses them. Val then runs one replicate of every task per wave; after each wave but the
last, a decisive loss or win at sequential.earlyZ decides (mutator/scoring/sequential.py), else the next wave
runs. The tie rule (score.tieRule) is applied at the last look only, the one a tie's verdict rests on: the
screen and the early looks decide nothing on a tie. Every look's gate figures are returned for the attempt
row, so each verdict re-derives from the store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eval.suite import Suite
from mutator.round.outcome import Outcome
from mutator.scoring import holm, keep
from mutator.scoring.gate import KEEP_TOLERANCE, Gate
from mutator.scoring.score import Comparison, Normalisers, Weights, per_task
from mutator.scoring.sequential import Design, early_decision, screen_tasks, wave
from mutator.store.db import now
from strategies.verdicts import AttemptStatus, Verdict

# (genome hash, suite, label, only) -> the outcome of just those cells, run as needed
Evaluate = Callable[[str, Suite, str, frozenset | None], Outcome]


@dataclass(frozen=True)
class Gating:
    """What the gate is made of for one run: weights, the gate's settings, how val is looked at and which ties
    the last look keeps."""
    weights: Weights
    min_improvement: float
    gate_z: float
    method: str
    design: Design
    tie_rule: str = "keep"   # score.tieRule, applied where a verdict rests (the last look), never before
    # score.modelGate: 'each' rejects a decisive loss on any model (scoring/holm.py)
    model_gate: str = "mean"
    # score.keepRule (mutator/scoring/keep.py), applied where a verdict rests (the last look), as the tie rule
    keep_rule: str = "lenient"

    @classmethod
    def for_settings(cls, settings, weights: Weights) -> Gating:
        """The run's gate and val design from its settings (the loop and --aa build it the same way)."""
        return cls(weights, settings.score.min_improvement, settings.score.gate_z, settings.score.gate_method,
                   Design(settings.replicates if settings.sequential.waves else 1, settings.score.gate_z,
                          settings.sequential.early_z), settings.score.tie_rule, settings.score.model_gate,
                   settings.score.keep_rule)

    def gate(self, candidate: Outcome, incumbent: Outcome, norm: Normalisers, *, z: float,
             prior: Sequence[Comparison], tie_rule: str = "keep", keep_rule: str = "lenient") -> Gate:
        return keep.apply(keep_rule, holm.gate(per_task(candidate.cells, self.weights, norm),
                                               per_task(incumbent.cells, self.weights, norm), prior=prior,
                                               min_improvement=self.min_improvement, gate_z=z,
                                               method=self.method, tie_rule=tie_rule,
                                               model_gate=self.model_gate), prior)


def look_json(look: int, replicates: int, gate: Gate, decision: str | None, z: float, *,
              against: int) -> dict:
    """One look's record; `against` is the incumbent's evaluation this look compared with (the gate's
    comparator)."""
    return {"look": look, "replicates": replicates, "cells": gate.n * replicates, "z": z,
            "decision": decision, "gate": gate.to_json(), "incumbent_evaluation_id": against}


@dataclass(frozen=True)
class Screen:
    """The screen's settings: tasks per candidate (0 = off), replicates and its z."""
    tasks: int
    replicates: int
    z: float

    def run(self, gating: Gating, evaluate: Evaluate, *, train: Suite, genome: str, incumbent: str,
            norm: Normalisers, seed: str, label: str) -> dict | None:
        """The screen's record ({tasks, replicates, cells, z, gate, decision}); decision 'loss' = SCREENED.
        None when off, or when the screen could decide nothing (fewer than 3 tasks)."""
        tasks = screen_tasks([t.id for t in train.tasks], self.tasks, seed)
        if len(tasks) < 3:
            return None
        cells = wave(tasks, self.replicates)
        mine = evaluate(genome, train, f"{label} · screen", cells)
        theirs = evaluate(incumbent, train, "the incumbent's screen cells (cached)", cells)
        if not (mine.complete and theirs.complete) or mine.n_failed or theirs.n_failed:
            return {"tasks": tasks, "replicates": self.replicates, "cells": len(cells), "z": self.z,
                    "decision": None, "skipped": "failed or missing cells: the candidate goes on to val"}
        gate = gating.gate(mine, theirs, norm, z=self.z, prior=())
        decision = "loss" if early_decision(keep=gate.keep, delta=gate.delta, t=gate.t, se=gate.se,
                                            min_improvement=gating.min_improvement) == "loss" else None
        return {"tasks": tasks, "replicates": self.replicates, "cells": len(cells), "z": self.z,
                "decision": decision, "gate": gate.to_json()}


def sequential_val(gating: Gating, evaluate: Evaluate, *, val: Suite, genome: str, incumbent: str,
                   norm: Normalisers, prior: Sequence[Comparison], label: str,
                   healthy: Callable[[Outcome], bool]) -> tuple[Outcome, Gate | None, list[dict]]:
    """Run val in waves until a look decides or the last wave is in. Returns the candidate's outcome over the
    cells run, the deciding look's gate (None when a wave is unhealthy: no verdict) and every look's record.
    An early look's per-task deltas average k of the K replicates, so each earlier comparison (made on all K)
    is pooled in with its scale widened by √(K/k): exact when the noise is the replicates', larger than the
    truth (so fewer early stops, never more false rejects) when part of it is the tasks' own spread."""
    design = gating.design
    task_ids = [t.id for t in val.tasks]
    looks: list[dict] = []
    outcome: Outcome | None = None
    for look in range(1, design.looks + 1):
        last = look == design.looks
        cells = None if last and design.looks == 1 else wave(task_ids, look)
        outcome = evaluate(genome, val, f"{label}" + ("" if design.looks == 1 else f" · wave "
                                                                                   f"{look}/{design.looks}"),
                           cells)
        if not healthy(outcome):
            return outcome, None, looks
        theirs = evaluate(incumbent, val, "val (cached)", cells)
        z = design.z(look)
        widen = math.sqrt(design.looks / look)
        gate = gating.gate(outcome, theirs, norm, z=z,
                           prior=prior if last else [Comparison(c.n, c.s_r * widen) for c in prior],
                           tie_rule=gating.tie_rule if last else "keep",
                           keep_rule=gating.keep_rule if last else "lenient")
        decision = None if last else holm.early(gate, gating.min_improvement)
        looks.append(look_json(look, look if cells is not None else len({c.replicate for c in outcome.cells}),
                               gate, decision, z, against=theirs.evaluation_id))
        if last or decision:
            return outcome, gate, looks
    raise AssertionError("unreachable: the last look always decides")


def screen_fields(record: dict) -> dict:
    """The attempt's columns for a screen's record: a SCREENED verdict with its Δ and threshold on a loss.

    A Δ at its threshold (not below it by more than the gate's tolerance; the exact sign-flip count can reject
    there) is a tie, worded as one, never a decisive loss; the figures carry enough digits to tell Δ from the
    threshold whenever they differ."""
    if record["decision"] != "loss":
        return {}
    gate = record["gate"]
    delta, threshold = gate["delta"], gate["threshold"]
    digits = 4
    while digits < 12 and f"{delta:+.{digits}f}" == f"{threshold:+.{digits}f}" and delta != threshold:
        digits += 1
    tie = delta >= threshold - KEEP_TOLERANCE   # the gate keeps this Δ by its threshold
    how = ("a tie at the threshold, screened out by the exact sign-flip count (not a decisive loss)" if tie
           else "a decisive loss")
    return {"status": AttemptStatus.SCREENED, "verdict": Verdict.SCREENED, "delta": delta,
            "gate_threshold": threshold,
            "error": f"screened out on {len(record['tasks'])} train tasks ({record['cells']} cells): Δ "
                     f"{delta:+.{digits}f} vs threshold {threshold:+.{digits}f} at screen z "
                     f"{record['z']:g}, {how}",
            "finished_at": now()}


def looked_at(looks: list[dict] | None, val: Suite) -> frozenset | None:
    """The val cells a scored attempt's verdict rests on: the waves it ran (None: every cell)."""
    if not looks or looks[-1]["decision"] is None:   # the last look: every cell
        return None
    return wave([t.id for t in val.tasks], looks[-1]["replicates"])
