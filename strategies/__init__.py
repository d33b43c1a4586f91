"""Search topologies behind one interface: `plan` what to mutate, `integrate` what was scored.

Strategies see a small `State`, never the database; they must be deterministic given the state
and its seeded RNG, so a resumed round re-plans exactly what the crashed one planned.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from eval.errors import SkillMutatorError


class StrategyError(SkillMutatorError, ValueError):
    """Unknown strategy or bad --strategy-opts; the message lists the valid options."""


@dataclass(frozen=True)
class Member:
    """A scored genome as strategies see it: its val composite and per-task composites."""
    genome_hash: str
    composite: float
    task_composites: dict[str, float] = field(default_factory=dict)
    # per-train-task composites from a finished train evaluation (empty when never selected for train);
    # pareto aims the mutator at train tasks, since the mutator must never see which val tasks moved
    train_task_composites: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class State:
    round: int
    incumbent: Member
    rng: random.Random
    # every genome this run has scored on val, seed included; left empty for a strategy whose `reads_members`
    # is False (the loop reads no cells for it)
    members: tuple[Member, ...] = ()
    pool: tuple[str, ...] = ()             # population: the pool's genome hashes (leader first)


@dataclass(frozen=True)
class CandidateSpec:
    parent_hash: str
    ref_hashes: tuple[str, ...] = ()
    objective: str = ""                     # branching: later siblings implement this objective
    target_tasks: tuple[str, ...] = ()      # pareto: train tasks the parent loses
    share_objective: bool = False           # branching: the loop hands this sibling sibling 0's summary


@dataclass(frozen=True)
class Scored:
    sibling: int
    spec: CandidateSpec
    genome_hash: str | None
    evaluated: bool                         # False for critic-rejected or failed attempts
    composite: float = 0.0
    keep_by_gate: bool = False              # the noise gate's verdict vs the incumbent
    task_composites: dict[str, float] = field(default_factory=dict)
    delta: float | None = None              # the gate's Δcomposite vs the incumbent, and its threshold: the
    threshold: float | None = None          # figures a verdict's reason quotes (strategies/reasons.py)
    rejected_on: tuple[str, ...] = ()       # score.modelGate 'each': the eval models it is a decisive loss on
    # score.keepRule other than 'lenient': its stored figures (gate.keep_rule: rule, bar or posterior,
    # gate_keep)
    keep_rule: dict | None = None


@dataclass(frozen=True)
class Integration:
    # sibling -> Verdict.KEEP | Verdict.REJECT (evaluated siblings only)
    verdicts: dict[int, str]
    incumbent: str
    selected: tuple[str, ...]               # genomes to evaluate on train as next round's evidence
    pool: tuple[str, ...] = ()
    # sibling -> why it got its verdict (the loop stores it)
    reasons: dict[int, str] = field(default_factory=dict)


class Strategy(Protocol):
    id: str
    # whether plan/integrate read `State.members`: building them reads every scored genome's cells
    reads_members: bool

    def plan(self, state: State) -> list[CandidateSpec]: ...

    def integrate(self, state: State, scored: list[Scored]) -> Integration: ...


def registry() -> dict[str, Any]:
    """Strategy id -> its class, in the order the launch form offers them."""
    from strategies.branching import Branching
    from strategies.greedy import Greedy
    from strategies.pareto import Pareto
    from strategies.population import Population
    return {"greedy": Greedy, "branching": Branching, "population": Population, "pareto": Pareto}


def make_strategy(strategy_id: str, opts: dict[str, Any]) -> Strategy:
    registry_ = registry()
    if strategy_id not in registry_:
        raise StrategyError(f"unknown strategy {strategy_id!r}; available: {', '.join(sorted(registry_))}")
    return registry_[strategy_id].from_opts(opts)


def check_opts(strategy_id: str, opts: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Merge opts over defaults, refusing unknown keys and values of the wrong type."""
    listing = ", ".join(f"{k}={v!r}" for k, v in defaults.items()) or "(none)"
    unknown = set(opts) - set(defaults)
    if unknown:
        raise StrategyError(f"--strategy-opts: unknown key(s) {', '.join(sorted(unknown))} for "
                            f"{strategy_id}; valid options and defaults: {listing}")
    merged = {**defaults, **opts}
    for key, value in merged.items():
        want = type(defaults[key])
        if isinstance(value, bool) != isinstance(defaults[key], bool) or not isinstance(value, (want, int)):
            raise StrategyError(f"--strategy-opts: {key} must be {want.__name__}, got {value!r}; "
                                f"valid options and defaults: {listing}")
    return merged


def bad_value(strategy_id: str, key: str, value: Any, rule: str, defaults: dict[str, Any]) -> StrategyError:
    """The error for an option of the right type but out of range, listing the valid options."""
    listing = ", ".join(f"{k}={v!r}" for k, v in defaults.items())
    return StrategyError(f"--strategy-opts: {key} for {strategy_id} must be {rule}, got {value!r}; "
                         f"valid options and defaults: {listing}")
