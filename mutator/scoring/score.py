"""Composite score, paired per-task deltas and the noise gate, its critical value from sign flips
(mutator/scoring/signflip.py) or Student t (DESIGN.md "Composite", "Noise gate").

Pure functions over figures handed in by the loop: this module never touches the database, never
starts a process and never reads the test suite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from scipy import special

from mutator.scoring import signflip, ties, trigger
from mutator.scoring.mad import robust_scale_of

# scipy.special carries the same distribution functions as scipy.stats without its ~2 s import, which every
# CLI call would pay.

# A kept/rejected verdict must not flip on the last bit of a float sum (e.g. 0.3 - 0.2 < 0.1).
KEEP_TOLERANCE = 1e-12
# TaskFigures whose composite disagrees with eval + cost_term + steps_term by more than this were
# not built by per_task(), so their Δ split would be wrong.
_SPLIT_TOLERANCE = 1e-9


# How the gate's critical value t is made: 'signflip' (exact for any symmetric noise;
# mutator/scoring/signflip.py) or 't' (the Student-t quantile t.ppf(Φ(gateZ), df) of DESIGN.md, exact only for
# normal deltas).
GATE_METHODS = ("signflip", "t")


class ScoreError(ValueError):
    """The figures handed to the scorer cannot be scored as asked."""


@dataclass(frozen=True)
class Weights:
    w_cost: float
    w_steps: float
    w_trigger: float = 0.0   # score.wTrigger (mutator/scoring/trigger.py)

    @classmethod
    def of_run(cls, run: Mapping) -> Weights:
        """The weights a stored run was scored with (a run from before score.wTrigger has none)."""
        return cls(run.get("w_cost") or 0.0, run.get("w_steps") or 0.0, run.get("w_trigger") or 0.0)


@dataclass(frozen=True)
class CellFigures:
    """One finished cell as the scorer sees it.

    A failed cell (ok=False) scores 0 on every test, so its score is forced to 0 here; its cost and
    steps were really spent and count as measured.
    """

    task_id: str
    replicate: int
    score: float
    cost_usd: float
    steps: float
    ok: bool
    model: str = ""     # the eval model, set only when an evaluation spans several
    loaded: bool | None = None   # the agent loaded the skill (cells.skill_use); None: not recorded
    trigger: bool = True         # the task's "trigger": the skill should be loaded

    def __post_init__(self) -> None:
        if not self.ok:
            object.__setattr__(self, "score", 0.0)


@dataclass(frozen=True)
class Normalisers:
    """Per-cell mean cost (USD) and steps of the SEED on the same suite.

    With several eval models each model has its own (`by_model`: (model, seed_cost, seed_steps) rows), so
    a dear model's cost is measured against the seed on that model; seed_cost/seed_steps are then the
    mean over models, for display only.
    """

    seed_cost: float
    seed_steps: float
    by_model: tuple[tuple[str, float, float], ...] = ()

    def for_model(self, model: str) -> Normalisers:
        for name, cost, steps in self.by_model:
            if name == model:
                return Normalisers(cost, steps)
        if self.by_model:
            raise ScoreError(f"no seed normalisers for model {model!r}; the seed was measured on "
                             f"{[m for m, _, _ in self.by_model]}")
        return self


@dataclass(frozen=True)
class TaskFigures:
    """One task's means over its replicate cells.

    cost_term, steps_term and trigger_term are the signed contributions of cost, steps and triggering to the
    composite (-wCost·cost/seedCost, -wSteps·steps/seedSteps, -wTrigger·(1 − hit share)), so composite = eval
    + cost_term + steps_term + trigger_term; the gate needs them to split Δ into Δeval/Δcost/Δsteps/Δtrigger.
    """

    task_id: str
    eval: float
    cost: float
    steps: float
    composite: float
    n_cells: int
    cost_term: float = 0.0
    steps_term: float = 0.0
    trigger_term: float = 0.0


@dataclass(frozen=True)
class Summary:
    """Per-cell means over a whole evaluation, and its tasks sorted by id."""

    eval: float
    cost: float
    steps: float
    composite: float
    n_cells: int
    tasks: tuple[TaskFigures, ...]


def composite(eval_: float, cost: float, steps: float, weights: Weights, seed_cost: float | None,
              seed_steps: float | None, trigger_term: float = 0.0) -> tuple[float, float, float]:
    """THE composite, the one place its formula is written: eval − wCost·cost/seedCost −
    wSteps·steps/seedSteps + trigger_term (−wTrigger·(1 − hit share), mutator/scoring/trigger.py::term; 0
    unless score.wTrigger > 0).

    Returns (composite, cost_term, steps_term), the terms being the signed penalties. A seed that spent
    nothing (e.g. all cells errored before the first step, or a free fake agent) gives no scale to measure
    against; dividing would blow up, so that penalty term is dropped (as it is when the seed's figure is not
    known yet).
    """
    cost_term = -weights.w_cost * cost / seed_cost if seed_cost and seed_cost > 0 else 0.0
    steps_term = -weights.w_steps * steps / seed_steps if seed_steps and seed_steps > 0 else 0.0
    return eval_ + cost_term + steps_term + trigger_term, cost_term, steps_term


def _figures(cells: Sequence[CellFigures], weights: Weights, norm: Normalisers) -> tuple[float, ...]:
    """(eval, cost, steps, composite, cost_term, steps_term, trigger_term) of these cells."""
    n = len(cells)
    eval_ = sum(trigger.cell_score(c, weights.w_trigger) for c in cells) / n
    cost = sum(c.cost_usd for c in cells) / n
    steps = sum(c.steps for c in cells) / n
    trigger_term = trigger.term(cells, weights.w_trigger)
    total, cost_term, steps_term = composite(eval_, cost, steps, weights, norm.seed_cost, norm.seed_steps,
                                             trigger_term)
    return eval_, cost, steps, total, cost_term, steps_term, trigger_term


def models_of(cells: Iterable[CellFigures]) -> list[str]:
    """The eval models of these cells, in first-seen order ([""] for a one-model evaluation)."""
    return list(dict.fromkeys(c.model for c in cells))


def normalisers(seed_cells: Iterable[CellFigures]) -> Normalisers:
    """The seed's per-cell mean cost and steps (per model when the cells span several); zeros when it has
    no cells (no penalty then)."""
    cells = list(seed_cells)
    models = models_of(cells)
    if len(models) > 1:
        rows = tuple((m, *_means([c for c in cells if c.model == m])) for m in models)
        return Normalisers(seed_cost=sum(r[1] for r in rows) / len(rows),
                           seed_steps=sum(r[2] for r in rows) / len(rows), by_model=rows)
    if not cells:
        return Normalisers(seed_cost=0.0, seed_steps=0.0)
    return Normalisers(
        seed_cost=sum(c.cost_usd for c in cells) / len(cells),
        seed_steps=sum(c.steps for c in cells) / len(cells),
    )


def _means(cells: Sequence[CellFigures]) -> tuple[float, float]:
    return sum(c.cost_usd for c in cells) / len(cells), sum(c.steps for c in cells) / len(cells)


def by_model(cells: Iterable[CellFigures], weights: Weights, norm: Normalisers) -> dict[str, Summary]:
    """Each eval model's own summary, scored against the seed on that model ({} for one model)."""
    cells = list(cells)
    models = models_of(cells)
    if len(models) < 2:
        return {}
    return {m: summarise([c for c in cells if c.model == m], weights, norm.for_model(m)) for m in models}


def split_key(key: str) -> tuple[str, str]:
    """'task@model' -> (task, model); a one-model key 'task' -> (task, '')."""
    task, _, model = key.partition("@")
    return task, model


def per_task(cells: Iterable[CellFigures], weights: Weights, norm: Normalisers) -> dict[str, TaskFigures]:
    """Each task's figures as means over its replicate cells, keyed and ordered by task id.

    Cells of several eval models are scored per (task, model), keyed 'task@model', each against the
    seed on its own model: the gate then pairs candidate and incumbent per (task, model).
    """
    cells = list(cells)
    models = models_of(cells)
    if len(models) > 1:
        out: dict[str, TaskFigures] = {}
        for model in models:
            for task_id, f in per_task([c for c in cells if c.model == model], weights,
                                       norm.for_model(model)).items():
                out[f"{task_id}@{model}"] = replace(f, task_id=f"{task_id}@{model}")
        return dict(sorted(out.items()))
    if norm.by_model and models:
        norm = norm.for_model(models[0])
    by_task: dict[str, list[CellFigures]] = {}
    for cell in cells:
        by_task.setdefault(cell.task_id, []).append(cell)
    out: dict[str, TaskFigures] = {}
    for task_id in sorted(by_task):
        group = by_task[task_id]
        eval_, cost, steps, composite, cost_term, steps_term, trigger_term = _figures(group, weights, norm)
        out[task_id] = TaskFigures(task_id=task_id, eval=eval_, cost=cost, steps=steps, composite=composite,
                                   n_cells=len(group), cost_term=cost_term, steps_term=steps_term,
                                   trigger_term=trigger_term)
    return out


def summarise(cells: Iterable[CellFigures], weights: Weights, norm: Normalisers) -> Summary:
    """Per-cell means and the composite eval − wCost·cost/seedCost − wSteps·steps/seedSteps.

    With several eval models every figure is the mean over the models of that model's own figure.
    """
    cells = list(cells)
    tasks = tuple(per_task(cells, weights, norm).values())
    models = by_model(cells, weights, norm)
    if models:
        k = len(models)
        return Summary(eval=sum(m.eval for m in models.values()) / k,
                       cost=sum(m.cost for m in models.values()) / k,
                       steps=sum(m.steps for m in models.values()) / k,
                       composite=sum(m.composite for m in models.values()) / k, n_cells=len(cells),
                       tasks=tasks)
    if norm.by_model and cells:
        norm = norm.for_model(cells[0].model)
    if not cells:
        return Summary(eval=0.0, cost=0.0, steps=0.0, composite=0.0, n_cells=0, tasks=tasks)
    eval_, cost, steps, composite, *_ = _figures(cells, weights, norm)
    return Summary(eval=eval_, cost=cost, steps=steps, composite=composite, n_cells=len(cells), tasks=tasks)


# --- the noise gate -------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One comparison's noise figures, as stored on an attempt: its task count and robust scale."""

    n: int
    s_r: float


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
    # the tie rule's figures (mutator/scoring/ties.py): keep above is its verdict, tie.gate_keep the gate's
    # own
    tie: ties.TieCheck | None = None
    # score.modelGate 'each' (mutator/scoring/holm.py): every model's own gate, its Holm step and z; keep is
    # Holm's
    models: dict | None = None
    # the change in the trigger term (score.wTrigger > 0; mutator/scoring/trigger.py)
    delta_trigger: float = 0.0

    @property
    def comparison(self) -> Comparison:
        """This gate's noise figures, to pass in `prior` of the run's later gates."""
        return Comparison(n=self.n, s_r=self.s_r)

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
    """(Σ(n_r−1)·s_r, Σ(n_r−1)): what pooled() divides, and what the sign-flip gate pools each pattern
    with."""
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
        raise ScoreError(f"unknown {key} {given!r}: use one of {', '.join(valid)} ('score.{key}' in "
                         "config.json)")
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
                delta_cost=mean_change("cost_term"),
                delta_steps=mean_change("steps_term"), delta_trigger=mean_change("trigger_term"), s_r=s_r,
                s=s, df=df,
                se=se, t=t, threshold=threshold, min_improvement=min_improvement, gate_z=gate_z,
                keep=tie.keep, scale_method=scale.method,
                scale_factor=scale.factor, method=method, t_student=t_student, flip=flip, tie=tie)
