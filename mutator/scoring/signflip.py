"""The gate's critical value from sign flips of the candidate's own deltas, so its false-reject rate is the
designed 1 − Φ(gateZ) for any symmetric noise (normal, heavy-tailed, discrete and tied), at every task count.

Why: the Student-t critical value t.ppf(Φ(gateZ), df) is exact only when the deltas are normal. Real per-task
deltas are discrete and tied (pass/fail grades) or heavy-tailed (one task swings), and C_n·MAD then measures
the centre of the noise, not its SD: bench/gate.py measured 17–24% false rejects under t(3) noise and 13–23%
on deltas resampled from real runs, against the designed 15.9%.

The test. Under "the change does nothing", candidate and incumbent are exchangeable on every task, so each
(shifted) delta e_t = d_t − minImprovement is as likely to have the opposite sign. The statistic is the gate's
own T = mean(e) / SE, SE from the run's pooled scale with the current comparison's s_r pooled in. Its
reference distribution is T over sign patterns of e (every one of the 2^n patterns up to ENUMERATE_MAX tasks;
beyond, the identity plus a seeded uniform sample, which keeps the test exact: Hemerik & Goeman 2018, "Exact
testing with random permutations", TEST 27). The critical value q is the smallest atom with P(T* ≤ q) ≥ α; a
comparison with T < q is rejected, T > q kept, and T = q (the observed pattern lands on the atom) is rejected
with probability ρ = (α − P(T* < q)) / P(T* = q), decided by a coin u drawn from a hash of the deltas (stored,
so the verdict re-derives and a resumed run decides the same). That randomisation is what makes the rate
exactly α when only a few patterns exist (16 at n = 4). In the design's form the threshold stays
`minImprovement − t·SE`, with t = −q.

Pure numbers; never touches the store.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mutator.scoring.mad import c4, float_zero, mad_constant

ENUMERATE_MAX = 12        # 2^12 = 4096 patterns: every pattern up to here
SAMPLED = 4095            # beyond, the identity + this many seeded random patterns
ROUND = 9                 # T values equal to 9 decimals are one atom (float noise of the same pattern)


@dataclass(frozen=True)
class Critical:
    """One comparison's sign-flip critical value and boundary rule, with what it was made from."""

    t: float              # −q: the threshold is minImprovement − t·SE
    below: float          # P(T* < q)
    at: float             # P(T* = q)
    rho: float            # reject probability when the observed T equals q
    u: float              # the comparison's coin in [0, 1)
    patterns: int         # sign patterns in the reference set (the identity included)
    exhaustive: bool      # every pattern (True) or the identity + a seeded sample (False)
    sample_seed: int      # numpy default_rng seed of the sample (0 when exhaustive)
    position: int         # −1: T < q (reject), 0: T = q (the coin decides), +1: T > q (keep)

    @property
    def keep(self) -> bool:
        return self.position > 0 or (self.position == 0 and not self.u < self.rho)

    def to_json(self) -> dict:
        return {"below": self.below, "at": self.at, "rho": self.rho, "u": self.u, "patterns": self.patterns,
                "exhaustive": self.exhaustive, "sample_seed": self.sample_seed, "position": self.position}


def digest(deltas: Sequence[float]) -> bytes:
    """A stable hash of the deltas (rounded to 12 decimals, so a re-read from JSON gives the same bytes)."""
    return hashlib.sha256(b"".join(struct.pack("<d", round(float(d), 12)) for d in deltas)).digest()


def coin(deltas: Sequence[float]) -> float:
    """u in [0, 1) from the deltas' hash: the same comparison always draws the same coin."""
    return int.from_bytes(digest(deltas)[:8], "little") / 2.0 ** 64


def patterns(n: int, seed: int) -> tuple[np.ndarray, bool]:
    """(signs, exhaustive): every ±1 pattern of n (row 0 the identity), or the
    identity + SAMPLED seeded ones."""
    if n <= ENUMERATE_MAX:
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
        return 1.0 - 2.0 * bits, True
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(SAMPLED + 1, n))
    signs[0] = 1.0
    return signs, False


def scales(x: np.ndarray) -> np.ndarray:
    """mad.robust_scale_of for every row of x at once: C_n·MAD, or SD/c4(n) where the MAD is 0 (0 within
    float noise: mad.float_zero), and 0 where the SD is float noise too."""
    n = x.shape[1]
    centre = np.median(x, axis=1, keepdims=True)
    mad = np.median(np.abs(x - centre), axis=1)
    sd = np.std(x, axis=1, ddof=1)
    magnitude = np.max(np.abs(x), axis=1)
    fallback = np.where(float_zero(sd, magnitude), 0.0, sd / c4(n))
    return np.where(float_zero(mad, magnitude), fallback, mad_constant(n) * mad)


def critical(shifted: Sequence[float], prior_weight: float, prior_df: int, alpha: float) -> Critical:
    """The sign-flip critical value for deltas already shifted by minImprovement.

    `prior_weight` = Σ(n_r−1)·s_r and `prior_df` = Σ(n_r−1) over the run's earlier comparisons: each pattern's
    SE pools its own s_r with them exactly as the gate pools the observed one (gate.pooled).
    """
    e = np.asarray(list(shifted), dtype=float)
    n = int(e.size)
    seed = 0 if n <= ENUMERATE_MAX else int.from_bytes(digest(e)[8:16], "little")
    signs, exhaustive = patterns(n, seed)
    x = signs * e
    means = x.mean(axis=1)
    df = prior_df + n - 1
    se = (prior_weight + (n - 1) * scales(x)) / df / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(se > 0, means / np.where(se > 0, se, 1.0), np.sign(means) * np.inf)
    stat = np.where(np.isfinite(stat), np.round(stat, ROUND), stat)
    ordered = np.sort(stat)
    q = float(ordered[max(math.ceil(alpha * stat.size - 1e-9) - 1, 0)])
    below = float(np.mean(stat < q))
    at = float(np.mean(stat == q))
    rho = min(max((alpha - below) / at, 0.0), 1.0)
    observed = float(stat[0])
    position = -1 if observed < q else (1 if observed > q else 0)
    return Critical(t=-q, below=below, at=at, rho=rho, u=coin(e), patterns=int(stat.size),
                    exhaustive=exhaustive, sample_seed=seed, position=position)
