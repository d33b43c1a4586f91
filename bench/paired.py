"""The bench's statistics over seeds: mean ± SE, rollouts-to-target with censoring, and paired Wilcoxon tests
with Holm's step-down correction. Pure numbers over per-seed figures; knows nothing of searches."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence


def mean_se(values: Sequence[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.4f}" if values else "—"
    return f"{statistics.mean(values):.4f} ± {statistics.stdev(values) / len(values) ** 0.5:.4f}"


def to_target(curve: Sequence[tuple[int, float]], target: float) -> int | None:
    """Rollouts spent when the incumbent's TRUE val composite first reached
    `target`; None = censored (never)."""
    return next((r for r, v in curve if v >= target - 1e-12), None)


def censored_median(hits: list[int | None], budget: int) -> str:
    """The median of rollouts-to-target with the censored seeds counted as 'more than the budget'."""
    ordered = sorted(math.inf if h is None else h for h in hits)
    mid = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
    if math.isinf(mid[1]):
        return f"> {budget}"
    return f"{statistics.mean(mid):.0f}"


def wilcoxon_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p over paired seeds; 1 when every pair ties."""
    from scipy import stats
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if all(abs(d) < 1e-12 for d in diffs):
        return 1.0
    return float(stats.wilcoxon(a, b, zero_method="wilcox").pvalue)


def holm(ps: Sequence[float]) -> list[float]:
    """Holm-adjusted p values, in the order given: p_(i)·(m − i + 1), made monotone, capped at 1."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [1.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, ps[i] * (len(ps) - rank)))
        adjusted[i] = running
    return adjusted


def significant(rows: dict[str, list], metric: Callable, alpha: float = 0.05) -> list[str]:
    """Every pair of lines whose paired difference in `metric` is significant after Holm's correction."""
    labels = list(rows)
    tests = []
    for i, x in enumerate(labels):
        for y in labels[i + 1:]:
            a, b = [metric(o) for o in rows[x]], [metric(o) for o in rows[y]]
            better, worse = (x, y) if statistics.mean(a) >= statistics.mean(b) else (y, x)
            tests.append((wilcoxon_p(a, b), better, worse))
    tests.sort()
    found = []
    for rank, (p, better, worse) in enumerate(tests):
        if p * (len(tests) - rank) >= alpha:
            break  # Holm: stop at the first pair that fails its step-down level
        found.append(f"{better} > {worse} (p={p:.2g})")
    return found


def against(rows: dict[str, list], metric: Callable, line: str, others: Sequence[str]) -> list[str]:
    """`line` against each of `others`: mean difference, raw and Holm-adjusted (over these comparisons) p."""
    mine = [metric(o) for o in rows[line]]
    ps = [wilcoxon_p(mine, [metric(o) for o in rows[other]]) for other in others]
    out = []
    for other, p, adjusted in zip(others, ps, holm(ps), strict=True):
        diff = statistics.mean(mine) - statistics.mean(metric(o) for o in rows[other])
        out.append(f"{line} − {other} {diff:+.4f} (Wilcoxon p {p:.2g}, Holm-adjusted {adjusted:.2g})")
    return out
