"""Paired statistics for comparing two genomes on the same tasks: Δ ± SE with a t CI, the sign
test, McNemar's exact test for pass/fail tests, and the minimum detectable effect of a paired design.

Pure functions over numbers handed in: never touches the database, never starts a process.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

# A per-task delta this close to 0 is a tie for the sign test (float noise in a composite difference).
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class PairedDelta:
    """Mean of the per-task deltas (a − b), its standard error and a t confidence interval.

    sd is the sample SD of the deltas (ddof=1); se = sd/√n; the CI is mean ± t.ppf((1+confidence)/2, n−1)·se;
    p_value is the two-sided paired t test of mean = 0. With one task there is no spread: sd, se, the CI
    half-width and p_value are None.
    """

    n: int
    mean: float
    sd: float | None
    se: float | None
    df: int
    confidence: float
    ci_low: float | None
    ci_high: float | None
    t_stat: float | None
    p_value: float | None

    def to_json(self) -> dict:
        return asdict(self)


def paired(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """Per-key deltas a − b over the keys both have, ordered by key."""
    return {k: float(a[k]) - float(b[k]) for k in sorted(set(a) & set(b))}


def paired_delta(deltas: Sequence[float] | Mapping[str, float], *, confidence: float = 0.95) -> PairedDelta:
    """Mean Δ, SE and t CI of paired per-task deltas (pass a mapping from `paired()` or the raw deltas)."""
    d = np.asarray(list(deltas.values()) if isinstance(deltas, Mapping) else list(deltas), dtype=float)
    if d.size == 0:
        raise ValueError("paired_delta needs at least one paired task; evaluate both genomes on the same "
                         "suite")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n, mean = int(d.size), float(d.mean())
    if n < 2:
        return PairedDelta(n, mean, None, None, 0, confidence, None, None, None, None)
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * se
    if se > 0:
        t_stat = mean / se
        p = float(2 * stats.t.sf(abs(t_stat), n - 1))
    else:  # every delta identical: no noise to test against
        t_stat, p = (0.0, 1.0) if mean == 0 else (math.copysign(math.inf, mean), 0.0)
    return PairedDelta(n, mean, sd, se, n - 1, confidence, mean - half, mean + half, t_stat, p)


@dataclass(frozen=True)
class SignTest:
    """Per-task wins (Δ > 0), losses (Δ < 0) and ties (dropped); exact two-sided binomial p at 1/2."""

    wins: int
    losses: int
    ties: int
    p_value: float

    def to_json(self) -> dict:
        return asdict(self)


def sign_test(deltas: Iterable[float] | Mapping[str, float], *,
              tie_tolerance: float = TIE_TOLERANCE) -> SignTest:
    values = list(deltas.values()) if isinstance(deltas, Mapping) else list(deltas)
    wins = sum(1 for d in values if d > tie_tolerance)
    losses = sum(1 for d in values if d < -tie_tolerance)
    ties = len(values) - wins - losses
    if wins + losses == 0:
        return SignTest(wins, losses, ties, 1.0)
    p = float(stats.binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)
    return SignTest(wins, losses, ties, p)


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test on paired pass/fail outcomes (a, b).

    only_a = a passes and b fails, only_b = b passes and a fails (the discordant pairs); the p value is
    the exact two-sided binomial test of only_a out of only_a + only_b at 1/2.
    """

    n: int
    both_pass: int
    only_a: int
    only_b: int
    both_fail: int
    p_value: float

    def to_json(self) -> dict:
        return asdict(self)


def mcnemar_exact(pairs: Iterable[tuple[bool, bool]]) -> McNemar:
    both_pass = only_a = only_b = both_fail = 0
    for a, b in pairs:
        if a and b:
            both_pass += 1
        elif a:
            only_a += 1
        elif b:
            only_b += 1
        else:
            both_fail += 1
    discordant = only_a + only_b
    p = 1.0 if discordant == 0 else float(stats.binomtest(only_a, discordant, 0.5).pvalue)
    return McNemar(both_pass + only_a + only_b + both_fail, both_pass, only_a, only_b, both_fail, p)


def is_pass_fail(scores: Iterable[float]) -> bool:
    """A test is pass/fail when every score it ever gave is exactly 0 or 1."""
    values = list(scores)
    return bool(values) and all(v in (0.0, 1.0) for v in values)


# --- planning -------------------------------------------------------------------------------------


def mde(sigma: float, n: int, *, critical: float, power: float = 0.8, df: int | None = None) -> float:
    """Minimum detectable effect of a paired design: the true mean Δ detected with probability `power`.

    A test that calls a difference when |Δ| (or Δ, one-sided) exceeds critical·SE, with SE = σ/√n,
    detects a true effect δ with probability ≈ power when δ = (critical + q_power)·SE, where q_power is
    the standard normal quantile of `power` (the Student-t quantile with `df` when given, a slightly
    conservative stand-in for the noncentral t).
    """
    if n < 1:
        raise ValueError(f"mde needs at least one task, got n={n}")
    if sigma < 0 or not 0 < power < 1:
        raise ValueError(f"mde needs sigma >= 0 and power in (0, 1), got sigma={sigma}, power={power}")
    q = float(stats.t.ppf(power, df)) if df else float(stats.norm.ppf(power))
    return (critical + q) * sigma / math.sqrt(n)


def two_sided_critical(alpha: float, df: int | None = None) -> float:
    """The critical value of a two-sided test at level alpha: z (or t with df) at 1 − alpha/2."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return float(stats.t.ppf(1 - alpha / 2, df)) if df else float(stats.norm.ppf(1 - alpha / 2))


# --- rates ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """k events in n trials: the rate and its exact (Clopper–Pearson) binomial CI; None figures when n is
    0."""

    k: int
    n: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float = 0.95

    def to_json(self) -> dict:
        return asdict(self)


# a pure function of three numbers: the A/A view asks for the same ones per request
@functools.lru_cache(maxsize=1024)
def binomial_rate(k: int, n: int, *, confidence: float = 0.95) -> Rate:
    """The exact (Clopper–Pearson) interval an A/A false-call rate is read with, from its beta-quantile form.

    Equal to `scipy.stats.binomtest(k, n).proportion_ci(method='exact')` (5e-13 apart at worst for n < 120),
    which finds the same bounds by root-finding on the binomial cdf and costs ~15x more; the dashboard's A/A
    view draws two."""
    if n <= 0:
        return Rate(k, n, None, None, None, confidence)
    tail = (1.0 - confidence) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1.0 - tail, k + 1, n - k))
    return Rate(k, n, k / n, low, high, confidence)
