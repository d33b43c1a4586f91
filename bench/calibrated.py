"""Landscapes at real agent noise: per-task success p from a beta prior (mutator/validity/calibration.py,
fitted from SkillsBench's trials, or τ-bench's preset), each cell a Bernoulli trial, and proposals from the
effect prior of the calibration note (shared/reference/noise-calibration.md) acting on the logit of p with
per-task spread. `skillsbench-graded` (Graded) is skillsbench with a continuous cell score in [0, 1].

A genome is a set of edit ids; an edit's parameters are drawn from its own keyed generator, so an edit
proposed by one line is the same edit in every line of a seed, and its id names it. The true composite of
any genome on any split is exact (a mean of known p's, costs and steps). Never imports the strategies or the
gate.
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special, stats

from bench.landscape import PER_TURN_IN, PER_TURN_OUT, WEIGHTS
from mutator.scoring.score import CellFigures, Normalisers, composite
from mutator.validity.calibration import BetaFit, preset

SIZES = {"train": 12, "val": 8, "test": 30}
TURN_USD = PER_TURN_IN * 1e-6 + PER_TURN_OUT * 5e-6   # one agent turn, priced as the quiet landscape's
BASE_STEPS = (20.0, 0.5)          # a task's turns: lognormal, median 20, log-SD 0.5
CELL_STEPS_SD = 0.2               # a cell's turns vary around its task's (log-SD, mean-preserving)
# the effect prior of one proposal (the reference note): class shares, then sizes in pass-rate points
NEUTRAL, HELPFUL, HARMFUL = 0.45, 0.30, 0.25
COST_ONLY = 0.10                  # of all proposals (out of the neutral ones): no effect on p, more turns
HELP_MEAN, HELP_CAP = 0.04, 0.15
HARM_MEAN, HARM_CAP = 0.03, 0.10
TAIL, TAIL_RANGE = 0.05, (0.10, 0.20)   # of all proposals: a harmful tail at −10 to −20 pp
TOUCH = (0.4, 0.6)                # share of tasks an edit touches
SPREAD = (1.2, 0.3)               # per-task b ~ N(mean b, (1.2|mean b| + 0.3)^2) on the logit
# a targeted proposal (the mutator acted on failing train tests) touches those tasks and is likelier to help
TARGETED = (0.35, 0.45, 0.20)     # neutral, helpful, harmful
SMART = 0.5                       # chance the mutator acts on its evidence when it has some
REMOVE, REPROPOSE = 0.10, 0.10    # chance it drops one of the parent's edits / re-proposes an earlier edit
# skillsbench-graded: a cell's per-trial variance as a share of the Bernoulli's p(1−p) (the most a [0, 1]
# score of mean p can have, reached only by a 0/1 score): a stated choice, see Graded
GRADED_SHARE = 0.8
EPS = 1e-6


@dataclass(frozen=True)
class Edit:
    """One proposed change: its class, its population effect on the pass rate, its per-task logit shifts and
    its multiplier on turns."""
    id: str
    kind: str                    # neutral | helpful | harmful | cost
    effect: float                # the drawn population effect in pass-rate points (0 for cost-only)
    b: dict                      # (split, task) -> logit shift, on touched tasks only
    steps: float                 # multiplier on every task's turns


def _b_grid(prior: BetaFit) -> tuple[np.ndarray, np.ndarray]:
    """g(b) = E over p ~ prior and the per-task spread of σ(logit p + b_t) − p, on a grid of mean shifts b."""
    ps = stats.beta.ppf((np.arange(400) + 0.5) / 400, prior.alpha, prior.beta).clip(EPS, 1 - EPS)
    z, w = np.polynomial.hermite_e.hermegauss(24)
    w = w / w.sum()
    grid = np.linspace(-8, 8, 641)
    lp = special.logit(ps)[:, None]
    g = np.array([(w * (special.expit(lp + b + (SPREAD[0] * abs(b) + SPREAD[1]) * z) - ps[:, None])).sum(1)
                  .mean() for b in grid])
    return grid, g


@functools.cache
def effect_to_b(alpha: float, beta: float):
    grid, g = _b_grid(BetaFit(alpha, beta))
    g = np.maximum.accumulate(g)   # monotone (it is, up to quadrature error)
    return lambda effect: float(np.interp(effect, g, grid))


class Calibrated:
    """A seed's landscape: tasks with base p, turns; edits drawn on demand by their id."""

    def __init__(self, rng: random.Random, prior: BetaFit, name: str) -> None:
        self.name, self.prior, self.seed_genome = name, prior, frozenset()
        self.suites = {split: {f"{split}-{i:02d}": None for i in range(n)} for split, n in SIZES.items()}
        self.p0, self.steps0 = {}, {}
        for split, tasks in self.suites.items():
            for task in tasks:
                self.p0[(split, task)] = min(max(rng.betavariate(prior.alpha, prior.beta), EPS), 1 - EPS)
                self.steps0[(split, task)] = BASE_STEPS[0] * math.exp(rng.gauss(0, BASE_STEPS[1]))
        self.edits: dict[str, Edit] = {}
        self._to_b = effect_to_b(prior.alpha, prior.beta)
        self._p: dict = {}

    # ---- edits ---------------------------------------------------------------------------------------
    def edit(self, key: int, focus: tuple[str, ...] = ()) -> Edit:
        """The edit drawn from key (and, for a targeted edit, the failing train tasks it aims at)."""
        eid = hashlib.sha256(f"{key}:{','.join(focus)}".encode()).hexdigest()[:10]
        if eid not in self.edits:
            self.edits[eid] = self._draw(eid, focus)
        return self.edits[eid]

    def _draw(self, eid: str, focus: tuple[str, ...]) -> Edit:
        r = random.Random(f"edit:{eid}")
        neutral, helpful, _ = TARGETED if focus else (NEUTRAL, HELPFUL, HARMFUL)
        u = r.random()
        steps = math.exp(r.gauss(0.02, 0.03))
        if u < COST_ONLY and not focus:
            return Edit(eid, "cost", 0.0, {}, math.exp(r.uniform(0.05, 0.25)))
        if u < neutral:
            kind, effect = "neutral", r.uniform(-0.01, 0.01)
        elif u < neutral + helpful:
            kind, effect = "helpful", min(0.01 + r.expovariate(1 / HELP_MEAN), HELP_CAP)
        elif r.random() < TAIL / HARMFUL:
            kind, effect = "harmful", -r.uniform(*TAIL_RANGE)
        else:
            kind, effect = "harmful", -min(0.01 + r.expovariate(1 / HARM_MEAN), HARM_CAP)
        touch = r.uniform(*TOUCH)
        b_mean = self._to_b(effect / touch)
        sd = SPREAD[0] * abs(b_mean) + SPREAD[1]
        b = {}
        for split, tasks in self.suites.items():
            for task in tasks:
                hit = r.random() < touch or (split == "train" and task in focus)
                shift = r.gauss(b_mean, sd)
                if hit:
                    b[(split, task)] = shift
        return Edit(eid, kind, effect, b, steps)

    # ---- the truth -----------------------------------------------------------------------------------
    def p(self, genome: frozenset, split: str, task: str) -> float:
        key = (genome, split, task)
        if key not in self._p:
            shift = sum(self.edits[e].b.get((split, task), 0.0) for e in genome)
            self._p[key] = float(special.expit(special.logit(self.p0[(split, task)]) + shift))
        return self._p[key]

    def steps(self, genome: frozenset, split: str, task: str) -> float:
        return self.steps0[(split, task)] * math.prod(self.edits[e].steps for e in genome)

    def mean_steps(self, genome: frozenset, split: str) -> float:
        return sum(self.steps(genome, split, t) for t in self.suites[split]) / len(self.suites[split])

    def norm(self, split: str) -> Normalisers:
        steps = self.mean_steps(self.seed_genome, split)
        return Normalisers(steps * TURN_USD, steps)

    def expected(self, genome: frozenset, split: str, norm: Normalisers) -> float:
        """The genome's true composite on `split`: exact."""
        tasks = self.suites[split]
        steps = self.mean_steps(genome, split)
        mean = sum(self.p(genome, split, t) for t in tasks) / len(tasks)
        return composite(mean, steps * TURN_USD, steps, WEIGHTS, norm.seed_cost, norm.seed_steps)[0]

    def optimum(self, split: str, norm: Normalisers) -> float:
        return math.nan    # an unbounded catalogue of edits: no enumerable optimum

    def cell_sd(self, split: str = "val") -> float:
        """Mean per-cell SD of the seed's scores on `split` (Bernoulli: √(p(1−p)))."""
        tasks = self.suites[split]
        return sum(math.sqrt(self.p(self.seed_genome, split, t) * (1 - self.p(self.seed_genome, split, t)))
                   for t in tasks) / len(tasks)

    # ---- one measured cell ---------------------------------------------------------------------------
    def cell(self, genome: frozenset, split: str, task: str, replicate: int, rng: random.Random | None = None,
             *, stream: str = "") -> tuple[CellFigures, list[str]]:
        """One cell: a Bernoulli trial at the task's p, its turns around the task's; drawn from the keyed
        generator (stream, split, task, replicate, genome) as bench/landscape.py's cells are."""
        draw = random.Random(f"cell:{stream}:{split}:{task}:{replicate}:{sorted(genome)}") if stream else rng
        passed = draw.random() < self.p(genome, split, task)
        noise = math.exp(draw.gauss(0, CELL_STEPS_SD) - CELL_STEPS_SD ** 2 / 2)   # mean 1
        steps = self.steps(genome, split, task) * noise
        return (CellFigures(task, replicate, float(passed), steps * TURN_USD, steps, True),
                [] if passed else [f"{task}:fail"])


class CalibratedMutator:
    """One change per call: follow an objective, lend a ref's edit, drop an edit, re-propose an earlier one,
    or a new edit — targeted at the failing train tasks SMART of the time when there is evidence."""

    def __init__(self, land: Calibrated, rng: random.Random) -> None:
        self.land, self.rng, self.proposed = land, rng, []

    @classmethod
    def for_seed(cls, land: Calibrated, seed: int) -> CalibratedMutator:
        return cls(land, random.Random(f"mutator:{seed}"))

    def __call__(self, parent: frozenset, *, objective: str | None, refs: list, failing: dict,
                 targets: tuple[str, ...]) -> tuple[frozenset, str]:
        if objective in self.land.edits and objective not in parent:
            return parent | {objective}, objective
        for ref in refs:
            lend = sorted(ref - parent)
            if lend:
                eid = self.rng.choice(lend)
                return parent | {eid}, eid
        u = self.rng.random()
        if parent and u < REMOVE:
            eid = self.rng.choice(sorted(parent))
            return parent - {eid}, f"-{eid}"
        earlier = [e for e in self.proposed if e not in parent]
        if earlier and u < REMOVE + REPROPOSE:
            eid = self.rng.choice(earlier)
            return parent | {eid}, eid
        key = self.rng.getrandbits(48)
        focus = ()
        if failing and self.rng.random() < SMART:
            focus = tuple(sorted(t for t in targets if t in failing) or sorted(failing)[:3])
        eid = self.land.edit(key, focus).id
        self.proposed.append(eid)
        return parent | {eid}, eid


class Graded(Calibrated):
    """skillsbench with a graded grader: a cell's score is continuous in [0, 1], Beta(p·k, (1−p)·k) at its
    task's p, so its mean is p, as a trial's is on skillsbench, and its variance is p(1−p)/(k + 1).

    The issue asks for "the same per-trial variance", but a score in [0, 1] with mean p has variance at most
    p(1−p), and only a 0/1 score reaches it: a continuous score can only come near. The stated choice: the
    per-trial variance is GRADED_SHARE (0.8) of p(1−p) on every task, so k = 1/GRADED_SHARE − 1 (0.25),
    derived here; the per-trial SD is √0.8 ≈ 0.89 of skillsbench's at every p (the mean over the fitted
    prior: docs/benchmarks/default-line.md, "The landscapes"). At that k the score is U-shaped: most cells
    near 0 or 1, about a quarter of a mid-p task's strictly inside (0.05, 0.95), so per-task deltas are
    almost never tied at 0 as pass/fail ones mostly are.
    A cell reports its task failing when its score is below ½ (on skillsbench: when it is 0).

    A seed's tasks, p's, turns and edits are skillsbench's of the same seed (the same generator), so the two
    landscapes differ only in the cells' score distribution."""

    def __init__(self, rng: random.Random, prior: BetaFit, name: str, share: float = GRADED_SHARE) -> None:
        if not 0 < share < 1:
            raise ValueError(f"graded share {share}: a continuous [0, 1] score needs 0 < share < 1")
        super().__init__(rng, prior, name)
        self.share, self.k = share, 1 / share - 1

    def cell_sd(self, split: str = "val") -> float:
        """Mean per-cell SD of the seed's scores on `split`: √(share · p(1−p))."""
        return math.sqrt(self.share) * super().cell_sd(split)

    def cell(self, genome: frozenset, split: str, task: str, replicate: int, rng: random.Random | None = None,
             *, stream: str = "") -> tuple[CellFigures, list[str]]:
        """One cell: a Beta(p·k, (1−p)·k) score, its turns around the task's; keyed as Calibrated's cells."""
        draw = random.Random(f"cell:{stream}:{split}:{task}:{replicate}:{sorted(genome)}") if stream else rng
        p = min(max(self.p(genome, split, task), EPS), 1 - EPS)   # the logit of p0 + shifts may round to 1
        score = draw.betavariate(p * self.k, (1 - p) * self.k)
        noise = math.exp(draw.gauss(0, CELL_STEPS_SD) - CELL_STEPS_SD ** 2 / 2)   # mean 1
        steps = self.steps(genome, split, task) * noise
        return (CellFigures(task, replicate, score, steps * TURN_USD, steps, True),
                [] if score >= 0.5 else [f"{task}:fail"])


LANDSCAPES = ("quiet", "skillsbench", "tau", "skillsbench-graded")


def make(name: str, seed: int):
    """The named landscape of one seed: quiet (bench/landscape.py, the fakes), skillsbench, tau or
    skillsbench-graded (skillsbench's seed with graded cells)."""
    if name == "quiet":
        from bench.landscape import Landscape
        return Landscape(random.Random(seed))
    if name in ("skillsbench", "tau"):
        return Calibrated(random.Random(f"land:{name}:{seed}"), preset(name), name)
    if name == "skillsbench-graded":
        return Graded(random.Random(f"land:skillsbench:{seed}"), preset("skillsbench"), name)
    raise ValueError(f"--landscape {name!r}: use one of {', '.join(LANDSCAPES)}")


def mutator_for(land, seed: int):
    """The landscape's simulated mutator on the seed's one shared stream."""
    if isinstance(land, Calibrated):
        return CalibratedMutator.for_seed(land, seed)
    from bench.landscape import Mutator
    return Mutator.for_seed(land, seed)


def seed_genome(land) -> frozenset:
    from bench.landscape import SEED_RULES, Genome
    return getattr(land, "seed_genome", Genome(SEED_RULES))


def norm_of(land, split: str) -> Normalisers:
    from bench.landscape import norm_for
    return land.norm(split) if isinstance(land, Calibrated) else norm_for(land, split)


def describe(land: Calibrated) -> str:
    cells = (f"Beta(p·{land.k:.3g}, (1−p)·{land.k:.3g}) graded cells, variance {land.share:g} of p(1−p)"
             if isinstance(land, Graded) else "Bernoulli cells")
    return (f"Calibrated landscape '{land.name}' (per-task p ~ Beta({land.prior.alpha:.3f}, "
            f"{land.prior.beta:.3f}), {cells}, the reference note's effect prior on the logit)")


def definition_hash() -> str:
    """sha256 of this file and the calibration data: what a calibrated table was made on."""
    from mutator.validity.calibration import DATA
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(DATA.read_bytes())
    return h.hexdigest()[:12]
