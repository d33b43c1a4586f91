"""The tie rule: which of the noise gate's statistical ties are kept (DESIGN.md "Noise gate", README "Ties").

The gate keeps every change that is not a decisive loss. A tie is a change the gate keeps although its Δ is
below minImprovement. Under 'noAddedCost' (the default) a tie is kept only when it does not make the skill
dearer: the mean change of its cost and steps terms must not be a fall beyond noise, a one-sided Student-t
test at the level 1 − Φ(COST_Z) on its own per-task changes (any fall counts when those changes carry no
noise, as with deterministic costs). A change that adds turns for the same score then no longer rides in on
noise. The rule only turns some of the gate's keeps into rejects, and never for a change that costs the same
(but for that 0.13% of noise), so the gate's false-reject rate on such a change is the designed one. Pure
numbers; never touches the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scipy import special

# 'keep': every tie kept (DESIGN.md's gate as first written); 'noAddedCost': a tie
# kept only when it adds no cost
TIE_RULES = ("keep", "noAddedCost")
# A fall of the cost+steps terms counts as added cost only when it is that unlikely under no change: P = 1 −
# Φ(3) = 0.13% for normal per-task noise at every task count (Student t, n − 1 df), so an
# A/A copy keeps the gate's verdict
COST_Z = 3.0
TOLERANCE = 1e-12   # as gate.KEEP_TOLERANCE: a verdict must not flip on the last bit of a float sum


class Terms(Protocol):
    cost_term: float
    steps_term: float


@dataclass(frozen=True)
class TieCheck:
    """The tie rule's figures for one comparison, stored in the gate JSON as `tie`."""

    rule: str
    gate_keep: bool       # the noise gate's own verdict (keep unless Δ < minImprovement − t·SE)
    tie: bool             # kept by the gate with Δ below minImprovement
    delta_cost: float     # mean change of cost_term + steps_term (negative: dearer)
    se: float             # its standard error, SD(per-task changes)/√n
    t: float              # the Student-t quantile of Φ(COST_Z) at n − 1 df
    adds_cost: bool       # delta_cost < −t·se
    keep: bool            # the verdict once the rule is applied

    def to_json(self) -> dict:
        return {"rule": self.rule, "gate_keep": bool(self.gate_keep), "tie": bool(self.tie),
                "delta_cost": float(self.delta_cost), "se": float(self.se), "z": COST_Z, "t": float(self.t),
                "adds_cost": bool(self.adds_cost), "keep": bool(self.keep)}


def check(candidate: Mapping[str, Terms], incumbent: Mapping[str, Terms], paired: Sequence[str], *,
          delta: float, gate_keep: bool, min_improvement: float, rule: str) -> TieCheck:
    """Apply `rule` (one of TIE_RULES; gate.compare checks it) to the gate's
    verdict on these paired tasks."""
    changes = [(candidate[t].cost_term + candidate[t].steps_term)
               - (incumbent[t].cost_term + incumbent[t].steps_term) for t in paired]
    n = len(changes)
    change = sum(changes) / n
    se = math.sqrt(sum((c - change) ** 2 for c in changes) / (n - 1) / n) if n > 1 else 0.0
    t = float(special.stdtrit(n - 1, special.ndtr(COST_Z))) if n > 1 else 0.0
    adds_cost = change < -t * se - TOLERANCE
    tie = gate_keep and delta < min_improvement - TOLERANCE
    keep = gate_keep and not (rule == "noAddedCost" and tie and adds_cost)
    return TieCheck(rule, gate_keep, tie, change, se, t, adds_cost, keep)
