"""Real agent noise, fitted from SkillsBench's results registry (`skillsbench-results.tsv` beside this file):
a beta-binomial fit of the per-(task, agent) success probability p from each cell's passCount over its trials.

Used by `--plan` (a pass/fail grader's σ before any cell is measured) and the bench's calibrated landscapes.
Every figure is fitted here, in code, from the TSV; never copy a derived number into other code.
Source: benchflow-ai/skillsbench-trajectories, website-data/results-registry.json @ 860f69bd (public data).
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from scipy import optimize, stats

DATA = Path(__file__).with_name("skillsbench-results.tsv")
CONDITIONS = ("No Skills", "With Skills")
# τ-bench (Yao et al. 2024): ~61% pass@1, < 25% pass^8 on retail — a stated preset, not fitted here
TAU = (0.84, 0.53)


@dataclass(frozen=True)
class BetaFit:
    """Per-task success probability p ~ Beta(alpha, beta); one trial is Bernoulli(p)."""
    alpha: float
    beta: float
    trials: int = 3            # trials per cell in the data the fit came from (0 for a preset)
    cells: int = 0             # (task, agent[, condition]) cells fitted

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    @property
    def trial_var(self) -> float:
        """E[p(1-p)]: the mean per-trial variance of a pass/fail cell."""
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s * (s + 1))

    @property
    def trial_sd(self) -> float:
        """sqrt(E[p(1-p)]): the per-trial SD of a pass/fail cell (~0.30 in the data)."""
        return math.sqrt(self.trial_var)

    def pmf(self, k: int, n: int | None = None) -> float:
        """P(passCount = k of n trials) under the fit (beta-binomial)."""
        return float(stats.betabinom.pmf(k, n or self.trials, self.alpha, self.beta))


def load_counts(condition: str | None = None, path: Path = DATA) -> tuple[tuple[int, int], ...]:
    """(passCount, trials) per row of the registry; `condition` None = both conditions."""
    if condition is not None and condition not in CONDITIONS:
        raise ValueError(f"calibration condition {condition!r}: use one of {CONDITIONS} or None (all rows)")
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return tuple((int(r["passCount"]), int(r["trials"])) for r in rows
                 if condition is None or r["condition"] == condition)


def histogram(condition: str | None = None) -> dict[int, int]:
    """Observed cells per passCount (the data's 3 trials per cell)."""
    c = Counter(k for k, _ in load_counts(condition))
    trials = max(n for _, n in load_counts(condition))
    return {k: c.get(k, 0) for k in range(trials + 1)}


@cache   # the fit takes ~0.1 s; every caller shares it
def fit(condition: str | None = None) -> BetaFit:
    """Maximum-likelihood beta-binomial fit of passCount over trials.

    `condition`: "No Skills" (a skill-less agent: the landscapes' base p), "With Skills", or None = all rows
    (the note's Beta(0.245, 0.304), E[p(1-p)] 0.088: what `--plan` assumes for a pass/fail grader).
    """
    counts = load_counts(condition)
    k = np.array([c for c, _ in counts])
    n = np.array([t for _, t in counts])

    def nll(log_ab: np.ndarray) -> float:
        a, b = np.exp(log_ab)
        return -float(stats.betabinom.logpmf(k, n, a, b).sum())

    res = optimize.minimize(nll, x0=np.log([0.5, 0.5]), method="Nelder-Mead",
                            options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
    a, b = np.exp(res.x)
    return BetaFit(float(a), float(b), trials=int(n.max()), cells=len(counts))


def preset(name: str) -> BetaFit:
    """A named prior for per-task p: "skillsbench" (fit of the No Skills rows), "all" (all rows), "tau"."""
    if name == "skillsbench":
        return fit("No Skills")
    if name == "all":
        return fit(None)
    if name == "tau":
        return BetaFit(*TAU, trials=0)
    raise ValueError(f"calibration preset {name!r}: use skillsbench, all or tau")


def empirical_trial_var(condition: str | None = None) -> float:
    """The data's own E[p(1-p)], unbiased per cell: k(n-k)/(n(n-1)) for k passes of n trials."""
    counts = load_counts(condition)
    return sum(k * (n - k) / (n * (n - 1)) for k, n in counts) / len(counts)


def pass_fail_sigma(replicates: int, prior: BetaFit | None = None) -> float:
    """SD of a per-task delta between two genomes of equal p on a pass/fail grader, each task averaged over
    `replicates` trials: sqrt(2 E[p(1-p)] / r) (the σ `--plan` means). Default prior: all rows' fit."""
    if replicates < 1:
        raise ValueError(f"replicates {replicates}: must be ≥ 1")
    return math.sqrt(2 * (prior or fit(None)).trial_var / replicates)
