"""The composite score: per-cell figures summed per task and per model into eval, cost, steps and the
composite (DESIGN.md "Composite"); the noise gate that compares two of them is mutator/scoring/gate.py.

Pure functions over figures handed in by the loop: this module never touches the database, never
starts a process and never reads the test suite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from mutator.scoring import trigger


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


@dataclass(frozen=True)
class Comparison:
    """One comparison's figures, as stored on an attempt: its task count, robust scale and mean Δ (the
    empirical-Bayes keep rule's history, mutator/scoring/keep.py; None when not read)."""

    n: int
    s_r: float
    delta: float | None = None
    keep: bool | None = None      # its verdict (the 'ebc' rule's incumbent chain; None when not read)


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
