"""Sequential val and the kill-only screen: which cells each look reads, and the critical z of each look.

A candidate's val cells run in waves (every task × replicate 1, then replicate 2, ...). After wave k < K the
gate looks at the paired per-task deltas of the first k replicates: a decisive loss at `early_z` rejects, a
decisive win at `early_z` keeps, anything else runs the next wave. The last look's z is solved so that the
overall false-reject rate of a null change is exactly 1 − Φ(gate_z) under normal noise: a Haybittle–Peto
design with the last boundary adjusted for the alpha the early looks spent. Under the null the cumulative look
statistics are Z_k = S_k/√k with S a Gaussian random walk; an early win stops the walk too (it keeps, so it
can never reject later), and P(reject) is integrated recursively over the looks' continuation regions and
solved for the last z by root-finding (no sampling, no grid-cell error: the same figures every time).

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


NODES = 1000   # Simpson intervals per look: the last z moves < 1e-11 from 1000 to 4000 nodes


def _simpson(lo: float, hi: float):
    """Simpson's rule on [lo, hi]: the nodes and their weights."""
    import numpy as np
    x = np.linspace(lo, hi, NODES + 1)
    w = np.full(NODES + 1, 2.0)
    w[1::2], w[0], w[-1] = 4.0, 1.0, 1.0
    return x, w * (hi - lo) / NODES / 3.0


def _looks(looks: int, early_z: float, step: float = 0.0):
    """The cumulative sum S_k (unit-variance steps of mean `step`) over the early looks k = 1..K−1, each
    stopping it outside (−early_z√k, early_z√k): a loss below, a win above.

    Returns (x, f, lost, alive): the nodes of S_{K−1} and its sub-density times the Simpson weights on the
    paths
    no early look stopped; P(an early look stopped at a loss); P(still running after look k) for k = 1..K−1.
    Recursive numerical integration (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19):
    f_{k+1}(y) = ∫ f_k(x) φ(y − x − step) dx over the continuation region, by Simpson's rule on nodes that
    end exactly at the boundaries, so the stopped mass leaves at the boundary itself (no grid-cell error).
    """
    import numpy as np
    x = f = None
    lost, alive = 0.0, []
    for k in range(1, looks):
        bound = early_z * math.sqrt(k)
        y, weights = _simpson(-bound, bound)
        if k == 1:
            lost += float(special.ndtr(-bound - step))
            density = np.exp(-(y - step) ** 2 / 2) / math.sqrt(2 * math.pi)
        else:
            lost += float(np.sum(f * special.ndtr(-bound - x - step)))
            density = np.exp(-(y[:, None] - x[None, :] - step) ** 2 / 2) / math.sqrt(2 * math.pi) @ f
        x, f = y, density * weights
        alive.append(float(f.sum()))
    return x, f, lost, alive


@lru_cache(maxsize=64)
def last_look_z(looks: int, gate_z: float, early_z: float) -> float:
    """The last look's z such that P(some look rejects | null) = 1 − Φ(gate_z) exactly under normal noise,
    when looks 1..K−1 stop at |Z_k| > early_z: a loss (Z_k < −early_z) rejects, a win (Z_k > early_z) keeps
    and so never rejects later. The win stops enter (binding: the loop always stops at a win). Solved by
    Brent's root-finding on the recursive integration of `_looks` (to 1e-12 in z); one look is the fixed
    gate."""
    if looks <= 1 or gate_z <= 0:
        return gate_z
    import numpy as np
    from scipy import optimize
    alpha = float(special.ndtr(-gate_z))
    x, f, lost, _ = _looks(looks, early_z)
    if lost >= alpha:
        raise SequentialError(f"sequential.earlyZ {early_z:g} spends {lost:.4f} of the gate's false-reject "
                              f"rate {alpha:.4f} over {looks - 1} early looks; raise sequential.earlyZ in "
                              f"config.json (2.0 is the default)")

    def excess(z: float) -> float:    # the last look rejects at S_K < −z·√K, S_K = S_{K−1} + N(0, 1)
        return lost + float(np.sum(f * special.ndtr(-z * math.sqrt(looks) - x))) - alpha

    return float(optimize.brentq(excess, -40.0, 40.0, xtol=1e-13, rtol=1e-13))


def _walk(looks: int, effect: float):
    """The grid step, the grid for S_K (±9 SD, shifted room for a drift) and the N(0, 1) step kernel."""
    import numpy as np
    h = 0.01
    half = 9.0 * math.sqrt(looks) + abs(effect) * math.sqrt(looks)
    kernel_x = np.arange(-9.0, 9.0 + h / 2, h)
    return h, np.arange(-half, half + h / 2, h), np.exp(-kernel_x ** 2 / 2) / math.sqrt(2 * math.pi) * h


@lru_cache(maxsize=64)
def _grid_last_z(looks: int, gate_z: float, early_z: float) -> float:
    """The last z as 8cec38c and before solved it (a 0.01 grid, early wins left in the walk): off the design
    at the 4th decimal, and kept ONLY because run ids hash it (Design.identity), so stored runs keep their id.
    Never a gate's z."""
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
        return math.nan
    # the last look keeps when S_K >= −z·√K: find z with P(survive, S_K < −z√K) = alpha − early
    target = 1.0 - alpha
    i = int(np.searchsorted(-mass, -target))      # first grid point where mass <= 1 − alpha
    i = min(max(i, 1), len(grid) - 1)
    lo, hi = grid[i - 1], grid[i]
    s = lo + (hi - lo) * (mass[i - 1] - target) / (mass[i - 1] - mass[i])
    return float(-s / math.sqrt(looks))


def expected_looks(looks: int, early_z: float, effect: float = 0.0) -> float:
    """Mean number of looks (waves) a decision takes when the true change is `effect` standard errors of the
    full comparison (normal theory; early looks stop at |Z_k| > early_z, both ways). For --plan.
    E[looks] = 1 + Σ_{k<K} P(still running after look k)."""
    if looks <= 1:
        return float(looks)
    return 1.0 + sum(_looks(looks, early_z, effect / math.sqrt(looks))[3])


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

    def identity(self) -> dict:
        """The design as run ids hash it: to_json() with the last z of the grid solver ids were made with
        (_grid_last_z), so a run stored before the exact solve keeps its id; the gate uses z()."""
        return {**self.to_json(), **({"last_z": _grid_last_z(self.looks, self.gate_z, self.early_z)}
                                     if self.sequential else {})}


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
