"""`--fake-noise realistic`: the noisy fake build agent's parameters (fakes/noisy_agent.py), fitted here
from SkillsBench's results (calibration.py), never hand-copied: per-task p ~ the No Skills rows' Beta, and
the logit lift of a skill that closes the whole bare→expert gap, chosen so the prior's mean pass rate moves
to the With Skills rows' (what curated skills do on average). Pure; runs no agent."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import optimize, special, stats

from mutator.validity.calibration import BetaFit, fit

GRID = 20_000       # quantile midpoints of the prior: E[·] over p exactly enough for a 4-decimal lift
P_FLOOR = 1e-6      # as fakes/noisy_agent.py clamps a drawn p


@dataclass(frozen=True)
class NoiseParams:
    alpha: float
    beta: float
    lift: float

    def argv(self) -> tuple[str, ...]:
        """The agent's command-line tail; rounded so the agent's id does not move with the optimiser's last
        bits."""
        return ("--alpha", f"{self.alpha:.4f}", "--beta", f"{self.beta:.4f}", "--lift", f"{self.lift:.4f}")


def prior_p(prior: BetaFit) -> np.ndarray:
    """The prior's p at GRID quantile midpoints, clamped as the agent clamps them."""
    u = (np.arange(GRID) + 0.5) / GRID
    return np.clip(stats.beta.ppf(u, prior.alpha, prior.beta), P_FLOOR, 1 - P_FLOOR)


def mean_after_lift(prior: BetaFit, lift: float) -> float:
    """E[sigmoid(logit p + lift)] for p ~ prior."""
    return float(special.expit(special.logit(prior_p(prior)) + lift).mean())


@cache
def realistic() -> NoiseParams:
    bare, skilled = fit("No Skills"), fit("With Skills")
    lift = optimize.brentq(lambda x: mean_after_lift(bare, x) - skilled.mean, -10.0, 10.0, xtol=1e-9)
    return NoiseParams(round(bare.alpha, 4), round(bare.beta, 4), round(float(lift), 4))
