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


# A dry run in its own process, recording how many members each round's State held.
RUN = """import json, sys
from mutator.cli.main import main
from mutator.round import loop
seen, state = [], loop.Loop.state
def recorded(self, round_no, val_norm):
    found = state(self, round_no, val_norm)
    seen.append(len(found.members))
    return found
loop.Loop.state = recorded
code = main(["--suite", "clean-train", "--val", "clean-val", "--rounds", "3", "--replicates", "1", "--strategy",
             sys.argv[1], "--data-dir", sys.argv[2]])
print(json.dumps({"code": code, "members": seen}))
"""


@pytest.mark.parametrize("name", ["greedy", "pareto"])
def test_the_loop_builds_members_only_for_a_strategy_that_reads_them(name: str, tmp_path) -> None:
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT
    done = subprocess.run([sys.executable, "-c", RUN, name, str(tmp_path / "data")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["code"] == 0 and len(found["members"]) >= 3, done.stderr[-2000:]
    if registry()[name].reads_members:
        assert all(n >= 1 for n in found["members"])   # the seed at least, and each scored candidate after it
    else:
        assert set(found["members"]) == {0}
