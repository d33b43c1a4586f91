"""Constructed states for strategy tests: members with per-task scores and a scripted RNG."""

from __future__ import annotations

import random

from strategies import Member, Scored, State


class ScriptedRng:
    """Records every weighted draw; `picks` chooses the index returned, `randoms` feeds random()."""

    def __init__(self, randoms=(), picks=()) -> None:
        self.randoms, self.picks = list(randoms), list(picks)
        self.draws: list[tuple[list, list]] = []

    def choices(self, population, weights=None, k=1):
        self.draws.append((list(population), list(weights or [])))
        index = self.picks.pop(0) if self.picks else 0
        return [population[index]]

    def random(self) -> float:
        return self.randoms.pop(0) if self.randoms else 0.99


def member(name: str, composite: float, tasks: dict[str, float] | None = None,
           train: dict[str, float] | None = None) -> Member:
    return Member(name, composite, dict(tasks or {}), dict(train or {}))


def state(incumbent: Member, members=(), pool=(), rng=None, round_no: int = 1) -> State:
    return State(round=round_no, incumbent=incumbent, rng=rng or random.Random(0),
                 members=tuple(members) or (incumbent,), pool=tuple(pool))


def scored(sibling: int, spec, genome_hash: str | None, composite: float = 0.0, keep: bool = False,
           evaluated: bool = True, tasks: dict[str, float] | None = None) -> Scored:
    return Scored(sibling, spec, genome_hash, evaluated=evaluated, composite=composite, keep_by_gate=keep,
                  task_composites=dict(tasks or {}))
