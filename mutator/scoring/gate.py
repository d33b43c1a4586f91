"""The noise gate: a candidate's paired per-task deltas against the incumbent's, pooled with the run's
earlier comparisons, its critical value from sign flips (mutator/scoring/signflip.py) or Student t (DESIGN.md
"Noise gate"). Pure: it never touches the database, never starts a process and never reads the test suite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# scipy.special carries the same distribution functions as scipy.stats without its ~2 s import, which every
# CLI call would pay.
from scipy import special

from mutator.scoring import signflip, ties
from mutator.scoring.mad import robust_scale_of
from mutator.scoring.score import Comparison, ScoreError, TaskFigures, split_key

# A kept/rejected verdict must not flip on the last bit of a float sum (e.g. 0.3 - 0.2 < 0.1).
KEEP_TOLERANCE = 1e-12
# TaskFigures whose composite disagrees with eval + cost_term + steps_term by more than this were
# not built by per_task(), so their Δ split would be wrong.
_SPLIT_TOLERANCE = 1e-9


# How the gate's critical value t is made: 'signflip' (exact for any symmetric noise;
# mutator/scoring/signflip.py) or 't' (the Student-t quantile t.ppf(Φ(gateZ), df) of DESIGN.md,
# exact only for normal deltas).
GATE_METHODS = ("signflip", "t")


def method_warning(method: str, gate_z: float) -> str | None:
    """What to say when a run chooses the Student-t gate (`score.gateMethod` / `--gate-method t`): its false
    reject is off the design under heavy-tailed or tied noise (bench/gate.py)."""
    if method != "t" or gate_z <= 0:
        return None
    design = float(special.ndtr(-gate_z))
    return ("warning: --gate-method t: the Student-t gate is exact only for normal deltas; "
            f"under heavy-tailed "
            f"(t3) or tied pass/fail noise it rejects 18-22% of null changes at gateZ 1 against the design "
            f"{design:.1%} (python bench/gate.py). The sign-flip gate (--gate-method signflip, the default) "
            "keeps "
            "the design for any symmetric noise")


@dataclass(frozen=True)
class Gate:
    """Every figure of one candidate-vs-incumbent gate decision.

    delta = delta_eval + delta_cost + delta_steps + delta_trigger, where the last three are the changes in
    the cost and steps terms of the composite (already weighted, normalised and sign-flipped: a
    cheaper candidate has a positive delta_cost).
    """

    deltas: dict[str, float]
    n: int
    delta: float
    delta_eval: float
    delta_cost: float
    delta_steps: float
    s_r: float
    s: float
    df: int
    se: float
    t: float
    threshold: float
    min_improvement: float
    gate_z: float
    keep: bool
    # how s_r was made from the deltas (mutator/scoring/mad.py): s_r = scale_factor·MAD(d) ('mad') or
    # scale_factor·SD(d) ('sd', when the MAD is 0); stored so every figure re-derives from the store
    scale_method: str = "mad"
    scale_factor: float = 0.0
    # how t was made: 'signflip' (t = −q, q the sign-flip critical value; `flip` holds its boundary rule) or
    # 't' (Student t); t_student is the Student-t value for the same df either way, for reference
    method: str = "t"
    t_student: float = 0.0
    flip: dict | None = None
    # the tie rule's figures (mutator/scoring/ties.py): keep above is its
    # verdict, tie.gate_keep the gate's own
    tie: ties.TieCheck | None = None
    # score.modelGate 'each' (mutator/scoring/holm.py): every model's own gate, its
    # Holm step and z; keep is Holm's
    models: dict | None = None
    # the change in the trigger term (score.wTrigger > 0; mutator/scoring/trigger.py)
    delta_trigger: float = 0.0
    # score.keepRule other than 'lenient' (mutator/scoring/keep.py): its figures; keep above is its verdict
    keep_rule: dict | None = None

    @property
    def comparison(self) -> Comparison:
        """This gate's figures, to pass in `prior` of the run's later gates."""
        return Comparison(n=self.n, s_r=self.s_r, delta=self.delta)

    def by_model(self) -> dict[str, dict]:
        """{model: {"delta", "n"}}: each eval model's mean paired Δ ({} for a one-model gate)."""
        groups: dict[str, list[float]] = {}
        for key, d in self.deltas.items():
            groups.setdefault(split_key(key)[1], []).append(d)
        if len(groups) < 2:
            return {}
        return {m: {"delta": float(sum(ds) / len(ds)), "n": len(ds)} for m, ds in groups.items()}

    def to_json(self) -> dict:
        models = self.by_model()
        return {
            **({"by_model": models} if models else {}),
            "deltas": {task_id: float(d) for task_id, d in self.deltas.items()},
            "n": int(self.n),
            "delta": float(self.delta),
            "delta_eval": float(self.delta_eval),
            "delta_cost": float(self.delta_cost),
            "delta_steps": float(self.delta_steps),
            **({"delta_trigger": float(self.delta_trigger)} if self.delta_trigger else {}),
            "s_r": float(self.s_r),
            "s": float(self.s),
            "df": int(self.df),
            "se": float(self.se),
            "t": float(self.t),
            "threshold": float(self.threshold),
            "min_improvement": float(self.min_improvement),
            "gate_z": float(self.gate_z),
            "keep": bool(self.keep),
            "scale_method": self.scale_method,
            "scale_factor": float(self.scale_factor),
            "pooling": "each" if self.models else "mean",
            **({"model_gate": self.models} if self.models else {}),
            "method": self.method,
            "t_student": float(self.t_student),
            "flip": self.flip,    # None: Student t, or the raw gate (gateZ 0, df 0, s 0)
            "tie": self.tie.to_json() if self.tie else None,
            **({"keep_rule": self.keep_rule} if self.keep_rule else {}),
        }


def robust_scale(deltas: Sequence[float]) -> float:
    """s_r = C_n·MAD(d), unbiased for σ at n normal deltas; the sample SD / c4(n) when MAD is 0; 0 for fewer
    than two deltas (mutator/scoring/mad.py says where C_n comes from)."""
    return robust_scale_of(deltas).s_r


def pooled(prior_plus_current: Sequence[Comparison]) -> tuple[float, int]:
    """(s, df) with s = Σ(n_r−1)s_r / Σ(n_r−1) and df = Σ(n_r−1); (0, 0) when df is 0.

    The s_r are each unbiased for σ, so their weighted MEAN is too. Pooling their squares instead (the
    textbook pooled variance) would overestimate σ by the s_r's own noise (E[s_r²] = σ² + Var s_r; +13% at n =
    4 after 10 rounds) and reject too rarely; with the mean, bench/gate.py measures the designed 1 − Φ(gateZ)
    at every task count and round.
    """
    weighted, df = pooling_sums(prior_plus_current)
    if df == 0:
        return 0.0, 0
    return weighted / df, df


def pooling_sums(comparisons: Sequence[Comparison]) -> tuple[float, int]:
    """(Σ(n_r−1)·s_r, Σ(n_r−1)): what pooled() divides, and what the sign-flip
    gate pools each pattern with."""
    if (carried := getattr(comparisons, "sums", None)) is not None:
        # a run's Prior (scoring/prior.py): the same
        return carried
    df, weighted = 0, 0.0
    for comp in comparisons:
        k = max(int(comp.n) - 1, 0)
        df += k
        weighted += k * float(comp.s_r)
    return weighted, df


def gate_t(gate_z: float, df: int) -> float:
    """t = t.ppf(Φ(gate_z), df): wide while df is small, approaching gate_z as df grows.

    gate_z 0 or df 0 (no noise estimate yet) gives 0, i.e. the raw min_improvement gate.
    """
    if not math.isfinite(gate_z) or gate_z < 0:
        raise ScoreError(f"gate_z must be a finite number >= 0, got {gate_z!r}; fix 'gate_z' in config.json")
    if gate_z == 0 or df <= 0:
        return 0.0
    return float(special.stdtrit(df, special.ndtr(gate_z)))  # = stats.t.ppf(stats.norm.cdf(gate_z), df)


def compare(
    candidate: Mapping[str, TaskFigures],
    incumbent: Mapping[str, TaskFigures],
    *,
    prior: Sequence[Comparison],
    min_improvement: float,
    gate_z: float,
    method: str = "signflip",
    tie_rule: str = "keep",
) -> Gate:
    """Gate a candidate against the incumbent on the tasks both were evaluated on.

    Keep unless Δ < min_improvement − t·SE: statistical ties drift forward, only decisive losses are
    rejected. `prior` holds the earlier comparisons of this run; the current one is pooled in here.
    With method 'signflip' t comes from sign flips of the deltas (and a Δ exactly on the threshold is decided
    by the comparison's stored coin); with 't' from Student t. gate_z 0, df 0 or s 0 give the raw gate either
    way. Then `tie_rule` (mutator/scoring/ties.py) decides which ties are kept: 'noAddedCost' (score.tieRule's
    default) rejects a kept tie that makes the skill dearer, 'keep' keeps them all. It is 'keep' unless asked:
    only the comparison a verdict rests on passes the configured rule; a screen or an early look decides
    nothing on a tie.
    """
    if method not in GATE_METHODS or tie_rule not in ties.TIE_RULES:
        key, given, valid = ("gateMethod", method, GATE_METHODS) if method not in GATE_METHODS else \
            ("tieRule", tie_rule, ties.TIE_RULES)
        raise ScoreError(f"unknown {key} {given!r}: "
                         f"use one of {', '.join(valid)} ('score.{key}' in config.json)")
    paired = sorted(set(candidate) & set(incumbent))
    if not paired:
        raise ScoreError(
            f"no paired tasks: candidate has {sorted(candidate)}, incumbent has {sorted(incumbent)}; "
            "score both on the same validation suite"
        )
    for side, figures in (("candidate", candidate), ("incumbent", incumbent)):
        for task_id in paired:
            f = figures[task_id]
            if abs(f.eval + f.cost_term + f.steps_term + f.trigger_term - f.composite) > _SPLIT_TOLERANCE:
                raise ScoreError(
                    f"{side} task {task_id!r}: composite {f.composite} != eval + cost_term + steps_term + "
                    "trigger_term; build TaskFigures with score.per_task() so the Δ split adds up"
                )

    deltas = {t: candidate[t].composite - incumbent[t].composite for t in paired}
    n = len(paired)

    def mean_change(field: str) -> float:
        return sum(getattr(candidate[t], field) - getattr(incumbent[t], field) for t in paired) / n

    delta = sum(deltas.values()) / n
    s_r = (scale := robust_scale_of(list(deltas.values()))).s_r
    prior_weight, prior_df = pooling_sums(prior)   # then = pooled([*prior, Comparison(n, s_r)]) to the bit:
    term, k = pooling_sums([Comparison(n=n, s_r=s_r)])   # the current comparison's own term (0.0 + x is x)
    s, df = ((prior_weight + term) / (prior_df + k), prior_df + k) if prior_df + k else (0.0, 0)
    se = s / math.sqrt(n)
    t_student = gate_t(gate_z, df)
    t, flip, keep = t_student, None, None
    if method == "signflip" and t_student > 0 and s > 0:
        critical = signflip.critical([d - min_improvement for d in deltas.values()], prior_weight, prior_df,
                                     float(special.ndtr(-gate_z)))
        if math.isfinite(critical.t):
            t, flip, keep = critical.t, critical.to_json(), critical.keep
    threshold = min_improvement - t * se
    if keep is None:
        keep = delta >= threshold - KEEP_TOLERANCE
    tie = ties.check(candidate, incumbent, paired, delta=delta, gate_keep=keep,
                     min_improvement=min_improvement, rule=tie_rule)
    return Gate(deltas=deltas, n=n, delta=delta, delta_eval=mean_change("eval"),
                delta_cost=mean_change("cost_term"), delta_steps=mean_change("steps_term"),
                delta_trigger=mean_change("trigger_term"), s_r=s_r, s=s, df=df, se=se, t=t,
                threshold=threshold, min_improvement=min_improvement, gate_z=gate_z, keep=tie.keep,
                scale_method=scale.method, scale_factor=scale.factor, method=method, t_student=t_student,
                flip=flip, tie=tie)
