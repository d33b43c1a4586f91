"""The keep rule (score.keepRule): which of the last look's candidates are kept, once the gate has its
figures.

- 'lenient' (the spec's gate): keep unless a decisive loss, Δ ≥ minImprovement − t·SE (the tie rule applies).
- 'strict': keep only a decisive win, Δ > minImprovement + t·SE (the early looks' win boundary; with no noise
  estimate, Δ > minImprovement).
- 'positive': keep iff Δ > minImprovement.
- 'eb' (empirical Bayes): the true effects of this run's proposals are taken as N(μ, τ²) and each measured Δ_i
  as N(θ_i, SE_i²), SE_i = s/√n_i (s the current gate's pooled scale); μ = the mean of the Δ's and τ² = their
  variance less the mean SE² (floored at 0), over the run's stored comparisons on this suite (the gate's pool,
  `prior`, each with its Δ) and the current one. Keep iff the posterior mean μ + B(Δ − μ), B = τ²/(τ² + SE²),
  is > minImprovement. With fewer than EB_MIN comparisons it keeps iff Δ > minImprovement (no prior yet).
- 'ebc': 'eb' that also corrects the incumbent's winner's curse (mutator/scoring/curse.py): the incumbent's
  measurement error is estimated along the run's comparisons and their verdicts, and the posterior mean gain
  is of Δ + that error.
Every rule's figures are stored in the gate JSON as `keep_rule`, so each verdict re-derives from the store.
Pure numbers; never touches the store.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from mutator.scoring import curse
from mutator.scoring.gate import KEEP_TOLERANCE, Gate
from mutator.scoring.score import Comparison

KEEP_RULES = ("lenient", "strict", "positive", "eb", "ebc")
EB_MIN = 5            # comparisons (the current one included) before the empirical prior is used


shrinkage = curse.shrinkage  # (μ, τ²) by the method of moments


def eb_record(gate: Gate, prior: Sequence[Comparison]) -> dict:
    """The empirical-Bayes figures for this gate: history size, μ, τ², B, the posterior mean, keep."""
    history = [(c.delta, c.n) for c in prior if c.delta is not None]
    deltas = [d for d, _ in history] + [gate.delta]
    ses = [gate.s / math.sqrt(n) for _, n in history] + [gate.se]
    k = len(deltas)
    if k < EB_MIN:
        post, mu, tau2, shrink = gate.delta, None, None, 1.0
    else:
        mu, tau2 = shrinkage(deltas, ses)
        shrink = tau2 / (tau2 + gate.se ** 2) if tau2 + gate.se ** 2 > 0 else 1.0
        post = mu + shrink * (gate.delta - mu)
    return {"rule": "eb", "history": k, "min_history": EB_MIN, "mu": mu, "tau2": tau2, "shrink": shrink,
            "s": gate.s, "posterior": post, "keep": post > gate.min_improvement + KEEP_TOLERANCE}


def apply(rule: str, gate: Gate, prior: Sequence[Comparison] = ()) -> Gate:
    """The gate with its verdict under `rule` (the gate's own for 'lenient', unchanged)."""
    if rule not in KEEP_RULES:
        raise ValueError(f"unknown score.keepRule {rule!r}: use one of {', '.join(KEEP_RULES)} "
                         "('score.keepRule' in config.json or --keep-rule)")
    if rule == "lenient":
        return gate
    if rule == "eb":
        record = eb_record(gate, prior)
    elif rule == "ebc":
        record = curse.record(gate.delta, gate.se, gate.s, gate.min_improvement, KEEP_TOLERANCE, prior,
                              EB_MIN)
    else:
        bar = gate.min_improvement + (gate.t * gate.se if rule == "strict" else 0.0)
        record = {"rule": rule, "bar": bar, "keep": gate.delta > bar + KEEP_TOLERANCE}
    record["gate_keep"] = gate.keep
    return dataclasses.replace(gate, keep=record["keep"], keep_rule=record)
