"""The A/A view: each identical copy's Δ against the gate, and how often the gate called a difference.

Read-only over an A/A run's attempt rows (mutator/validity/aa.py writes them). A copy is byte-identical to the
seed, so every called difference is a false call: a REJECT (Δ below minImprovement − t·SE) or a false
improvement (Δ above minImprovement + t·SE). Each rate gets an exact (Clopper–Pearson) binomial 95% CI
(mutator/validity/stats.py binomial_rate) and the design rate 1 − Φ(gateZ) beside it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

from scipy import stats

from mutator.validity.stats import binomial_rate
from strategies.verdicts import Verdict

try:   # faster on the copies' gate JSON; same values out
    from orjson import loads as _decode
except ImportError:  # pragma: no cover
    _decode = json.loads


@lru_cache(maxsize=1024)   # a pure function of three numbers, and scipy's beta.ppf costs milliseconds a call
def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float | None, float | None]:
    """Exact binomial CI for k successes in n trials; (None, None) when n is 0."""
    rate = binomial_rate(k, n, confidence=level)
    return rate.ci_low, rate.ci_high


@lru_cache(maxsize=64)
def _one_side(gate_z: float) -> float:
    return float(stats.norm.sf(gate_z))


def summary(run: dict, attempts: Sequence[dict]) -> dict:
    """`attempts` are the A/A run's rows (round 0 the seed, rounds 1.. the copies) with verdict, delta,
    gate_threshold, gate_se, gate_t and gate (JSON)."""
    min_improvement = run.get("min_improvement") or 0.0
    copies = []
    for a in attempts:
        decided = a.get("verdict") in (Verdict.KEEP, Verdict.REJECT)
        if a["round"] == 0 or not decided or a.get("delta") is None:
            continue
        upper = 2 * min_improvement - a["gate_threshold"]    # minImprovement + t·SE
        gate = a.get("gate")
        recorded = (_decode(gate) if isinstance(gate, str) else gate or {}).get("aa", {})
        false_gain = bool(recorded.get("false_improvement", a["delta"] > upper))
        copies.append({"copy": a["round"], "attempt_id": a.get("id"), "delta": a["delta"],
                       "lower": a["gate_threshold"], "upper": upper, "se": a.get("gate_se"),
                       "t": a.get("gate_t"),
                       "verdict": a["verdict"], "false_improvement": false_gain,
                       "called": a["verdict"] == Verdict.REJECT or false_gain,
                       "independent": bool(recorded.get("seed_evaluation_id"))})
    n = len(copies)
    called = sum(c["called"] for c in copies)
    low, high = clopper_pearson(called, n)
    gate_z = run.get("gate_z") or 0.0
    one_side = _one_side(gate_z) if gate_z > 0 else None
    rejects = sum(c["verdict"] == Verdict.REJECT for c in copies)
    gains = sum(c["false_improvement"] for c in copies)
    return {"copies": copies, "n": n, "false_calls": called, "rate": called / n if n else None,
            "ci_low": low, "ci_high": high, "rejects": rejects, "false_improvements": gains,
            "reject_rate": binomial_rate(rejects, n).to_json(),
            "improvement_rate": binomial_rate(gains, n).to_json(),
            # copies compared with their own fresh seed evaluation are independent trials; older runs shared
            # one
            "independent": bool(copies) and all(c["independent"] for c in copies),
            "design_one_side": one_side, "design_both": 2 * one_side if one_side is not None else None,
            "gate_z": gate_z, "min_improvement": min_improvement}
