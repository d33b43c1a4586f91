"""Every estimate is an estimate of this run (issue 49, item 4): a cell none has measured is priced at the plan's
stated prior, never $0; cells are borrowed only from the same backend (a claude-cli plan never reads
anthropic-backend cells); an own --mutator-cmd is priced by its own measured spend once it has run ($0 when it
spends nothing), by the stated prior before."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from eval.cells import Contract, agent_key, evaluation_key
from eval.cost import Usage, parse_pricing, price_for, usd
from eval.suite import load_suite
from mutator.round.budget import Budget, BudgetStop, RunGate
from mutator.round.evaluations import _Starter
from mutator.round.solve import BARE
from mutator.store import cache
from mutator.store.db import connect, dumps

ROOT = Path(__file__).resolve().parents[3]
# the plan's stated priors (mutator/round/budget.py, printed by --plan)
PRIOR_CELL_TOKENS = Usage(input_tokens=40_000, output_tokens=4_000)
PRIOR_MUTATOR_TOKENS = Usage(input_tokens=80_000, output_tokens=8_000)
PRICING = parse_pricing(json.loads((ROOT / "config.json").read_text())["pricing"])
OPUS = price_for(PRICING, "claude-opus-4-5")
# a solve pass's cells: the mutator model, a real backend, its own salt
SOLVE = Contract(model="claude-opus-4-5", replicates=1, max_turns=30, agent="claude-cli@0123456789",
                 silence_ms=60_000, heartbeat_ms=60_000, salt="solve-1")


def store(tmp_path: Path, spent: float):
    db = connect(tmp_path / "mutator.db")
    db["runs"].insert({"id": "r", "status": "running", "cost_usd": spent})
    return db


def train():
    return load_suite(ROOT / "suites" / "clean-train")


def test_ungraded_solve_cells_are_priced_at_the_stated_prior_not_zero_and_the_cap_holds(tmp_path: Path) -> None:
    suite = train()
    n = len(suite.tasks)
    prior = usd(OPUS, PRIOR_CELL_TOKENS)
    assert prior == pytest.approx(0.30)                     # 40,000 in + 4,000 out at opus prices
    db = store(tmp_path, spent=0.9971)                      # $0.0029 under the cap
    with pytest.raises(BudgetStop, match=rf"solve pass 1/3 \({n} tasks\) \({n} cells\) would commit about "
                                         rf"\${n * prior:.4f} more"):
        Budget(1.0, PRICING).before_evaluation(db, "r", BARE, suite, SOLVE, f"solve pass 1/3 ({n} tasks)")
    # a cell its grader failed on (ungraded) measured the agent's spend all the same: later cells at its price
    key = evaluation_key(BARE, suite, SOLVE)
    row = cache.open_evaluation(db, key, BARE, suite, SOLVE, agent_key(BARE, suite, SOLVE))
    db["cells"].insert({"evaluation_id": row["id"], "task_id": suite.tasks[0].id, "replicate": 0,
                        "status": "grader_error", "score": 0.0, "cost_usd": 0.031})
    with pytest.raises(BudgetStop, match=rf"\({n - 1} cells\) would commit about \${(n - 1) * 0.031:.4f} more"):
        Budget(1.0, PRICING).before_evaluation(db, "r", BARE, suite, SOLVE, "solve pass 1/3")


def test_a_cell_none_has_measured_starts_only_if_the_prior_fits(tmp_path: Path) -> None:
    db = store(tmp_path, spent=0.5)
    gate = RunGate(Budget(1.0, PRICING), db, lambda: "r")
    starter = _Starter(gate, SOLVE, prior=usd(OPUS, PRIOR_CELL_TOKENS))
    assert starter.may_start()              # $0.30 of $0.50 left
    assert not starter.may_start()          # a second in flight would commit $0.60: refused, the cap holds
    fake = _Starter(gate, dataclasses.replace(SOLVE, agent="fake@1"), prior=0.0)   # a dry run: as before
    assert all(fake.may_start() for _ in range(5))


def test_an_own_mutator_that_spends_nothing_is_priced_zero_once_it_ran(tmp_path: Path) -> None:
    from mutator.store.attempts import measured_mutation_cost
    db = store(tmp_path, spent=0.99)
    prior = usd(OPUS, PRIOR_MUTATOR_TOKENS)
    db["attempts"].insert({"run_id": "r", "round": 0, "sibling": 0, "status": "kept", "mutator_cost_usd": 0.0,
                           "summary": None})
    assert measured_mutation_cost(db, "r") is None   # the seed's row is no mutator call
    with pytest.raises(BudgetStop, match=rf"would commit about \${prior:.4f} more"):   # before: the prior
        Budget(1.0, PRICING).before_mutation(db, "r", "the round 1 mutation", prior)
    db["attempts"].insert({"run_id": "r", "round": 1, "sibling": 0, "status": "failed", "mutator_cost_usd": 0.0,
                           "error": "could not start"})
    assert measured_mutation_cost(db, "r") is None   # a failed launch measured nothing
    db["attempts"].insert({"run_id": "r", "round": 2, "sibling": 0, "status": "rejected",
                           "mutator_cost_usd": 0.0, "summary": "shorter steps"})
    assert measured_mutation_cost(db, "r") == 0.0
    Budget(1.0, PRICING).before_mutation(db, "r", "the round 3 mutation", prior)   # $0: it fits under the cap


def seed_evaluation(db, settings, agent: str, cells: int, usd_total: float) -> None:
    from eval.snapshot import hash_tree
    db["evaluations"].insert({"key": f"k-{agent}", "genome_hash": hash_tree(settings.skill_dir), "suite": "s",
                              "status": "done", "model": settings.model, "n_done": cells,
                              "cost_usd_total": usd_total,
                              "contract": dumps({"agent": agent, "model": settings.model})})


@pytest.mark.parametrize(("build_id", "source"), [
    ("claude-cli@bbbbbbbbbb", "estimated"),                                   # another backend's cells: never
    ("anthropic@cccccccccc", "measured: the seed's 10 cells by another version of the same build agent"),
    ("anthropic@aaaaaaaaaa", "measured: the seed's 10 cells in the store"),
    ("command@dddddddddd", "estimated"),                                      # an own command: its own only
])
def test_a_plan_borrows_cells_only_from_the_same_backend(tmp_path: Path, build_id: str, source: str) -> None:
    from mutator.config import load_settings
    from mutator.validity.plan import plan
    data = tmp_path / "data"
    data.mkdir()
    settings = load_settings({"replicates": 1, "rounds": 1, "data_dir": str(data)})
    db = connect(settings.db_path)
    seed_evaluation(db, settings, "anthropic@aaaaaaaaaa", 10, 0.1475)          # $0.01475 a cell
    p = plan(settings, train=train(), val=load_suite(ROOT / "suites" / "clean-val"), holdout=None,
             build_id=build_id)
    assert p.cell_source.startswith(source), p.cell_source
    prior = usd(price_for(PRICING, settings.model), PRIOR_CELL_TOKENS)
    assert p.cell_usd == pytest.approx(0.01475 if source.startswith("measured") else prior)


def test_a_plan_prices_an_own_mutator_by_its_own_calls_and_says_the_prior_before(tmp_path: Path) -> None:
    from mutator.config import load_settings
    from mutator.validity.plan import plan, render_plan
    data = tmp_path / "data"
    data.mkdir()
    settings = load_settings({"replicates": 1, "rounds": 1, "data_dir": str(data)})
    db = connect(settings.db_path)
    for run_id, mutator, cost in (("a", "anthropic-mutator@1", 0.5), ("c", "command@mine", 0.0)):
        db["runs"].insert({"id": run_id, "status": "finished", "mutator_model": settings.mutator_model,
                           "config": dumps({"mutator": mutator})})
        db["attempts"].insert({"run_id": run_id, "round": 1, "sibling": 0, "status": "rejected",
                               "mutator_cost_usd": cost, "summary": "a change"})

    def planned(mutator_id: str):
        return plan(settings, train=train(), val=load_suite(ROOT / "suites" / "clean-val"), holdout=None,
                    build_id="anthropic@x", mutator_id=mutator_id)
    own = planned("command@mine")
    assert own.mutator_usd == 0.0 and "measured: mean of 1 calls of this --mutator-cmd" in own.mutator_source
    other = planned("command@other")       # never priced from the anthropic mutator's calls
    assert other.mutator_usd == pytest.approx(usd(OPUS, PRIOR_MUTATOR_TOKENS))
    assert "the stated prior: this --mutator-cmd has not run in this store yet" in render_plan(other)
    assert planned("anthropic-mutator@2").mutator_usd == pytest.approx(0.5)
