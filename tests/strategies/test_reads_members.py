"""A strategy that says it reads no `State.members` (greedy, branching) never touches them, so the loop builds none:
building them reads every scored genome's cells each round, a cost that grows with the run."""

from __future__ import annotations

import random

import pytest

from strategies import CandidateSpec, Member, State, registry
from tests.strategies.helpers import scored


class Untouchable(tuple):
    """Members that fail the test when a strategy reads them."""

    def __iter__(self):
        raise AssertionError("the strategy read State.members")

    def __len__(self):
        raise AssertionError("the strategy read State.members")

    def __getitem__(self, index):
        raise AssertionError("the strategy read State.members")


@pytest.mark.parametrize("name", sorted(registry()))
def test_a_strategy_that_reads_no_members_never_touches_them(name: str) -> None:
    strategy = registry()[name]()
    incumbent = Member("inc", 0.5, {"t1": 0.5})
    state = State(round=3, incumbent=incumbent, rng=random.Random(0), members=Untouchable((incumbent,)),
                  pool=("inc",))
    if strategy.reads_members:
        with pytest.raises(AssertionError, match="read State.members"):
            strategy.integrate(state, [scored(0, strategy.plan(state)[0], "child", 0.6, keep=True)])
        return
    specs = strategy.plan(state)
    assert specs and all(isinstance(spec, CandidateSpec) for spec in specs)
    strategy.integrate(state, [scored(i, spec, f"child{i}", 0.6 + i / 100, keep=True) for i, spec in enumerate(specs)])


def test_the_loop_builds_members_only_for_a_strategy_that_reads_them() -> None:
    assert {name: cls.reads_members for name, cls in registry().items()} == \
        {"greedy": False, "branching": False, "population": True, "pareto": True}
