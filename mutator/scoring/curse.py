"""The 'ebc' keep rule: empirical Bayes that also corrects the incumbent's winner's curse.

A kept candidate was kept BECAUSE its measured Δ was high, so its measured val score is too high, and (its
cells being cached) every later candidate is compared with that inflated figure and rarely beats it. This rule
carries an estimate of the incumbent's measurement error through the run's own comparisons, in attempt order:

- the true effects of the run's proposals are N(μ, τ²) (as 'eb'), each candidate's own measurement error
  e_C ~ N(0, h), h = SE²/2 (half the paired Δ's variance), and the incumbent's error e_I ~ N(b, v);
- a comparison's Δ = θ + e_C − e_I, so y = Δ + b − μ is the sum of three independent zero-mean parts of
  variances τ², h and v (total V = τ² + h + v);
- the candidate's posterior mean gain is μ + (τ²/V)·y; keep iff it is > minImprovement;
- a KEPT comparison makes the candidate the incumbent: b ← (h/V)·y, v ← h − h²/V (its error given y);
- a REJECTED one informs the same incumbent's error: −(Δ − μ) = e_I − (θ − μ) − e_C, an observation of e_I
  with variance τ² + h, pooled with N(b, v) by precision;
- the first incumbent (the seed) has b = 0, v = h: measured, never selected.

μ and τ² are made by the method of moments from the raw Δ's (as 'eb'), then again from the Δ's corrected by
the incumbent error each was measured against (Δ + b), PASSES times; τ² is floored at TAU_FLOOR·mean SE² (at
real-agent noise the moment estimate is often 0, and then the posterior would be μ for every candidate: keep
all or none). With fewer than EB_MIN comparisons it keeps iff Δ + b > minImprovement. SE is the gate's (its
pooled robust scale / √n). The chain assumes the greedy loop: a comparison's incumbent is the last kept
candidate (a comparison decided at an early look is not in the history, so an early win's incumbent change is
missed). Pure numbers; never touches the store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mutator.scoring.score import Comparison

PASSES = 2            # re-estimates of (μ, τ²) from the bias-corrected Δ's
TAU_FLOOR = 0.2       # τ² ≥ this · mean SE²


def shrinkage(deltas: Sequence[float], ses: Sequence[float], floor: float = 0.0) -> tuple[float, float]:
    """(μ, τ²) by the method of moments: μ = mean Δ, τ² = max(floor·mean SE², sample variance of Δ − mean
    SE²)."""
    k = len(deltas)
    mu = sum(deltas) / k
    var = sum((d - mu) ** 2 for d in deltas) / (k - 1) if k > 1 else 0.0
    noise = sum(se * se for se in ses) / k
    return mu, max(floor * noise, var - noise)


def walk(deltas: Sequence[float], ses: Sequence[float], kept: Sequence[bool | None], mu: float,
         tau2: float) -> tuple[list[float], float, float]:
    """The incumbent error mean b each comparison was measured against; for the last comparison (the one being
    decided) its posterior mean gain and its incumbent's error variance. kept[i] is comparison i's verdict."""
    b, v, biases = 0.0, None, []
    for i, (delta, se) in enumerate(zip(deltas, ses, strict=True)):
        h = se * se / 2
        v = h if v is None else v
        biases.append(b)
        y = delta + b - mu
        total = tau2 + h + v
        if i == len(deltas) - 1:
            return biases, (mu + (tau2 / total) * y if total > 0 else delta + b), v
        if total <= 0:
            continue
        if kept[i]:
            b, v = (h / total) * y, h - h * h / total
        elif tau2 + h > 0 and v > 0:
            precision = 1 / v + 1 / (tau2 + h)
            b, v = (b / v - (delta - mu) / (tau2 + h)) / precision, 1 / precision
    raise ValueError("walk needs at least one comparison")


def record(delta: float, se: float, s: float, min_improvement: float, tolerance: float,
           prior: Sequence[Comparison], min_history: int) -> dict:
    """The 'ebc' figures for a gate (Δ, SE, the pooled scale s): history size, μ, τ², the incumbent's error
    b and its variance, the posterior mean gain and keep."""
    history = [c for c in prior if c.delta is not None]
    deltas = [c.delta for c in history] + [delta]
    ses = [s / math.sqrt(c.n) for c in history] + [se]
    kept = [c.keep for c in history] + [None]
    mu, tau2 = shrinkage(deltas, ses, TAU_FLOOR)
    biases, post, v = walk(deltas, ses, kept, mu, tau2)
    if len(deltas) < min_history:
        mu = tau2 = None
        post = delta + biases[-1]
    else:
        for _ in range(PASSES):
            mu, tau2 = shrinkage([d + b for d, b in zip(deltas, biases, strict=True)], ses, TAU_FLOOR)
            biases, post, v = walk(deltas, ses, kept, mu, tau2)
    return {"rule": "ebc", "history": len(deltas), "min_history": min_history, "mu": mu, "tau2": tau2,
            "tau_floor": TAU_FLOOR, "incumbent_bias": biases[-1], "incumbent_var": v, "s": s,
            "posterior": post, "keep": post > min_improvement + tolerance}
