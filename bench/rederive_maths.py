"""The gate's maths re-implemented from docs/concepts/{gate,screen,rederive}.md alone, for bench/rederive.py.

Deliberately imports nothing from mutator/: an independent re-derivation is the point (issue 47 item 7). Every
rule here is the one the docs state; where this file and mutator/scoring disagree, one of them (or the docs)
is wrong, and bench/rederive.py says where.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import struct

import numpy as np
from scipy import optimize, special

# Park, Kim & Wang (2020), Table A2: C_n for n = 2..100 (docs/concepts/gate.md "Why C_n").
PKW = (1.772150, 2.204907, 2.016673, 1.803927, 1.763788, 1.686813, 1.671843, 1.632940, 1.624681,
       1.601308, 1.596155, 1.580754, 1.577272, 1.566339, 1.563769, 1.555284, 1.553370, 1.547206, 1.545705,
       1.540681, 1.539302, 1.535165, 1.534053, 1.530517, 1.529996, 1.526916, 1.526422, 1.523608, 1.523031,
       1.520732, 1.520333, 1.518509, 1.517941, 1.516279, 1.516070, 1.514425, 1.513989, 1.512747, 1.512418,
       1.511078, 1.511041, 1.509858, 1.509499, 1.508529, 1.508365, 1.507535, 1.507247, 1.506382, 1.506307,
       1.505611, 1.505172, 1.504575, 1.504417, 1.503713, 1.503604, 1.503095, 1.502864, 1.502253, 1.502085,
       1.501611, 1.501460, 1.501019, 1.500841, 1.500331, 1.500343, 1.499877, 1.499772, 1.499291, 1.499216,
       1.498922, 1.498838, 1.498491, 1.498399, 1.497917, 1.497901, 1.497489, 1.497544, 1.497248, 1.497185,
       1.496797, 1.496779, 1.496428, 1.496501, 1.496295, 1.496089, 1.495794, 1.495796, 1.495557, 1.495420,
       1.495270, 1.495141, 1.494944, 1.494958, 1.494706, 1.494665, 1.494379, 1.494331, 1.494113, 1.494199)
TOL = 1e-9          # the MAD/SD float-noise tolerance, relative to max(1, max|d|)
ATOM = 9            # T values equal to 9 decimals are one atom
KEEP_TOL = 1e-12
COST_Z = 3.0


def c_n(n: int) -> float:
    if n <= 100:
        return PKW[n - 2]
    return 1.0 / (float(special.ndtri(0.75)) * (1.0 - 0.76213 / n - 0.86413 / n ** 2))


def c4(n: int) -> float:
    return math.sqrt(2.0 / (n - 1)) * math.exp(math.lgamma(n / 2) - math.lgamma((n - 1) / 2))


def scale(d: np.ndarray) -> tuple[float, str, float]:
    """(s_r, method, factor) of one comparison's deltas."""
    n = d.size
    if n < 2:
        return 0.0, "none", 0.0
    floor = TOL * max(1.0, float(np.max(np.abs(d))))
    mad = float(np.median(np.abs(d - np.median(d))))
    if mad > floor:
        return c_n(n) * mad, "mad", c_n(n)
    sd = float(np.std(d, ddof=1))
    return (0.0 if sd <= floor else sd / c4(n)), "sd", 1.0 / c4(n)


def row_scales(x: np.ndarray) -> np.ndarray:
    """scale() of every row (one sign pattern a row)."""
    n = x.shape[1]
    floor = TOL * np.maximum(1.0, np.max(np.abs(x), axis=1))
    mad = np.median(np.abs(x - np.median(x, axis=1, keepdims=True)), axis=1)
    sd = np.std(x, axis=1, ddof=1)
    return np.where(mad > floor, c_n(n) * mad, np.where(sd <= floor, 0.0, sd / c4(n)))


def digest(values) -> bytes:
    return hashlib.sha256(b"".join(struct.pack("<d", round(float(v), 12)) for v in values)).digest()


def flip(e: np.ndarray, prior_weight: float, prior_df: int, alpha: float) -> dict:
    """The sign-flip reference distribution of T = mean/SE and the observed pattern's place in it."""
    n = e.size
    h = digest(e)
    if n <= 12:
        signs, seed = np.array(list(itertools.product((1.0, -1.0), repeat=n))), 0   # row 0: the identity
    else:
        seed = int.from_bytes(h[8:16], "little")
        signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(4096, n))
        signs[0] = 1.0
    x = signs * e
    df = prior_df + n - 1
    se = (prior_weight + (n - 1) * row_scales(x)) / df / math.sqrt(n)
    means = x.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(se > 0, means / np.where(se > 0, se, 1.0), np.sign(means) * np.inf)
    stat = np.where(np.isfinite(stat), np.round(stat, ATOM), stat)
    q = float(np.sort(stat)[max(math.ceil(alpha * stat.size - 1e-9), 1) - 1])
    below, at = float(np.mean(stat < q)), float(np.mean(stat == q))
    rho = min(max((alpha - below) / at, 0.0), 1.0) if at > 0 else math.nan
    observed = float(stat[0])
    position = -1 if observed < q else (1 if observed > q else 0)
    u = int.from_bytes(h[:8], "little") / 2.0 ** 64
    return {"q": q, "below": below, "at": at, "rho": rho, "u": u, "patterns": int(stat.size),
            "exhaustive": n <= 12, "sample_seed": seed, "position": position,
            "keep": position > 0 or (position == 0 and not u < rho)}


def gate(cand: dict, inc: dict, *, prior: list[tuple[int, float]], m: float, z: float, method: str,
         tie_rule: str = "keep") -> dict:
    """One gate from per-task {key: (composite, cost_term + steps_term)} of both sides; `prior` the pooled
    earlier comparisons as (n, s_r) (already widened for an early look)."""
    keys = sorted(set(cand) & set(inc))
    n = len(keys)
    d = np.array([cand[k][0] - inc[k][0] for k in keys])
    delta = sum(d.tolist()) / n
    s_r, how, factor = scale(d)
    pw, pdf = 0.0, 0
    for n_r, s in prior:
        pw, pdf = pw + max(n_r - 1, 0) * s, pdf + max(n_r - 1, 0)
    df = pdf + n - 1
    s = (pw + (n - 1) * s_r) / df if df else 0.0
    se = s / math.sqrt(n)
    t_student = float(special.stdtrit(df, special.ndtr(z))) if z > 0 and df > 0 else 0.0
    t, keep, fl = t_student, None, None
    if method == "signflip" and t_student > 0 and s > 0:
        fl = flip(d - m, pw, pdf, float(special.ndtr(-z)))
        if math.isfinite(fl["q"]):
            t, keep = -fl["q"], fl["keep"]
        else:
            fl = None
    threshold = m - t * se
    gate_keep = delta >= threshold - KEEP_TOL if keep is None else keep
    costs = [cand[k][1] - inc[k][1] for k in keys]
    c = sum(costs) / n
    c_se = math.sqrt(sum((x - c) ** 2 for x in costs) / (n - 1) / n) if n > 1 else 0.0
    c_t = float(special.stdtrit(n - 1, special.ndtr(COST_Z))) if n > 1 else 0.0
    adds = c < -c_t * c_se - KEEP_TOL
    tie = gate_keep and delta < m - KEEP_TOL
    return {"keys": keys, "deltas": dict(zip(keys, d.tolist())), "n": n, "delta": delta, "s_r": s_r,
            "scale_method": how, "scale_factor": factor, "s": s, "df": df, "se": se, "t": t,
            "t_student": t_student, "threshold": threshold, "flip": fl, "gate_keep": gate_keep,
            "tie": {"tie": tie, "delta_cost": c, "se": c_se, "t": c_t, "adds_cost": adds},
            "keep": gate_keep and not (tie_rule == "noAddedCost" and tie and adds)}


def early(keep: bool, delta: float, t: float, se: float, m: float) -> str | None:
    if se <= 0 or t <= 0:
        return None
    if not keep:
        return "loss"
    return "win" if delta > m + t * se + 1e-9 * max(1.0, abs(delta)) else None


def holm_z(z: float, remaining: int) -> float:
    return z if z <= 0 or remaining <= 1 else float(-special.ndtri(special.ndtr(-z) / remaining))


def last_z(looks: int, gate_z: float, early_z: float) -> float:
    """The last look's z, solved by another method than the code's recursive Simpson integration: scipy's
    multivariate normal CDF (Genz) of the cumulative look statistics Z_k = S_k/√k (corr √(j/k)), early losses
    and wins both stopping, so P(reject | null) = 1 − Φ(gate_z); good to ~1e-6 in z."""
    from scipy import stats
    if looks <= 1 or gate_z <= 0:
        return gate_z
    alpha = float(special.ndtr(-gate_z))
    k = np.arange(1, looks + 1)
    corr = np.sqrt(np.minimum.outer(k, k) / np.maximum.outer(k, k))

    def box(upto: int, last_hi: float) -> float:
        """P(|Z_j| < early_z for j < upto, Z_upto < last_hi)."""
        if upto == 1:
            return float(special.ndtr(last_hi))
        mvn = stats.multivariate_normal(np.zeros(upto), corr[:upto, :upto], seed=0, maxpts=100_000 * upto,
                                        abseps=1e-8, releps=1e-8)
        lo = np.r_[np.full(upto - 1, -early_z), -np.inf]
        hi = np.r_[np.full(upto - 1, early_z), last_hi]
        return float(mvn.cdf(hi, lower_limit=lo))

    lost = sum(box(j, -early_z) for j in range(1, looks))
    return float(optimize.brentq(lambda zz: lost + box(looks, -zz) - alpha, 0.0, 10.0, xtol=1e-10))


def exact_p(a: list[float], b: list[float], less: bool) -> float:
    pooled = np.array([*a, *b])
    first = np.array([pooled[list(c)].sum() for c in itertools.combinations(range(pooled.size), len(a))])
    stat = first / len(a) - (pooled.sum() - first) / len(b)
    obs = float(np.mean(a) - np.mean(b))
    tol = 1e-9 * max(1.0, abs(obs))
    return float(np.mean(stat <= obs + tol if less else stat >= obs - tol))


def holm(p: dict[str, float], alpha: float) -> dict[str, bool]:
    out = dict.fromkeys(p, False)
    for i, key in enumerate(sorted(p, key=lambda k: (p[k], k))):
        if p[key] > alpha / (len(p) - i):
            break
        out[key] = True
    return out
