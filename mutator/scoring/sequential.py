"""Sequential val and the kill-only screen: which cells each look reads, and the critical z of each look.

A candidate's val cells run in waves (every task × replicate 1, then replicate 2, ...). After wave k < K the
gate looks at the paired per-task deltas of the first k replicates: a decisive loss at `early_z` rejects, a
decisive win at `early_z` keeps, anything else runs the next wave. The last look's z is solved so that the
overall false-reject rate of a null change (no look rejects by chance more often than the design) is
exactly 1 − Φ(gate_z) under normal noise: a Haybittle–Peto design with the last boundary adjusted for the
alpha the early looks spent. Under the null the cumulative look statistics are Z_k = S_k/√k with S a
Gaussian random walk, so P(no early look rejects, and the last does not) is computed by propagating the
walk's density over a grid (no sampling: the same figures every time).

Pure functions: no store, no process; `bench/gate.py` measures the rates they promise under other noise.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from scipy import special

from eval.errors import SkillMutatorError

WIN_TOLERANCE = 1e-9


class SequentialError(SkillMutatorError, ValueError):
    """The sequential design asked for cannot keep the gate's false-reject rate; the message names the key."""


def _walk(looks: int, effect: float):
    """The grid step, the grid for S_K (±9 SD, shifted room for a drift) and the N(0, 1) step kernel."""
    import numpy as np
    h = 0.01
    half = 9.0 * math.sqrt(looks) + abs(effect) * math.sqrt(looks)
    kernel_x = np.arange(-9.0, 9.0 + h / 2, h)
    return h, np.arange(-half, half + h / 2, h), np.exp(-kernel_x ** 2 / 2) / math.sqrt(2 * math.pi) * h


@lru_cache(maxsize=64)
def last_look_z(looks: int, gate_z: float, early_z: float) -> float:
    """The last look's z such that P(any look rejects | null) = 1 − Φ(gate_z) when looks 1..K−1 reject at
    Z_k < −early_z. One look is the fixed gate (gate_z itself)."""
    if looks <= 1 or gate_z <= 0:
        return gate_z
    import numpy as np
    alpha = float(special.ndtr(-gate_z))
    h, grid, kernel = _walk(looks, 0.0)
    density = np.exp(-grid ** 2 / 2) / math.sqrt(2 * math.pi)          # S_1 ~ N(0, 1)
    for k in range(1, looks):
        density = np.where(grid >= -early_z * math.sqrt(k), density, 0.0)  # paths stopped at look k drop out
        density = np.convolve(density, kernel, mode="same")             # S_{k+1} = S_k + N(0, 1)
    # mass[i] = P(survived every early look, S_K >= grid[i]); half of grid[i]'s own cell (trapezoid rule)
    mass = (np.cumsum(density[::-1])[::-1] - density / 2) * h
    early = 1.0 - float(mass[0])                  # alpha the early looks spent
    if early >= alpha:
        raise SequentialError(f"sequential.earlyZ {early_z:g} spends {early:.4f} of the gate's false-reject "
                              f"rate {alpha:.4f} over {looks - 1} early looks; raise sequential.earlyZ in "
                              f"config.json (2.0 is the default)")
    # the last look keeps when S_K >= −z·√K: find z with P(survive, S_K < −z√K) = alpha − early
    target = 1.0 - alpha
    i = int(np.searchsorted(-mass, -target))      # first grid point where mass <= 1 − alpha
    i = min(max(i, 1), len(grid) - 1)
    lo, hi = grid[i - 1], grid[i]
    s = lo + (hi - lo) * (mass[i - 1] - target) / (mass[i - 1] - mass[i])
    return float(-s / math.sqrt(looks))


def expected_looks(looks: int, early_z: float, effect: float = 0.0) -> float:
    """Mean number of looks (waves) a decision takes when the true change is `effect` standard errors of the
    full comparison (normal theory; early looks stop at |Z_k| > early_z, both ways). For --plan."""
    if looks <= 1:
        return float(looks)
    import numpy as np
    h, grid, kernel = _walk(looks, effect)
    step = effect / math.sqrt(looks)                # each wave adds effect/√K to the walk S (unit variance)
    density = np.exp(-(grid - step) ** 2 / 2) / math.sqrt(2 * math.pi)
    mean, alive = 0.0, 1.0
    for k in range(1, looks):
        inside = np.abs(grid) <= early_z * math.sqrt(k)
        stopped = alive - float(density[inside].sum() * h)
        mean += k * stopped
        alive -= stopped
        density = np.convolve(np.where(inside, density, 0.0), kernel, mode="same")
        density = np.interp(grid - step, grid, density, left=0.0, right=0.0)
    return mean + looks * alive


@dataclass(frozen=True)
class Design:
    """How a val evaluation is looked at: K waves of one replicate each, early looks at `early_z`."""
    looks: int
    gate_z: float
    early_z: float

    @property
    def sequential(self) -> bool:
        return self.looks > 1 and self.gate_z > 0

    def z(self, look: int) -> float:
        """The critical z of look `look` (1-based)."""
        if not self.sequential:
            return self.gate_z
        return self.early_z if look < self.looks else last_look_z(self.looks, self.gate_z, self.early_z)

    def to_json(self) -> dict:
        return {"looks": self.looks, "gate_z": self.gate_z, "early_z": self.early_z,
                "last_z": self.z(self.looks), "sequential": self.sequential}


def wave(task_ids: Sequence[str], replicates: int) -> frozenset[tuple[str, int]]:
    """The cells of the first `replicates` waves: every task × replicates 0..replicates−1."""
    return frozenset((t, r) for t in task_ids for r in range(replicates))


def screen_tasks(task_ids: Sequence[str], n: int, seed: str) -> list[str]:
    """The train tasks a round's screen runs: n of them drawn by the run's seeded RNG, in suite order."""
    if n <= 0:
        return []
    if n >= len(task_ids):
        return list(task_ids)
    chosen = set(random.Random(seed).sample(sorted(task_ids), n))
    return [t for t in task_ids if t in chosen]


def early_decision(*, keep: bool, delta: float, t: float, se: float, min_improvement: float) -> str | None:
    """At an early look: 'loss' when the look's gate rejects (Δ below min_improvement − t·SE), 'win' when Δ is
    above the mirror image min_improvement + t·SE, else None (run the next wave). With no noise estimate
    (SE 0, or t 0: the raw gate) nothing is decided early."""
    if se <= 0 or t <= 0:
        return None
    if not keep:
        return "loss"
    # strictly above: a sign-flip gate over tied or few deltas has its mirror image exactly at Δ itself
    if delta > min_improvement + t * se + WIN_TOLERANCE * max(1.0, abs(delta)):
        return "win"
    return None
