"""No task harmed: per task (per task and eval model with several), is the champion worse than a reference
(the seed, or no skill) on the test suite, and how sure — over the replicate cells of each side.

The test is the exact one-sided permutation test of the difference in mean per-cell composite (Fisher–Pitman;
every split of the task's 2·r cells enumerated, ties kept), its p values adjusted by Holm over the tasks at
family level HARM_ALPHA. With r replicates a side the smallest p any task can reach is 1/C(2r, r) (0.05 at r =
3): when that is above Holm's first step HARM_ALPHA/tasks no task can be flagged, and the report says so
rather than flag nothing silently. Pure numbers over cells handed in; never touches the store.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np
from scipy import stats

from mutator.scoring.score import CellFigures, Normalisers, Weights, per_task
from mutator.validity.stats import mde

# the family-wise rate of flagging a task that is not harmed, over every task of a comparison
HARM_ALPHA = 0.05
POWER = 0.8           # the power the minimum detectable harm is quoted at
TEST = ("exact one-sided permutation test of the mean per-cell composite (Fisher–Pitman), Holm over the "
        f"tasks at family level {HARM_ALPHA:g}")


def cell_composites(cells: Iterable[CellFigures], weights: Weights,
                    norm: Normalisers) -> dict[str, list[float]]:
    """{task (or 'task@model' with several models): each replicate cell's composite, by replicate}: the
    composite of the cell alone, as the gate scores a task (per_task), so with score.wTrigger > 0 a near-miss
    cell counts its hit and every cell its trigger term."""
    cells = list(cells)
    several = len({c.model for c in cells}) > 1
    out: dict[str, list[tuple[int, float]]] = {}
    for c in sorted(cells, key=lambda c: (c.task_id, c.model, c.replicate)):
        value = per_task([c], weights, norm)[c.task_id].composite     # several models: against its own seed
        out.setdefault(f"{c.task_id}@{c.model}" if several else c.task_id, []).append((c.replicate, value))
    return {k: [v for _, v in sorted(pairs)] for k, pairs in out.items()}


def exact_p(a: list[float], b: list[float], alternative: str) -> float:
    """P(mean(a) − mean(b) at least this far toward `alternative` ('less' | 'greater') under exchangeable
    cells): every split of the pooled cells into groups of len(a) and len(b), the observed one included."""
    if not a or not b:
        return 1.0
    pooled = np.asarray([*a, *b], dtype=float)
    splits = np.array(list(itertools.combinations(range(pooled.size), len(a))))
    first = pooled[splits].sum(axis=1)
    stat = first / len(a) - (pooled.sum() - first) / len(b)
    observed = float(np.mean(a) - np.mean(b))
    # the same split's statistic, up to float noise, is as extreme
    tolerance = 1e-9 * max(1.0, abs(observed))
    extreme = stat <= observed + tolerance if alternative == "less" else stat >= observed - tolerance
    return float(extreme.mean())


def holm(p_values: dict[str, float], alpha: float) -> dict[str, bool]:
    """Holm's step-down: which of these hypotheses are rejected at family level alpha."""
    order = sorted(p_values, key=lambda k: (p_values[k], k))
    out = dict.fromkeys(p_values, False)
    for i, key in enumerate(order):
        if p_values[key] > alpha / (len(order) - i):
            break
        out[key] = True
    return out


def _sigma(champion: dict[str, list[float]], reference: dict[str, list[float]], tasks: list[str]) -> float:
    """The within-task SD of one cell's composite, pooled over both sides and every task."""
    sums, df = 0.0, 0
    for side in (champion, reference):
        for task in tasks:
            values = side[task]
            if len(values) > 1:
                mean = sum(values) / len(values)
                sums += sum((v - mean) ** 2 for v in values)
                df += len(values) - 1
    return math.sqrt(sums / df) if df else 0.0


def harm(champion: dict[str, list[float]], reference: dict[str, list[float]], *,
         alpha: float = HARM_ALPHA) -> dict:
    """Every paired task's figures (worst first) and verdict: 'worse' or 'better' when Holm flags that side,
    else 'same'; `below` lists the tasks whose mean is below the reference's, `flagged` the ones found worse.
    `min_p` is the smallest p the replicates allow, `can_flag` whether it passes Holm's first step, `mdh` the
    true harm (in composite) flagged with probability POWER under normal cell noise of the pooled within-task
    SD `sigma`."""
    tasks = sorted(set(champion) & set(reference))
    if not tasks:
        return {"test": TEST, "alpha": alpha, "tasks": [], "below": [], "flagged": [], "can_flag": False,
                "min_p": None, "mdh": None, "sigma": None, "replicates": None}
    less = {t: exact_p(champion[t], reference[t], "less") for t in tasks}
    greater = {t: exact_p(champion[t], reference[t], "greater") for t in tasks}
    worse, better = holm(less, alpha), holm(greater, alpha)
    r_c = min(len(champion[t]) for t in tasks)
    r_r = min(len(reference[t]) for t in tasks)
    min_p = 1.0 / math.comb(r_c + r_r, r_c)
    can_flag = min_p <= alpha / len(tasks)
    sigma = _sigma(champion, reference, tasks)
    mdh = mde(sigma * math.sqrt(1 / r_c + 1 / r_r), 1, critical=float(stats.norm.ppf(1 - alpha / len(tasks))),
              power=POWER) if can_flag else None
    rows = []
    for t in tasks:
        mean_c, mean_r = sum(champion[t]) / len(champion[t]), sum(reference[t]) / len(reference[t])
        rows.append({"task": t, "champion": champion[t], "reference": reference[t], "champion_mean": mean_c,
                     "reference_mean": mean_r, "delta": mean_c - mean_r, "p_worse": less[t],
                     "p_better": greater[t],
                     "verdict": "worse" if worse[t] else "better" if better[t] else "same"})
    rows.sort(key=lambda r: (r["delta"], r["task"]))
    return {"test": TEST, "alpha": alpha, "tasks": rows, "below": [r["task"] for r in rows if r["delta"] < 0],
            "flagged": [r["task"] for r in rows if r["verdict"] == "worse"], "can_flag": can_flag,
            "min_p": min_p, "mdh": mdh, "sigma": sigma, "replicates": [r_c, r_r]}


def render(found: dict | None, reference: str) -> list[str]:
    """The lines of one harm comparison ('the seed' or 'no skill'); [] when it was not measured."""
    if not found or not found["tasks"]:
        return []
    r_c, r_r = found["replicates"]
    lines = [f"  Per task vs {reference} ({len(found['tasks'])} tasks, {r_c} vs {r_r} replicates; "
             f"{found['test']}):"]
    if not found["can_flag"]:
        lines.append(f"    ⚠ at {r_c} vs {r_r} replicates the smallest p any task can reach is "
                     f"{found['min_p']:.3g} > {found['alpha']:g}/{len(found['tasks'])}: no task can be "
                     f"flagged worse or better; add replicates to the test")
    else:
        lines.append(f"    minimum detectable harm {found['mdh']:.4f} composite ({POWER:.0%} power, cell SD "
                     f"{found['sigma']:.4f})")
    for row in found["tasks"]:   # every task, worst first: 'below' is a mean below the reference, not flagged
        cells = " ".join(f"{v:.3f}" for v in row["champion"])
        ref = " ".join(f"{v:.3f}" for v in row["reference"])
        word = ("below"
                if row["delta"] < 0 else "same") if row["verdict"] == "same" else row["verdict"].upper()
        lines.append(f"    {word:<6} {row['task']:<28} Δ {row['delta']:+.4f}  champion [{cells}] vs [{ref}]  "
                     f"p(worse) {row['p_worse']:.3g}  p(better) {row['p_better']:.3g}")
    return lines


def flagged_reason(report: dict | None) -> str:
    """proposeNoHarm: why a champion whose latest test flags a task it harms is not proposed ("" when none
    is)."""
    found = (report or {}).get("harm") or {}
    named = {name: (found.get(name) or {}).get("flagged") or [] for name in ("seed", "none")}
    words = [f"worse than {'the seed' if name == 'seed' else 'no skill'} on {', '.join(tasks)}"
             for name, tasks in named.items() if tasks]
    return f"proposeNoHarm: its latest test finds it {'; '.join(words)} ({TEST})" if words else ""
