"""The gate over every eval model (score.modelGate 'each'): a candidate is rejected when it is a decisive loss
on any one model, the models tested step-down by Holm so the family-wise false-reject
rate is the design's 1 − Φ(gateZ).

Step r of Holm (r models still standing) gates each of them on its own 'task@model' deltas at z_r = Φ⁻¹(1 −
α/r), α = 1 − Φ(z) of the look; the models rejected at a step leave and the rest are gated again at the next,
wider α, until a step rejects none. (Rejecting every model whose p ≤ α/r at once is Holm's rejection set: each
of them would also pass the later, looser steps.) A model's gate is the ordinary one (gate.compare: sign
flips or Student t), pooling the run's earlier comparisons as the mean gate does. 'mean' is the gate over the
mean of every model's deltas. Pure numbers; never touches the store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from scipy import special

from mutator.scoring import ties
from mutator.scoring.gate import Gate, compare
from mutator.scoring.score import Comparison, TaskFigures, split_key
from mutator.scoring.sequential import early_decision

MODEL_GATES = ("mean", "each")


def _by_model(keys: Sequence[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(split_key(key)[1], []).append(key)
    return groups


def step_z(gate_z: float, remaining: int) -> float:
    """The z of a Holm step with `remaining` models standing: Φ⁻¹(1 − (1 −
    Φ(gate_z))/remaining); 0 stays the raw gate."""
    if gate_z <= 0 or remaining <= 1:
        return gate_z
    return float(-special.ndtri(special.ndtr(-gate_z) / remaining))


def gate(candidate: Mapping[str, TaskFigures], incumbent: Mapping[str, TaskFigures], *,
         prior: Sequence[Comparison],
         min_improvement: float, gate_z: float, method: str = "signflip", tie_rule: str = "keep",
         model_gate: str = "mean") -> Gate:
    """gate.compare under the run's model rule. 'each' over several models: the gate's figures are the mean
    gate's (Δ, SE, threshold, stored as ever) and its verdict is Holm's over the models, recorded in `models`
    ({rule, alpha, steps, models: {model: that model's gate figures, the step
    and z it was last gated at}})."""
    if model_gate not in MODEL_GATES:
        raise ValueError(f"unknown score.modelGate {model_gate!r}: "
                         "use mean or each ('score.modelGate' in config.json)")
    groups = _by_model(sorted(set(candidate) & set(incumbent)))
    each = model_gate == "each" and len(groups) > 1
    mean = compare(candidate, incumbent, prior=prior, min_improvement=min_improvement, gate_z=gate_z,
                   method=method, tie_rule="keep" if each else tie_rule)
    if not each:
        return mean
    standing, record, step, rejected = list(groups), {}, 0, []
    while standing:
        step += 1
        z = step_z(gate_z, len(standing))
        losses = []
        for model in standing:
            keys = groups[model]
            own = compare({k: candidate[k] for k in keys}, {k: incumbent[k] for k in keys}, prior=prior,
                          min_improvement=min_improvement, gate_z=z, method=method, tie_rule="keep")
            record[model] = {"step": step, "z": z, "n": own.n, "delta": own.delta, "s_r": own.s_r, "s": own.s,
                             "df": own.df, "se": own.se, "t": own.t, "threshold": own.threshold,
                             "keep": own.keep, "method": own.method}
            if not own.keep:
                losses.append(model)
        if not losses:
            break
        rejected += losses
        standing = [m for m in standing if m not in losses]
    tie = ties.check(candidate, incumbent, list(mean.deltas), delta=mean.delta, gate_keep=not rejected,
                     min_improvement=min_improvement, rule=tie_rule)
    models = {"rule": "each", "alpha": float(special.ndtr(-gate_z)), "steps": step, "rejected_by": rejected,
              "mean_keep": mean.keep, "models": record}
    return dataclasses.replace(mean, keep=tie.keep, tie=tie, models=models)


def early(gate_: Gate, min_improvement: float) -> str | None:
    """A sequential look's decision (mutator/scoring/sequential.py) under the gate's model rule: a loss when
    the gate rejects; under 'each' a win only when every model is a decisive win at its own boundary, as well
    as the mean."""
    decision = early_decision(keep=gate_.keep, delta=gate_.delta, t=gate_.t, se=gate_.se,
                              min_improvement=min_improvement)
    if decision != "win" or not gate_.models:
        return decision
    each = [early_decision(keep=True, delta=m["delta"], t=m["t"], se=m["se"], min_improvement=min_improvement)
            for m in gate_.models["models"].values()]
    return "win" if all(d == "win" for d in each) else None
