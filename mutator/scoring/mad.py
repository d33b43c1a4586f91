"""The gate's robust scale of one comparison: the MAD with its finite-sample bias correction (and the sample
SD with c4 when the MAD is 0), so that s_r is an unbiased estimate of σ for normal deltas at every task count.

Pure numbers, no scipy.stats (its import costs every CLI call ~2 s); never touches the store.

Why: 1.4826·MAD (1.4826 = 1/Φ⁻¹(3/4)) is only consistent as n → ∞. For the few tasks of a val suite it is
biased low (E ≈ 0.74σ at n = 4, 0.89σ at n = 8, 0.95σ at n = 16), so the gate's SE was too small and it
rejected null changes 22.5% of the time at n = 4 instead of the designed 1 − Φ(1) = 15.9%.

Source of the constants: Park, Kim & Wang (2020), "Investigation of finite-sample properties of robust
location and scale estimators", Communications in Statistics – Simulation and Computation, Table A2: C_n with
E[C_n·median|x − median x|] = σ for n = 2..100 normal samples (traditional median: the mean of the two middle
values for even n). Checked against simulations by Akinshin (2021, "Unbiased median absolute deviation",
aakinshin.net/posts/unbiased-mad) and here by tests/mutator/test_mad.py (2 × 10⁵ samples per n). For n > 100,
the same paper's fit after Hayes (2014, "Finite-sample bias-correction factors for the median absolute
deviation", CSSC 43(10)): C_n = 1 / (Φ⁻¹(3/4)·(1 − 0.76213/n − 0.86413/n²)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

# 1/Φ⁻¹(3/4) ≈ 1.4826: scipy.stats.median_abs_deviation(..., scale="normal") divides by Φ⁻¹(3/4) = 0.67449.
MAD_NORMAL_SCALE = 1.0 / float(special.ndtri(0.75))

# C_n for n = 2..100 (Park, Kim & Wang 2020, Table A2), the whole multiplier of the raw MAD: n = 2-10 on the
# first row, then ten a row (11-20, 21-30, ..., 91-100).
_PKW_TABLE = (
    1.772150, 2.204907, 2.016673, 1.803927, 1.763788, 1.686813, 1.671843, 1.632940, 1.624681,
    1.601308, 1.596155, 1.580754, 1.577272, 1.566339, 1.563769, 1.555284, 1.553370, 1.547206, 1.545705,
    1.540681, 1.539302, 1.535165, 1.534053, 1.530517, 1.529996, 1.526916, 1.526422, 1.523608, 1.523031,
    1.520732, 1.520333, 1.518509, 1.517941, 1.516279, 1.516070, 1.514425, 1.513989, 1.512747, 1.512418,
    1.511078, 1.511041, 1.509858, 1.509499, 1.508529, 1.508365, 1.507535, 1.507247, 1.506382, 1.506307,
    1.505611, 1.505172, 1.504575, 1.504417, 1.503713, 1.503604, 1.503095, 1.502864, 1.502253, 1.502085,
    1.501611, 1.501460, 1.501019, 1.500841, 1.500331, 1.500343, 1.499877, 1.499772, 1.499291, 1.499216,
    1.498922, 1.498838, 1.498491, 1.498399, 1.497917, 1.497901, 1.497489, 1.497544, 1.497248, 1.497185,
    1.496797, 1.496779, 1.496428, 1.496501, 1.496295, 1.496089, 1.495794, 1.495796, 1.495557, 1.495420,
    1.495270, 1.495141, 1.494944, 1.494958, 1.494706, 1.494665, 1.494379, 1.494331, 1.494113, 1.494199,
)
MAD_TABLE: dict[int, float] = {n: c for n, c in enumerate(_PKW_TABLE, start=2)}

# A MAD (or SD) at most this share of the deltas' magnitude, max(1, max|d|), is float noise and taken as 0:
# deltas
# that tie in exact arithmetic differ by ~1e-16 after float sums (0.1 + 0.2 − 0.3 = 5.6e-17), and their MAD,
# taken as the scale, would make SE ~1e-16 and t ~1e14. The floor of 1 is the composite's own unit: a delta is
# a
# difference of two composites of order 1, whose float error is ~1e-16 whatever the delta's size. 1e-9 is the
# sign-flip gate's own resolution (signflip.ROUND: T values equal to 9 decimals are one atom).
SCALE_TOLERANCE = 1e-9


def float_zero(scale: float | np.ndarray, magnitude: float | np.ndarray) -> bool | np.ndarray:
    """Whether a MAD or SD `scale` of deltas whose largest |d| is `magnitude` is float noise, i.e. 0."""
    return scale <= SCALE_TOLERANCE * np.maximum(1.0, magnitude)


def mad_constant(n: int) -> float:
    """C_n: the multiplier that makes C_n·MAD an unbiased estimate of σ for n normal values (n ≥ 2)."""
    if n < 2:
        raise ValueError(f"the MAD needs at least 2 values, got n={n}")
    if n in MAD_TABLE:
        return MAD_TABLE[n]
    return 1.0 / (float(special.ndtri(0.75)) * (1.0 - 0.76213 / n - 0.86413 / n ** 2))


def c4(n: int) -> float:
    """E[sample SD] / σ for n normal values: √(2/(n−1))·Γ(n/2)/Γ((n−1)/2) (the
    textbook c4 of control charts)."""
    if n < 2:
        raise ValueError(f"the sample SD needs at least 2 values, got n={n}")
    return math.sqrt(2.0 / (n - 1)) * math.exp(math.lgamma(n / 2) - math.lgamma((n - 1) / 2))


@dataclass(frozen=True)
class Scale:
    """One comparison's robust scale and how it was made, so it re-derives from the stored deltas:
    s_r = factor·MAD(d) when method is 'mad'; s_r = factor·SD(d, ddof=1) when 'sd'; 0 when 'none'."""

    s_r: float
    method: str        # 'mad' | 'sd' | 'none'
    factor: float


def robust_scale_of(deltas: Sequence[float]) -> Scale:
    """C_n·MAD(d); when the MAD is 0, the sample SD / c4(n); 0 for fewer than two deltas.

    "0" means within float noise (float_zero: ≤ SCALE_TOLERANCE·max(1, max|d|)), so deltas that tie in exact
    arithmetic decide as if they tied in floats too; an SD that is float noise gives s_r 0 (method 'sd')."""
    d = np.asarray(list(deltas), dtype=float)
    n = int(d.size)
    if n < 2:
        return Scale(0.0, "none", 0.0)
    magnitude = float(np.max(np.abs(d)))
    mad = float(np.median(np.abs(d - np.median(d))))   # = stats.median_abs_deviation(d, scale=1.0)
    if not float_zero(mad, magnitude):
        factor = mad_constant(n)
        return Scale(factor * mad, "mad", factor)
    # Over half the deltas tie (common with pass/fail grades): the MAD says "no noise" while the other deltas
    # plainly vary, so the sample SD is the honest fallback, made unbiased the same way (÷ c4).
    factor = 1.0 / c4(n)
    sd = float(np.std(d, ddof=1))
    return Scale(0.0 if float_zero(sd, magnitude) else factor * sd, "sd", factor)
