"""The run budget (--budget-usd): a hard cap, checked before every cell and every mutator call.

Committed spend = the run's recorded cost (finished cells and mutator calls, across every resume)
plus what the next step commits before it starts. A cell is never started when the spend so far,
the cells in flight and itself would pass the cap, each cell priced at the mean cost of the cells whose
agent ran under the same contract (same model, agent implementation, turns...; graded or not), or,
before any, at the plan's stated prior (PRIOR_CELL_TOKENS at the cell's model: never $0 for lack of a
measurement); with no measured cell yet, one pilot cell runs alone first. A zero-spend fake's cells
(a dry run) are priced only by what they report. A mutator call is priced by this run's earlier calls
that ran (an own --mutator-cmd that spends nothing: $0), or, before the first, by the stated prior
(PRIOR_MUTATOR_TOKENS at the mutator model). So spend <= cap + the cells already in flight when the
cap is reached. The budget is not part of the run's identity: the same command with a higher cap
resumes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils

from eval.cells import Contract, agent_key, evaluation_key
from eval.cost import Price, PricingError, Usage, price_for, usd
from eval.errors import Stop
from eval.suite import Suite
from mutator.scoring.models import members
from mutator.store import cache, planning
from mutator.store.attempts import mean_mutation_cost, measured_mutation_cost  # noqa: F401 (read here)
from mutator.store.db import dumps
from mutator.store.runs import run_spent

# the plan's stated priors (mutator/validity/plan.py prints them): one real build-agent cell, one real mutator
# call, before this store has measured any
PRIOR_CELL_TOKENS = Usage(input_tokens=40_000, output_tokens=4_000)
PRIOR_MUTATOR_TOKENS = Usage(input_tokens=80_000, output_tokens=8_000)


def fake(agent_id: str) -> bool:
    """A zero-spend fake's implementation id (fakes/): priced only by what it reports, never by a prior."""
    return agent_id.startswith("fake@")


def prior_cell_usd(price: Price | None, agent_id: str) -> float:
    """What a cell of this agent costs before any is measured: the stated prior at its model's price (0 for a
    fake, or with no price known)."""
    return 0.0 if price is None or fake(agent_id) else usd(price, PRIOR_CELL_TOKENS)


def prior_mutator_usd(price: Price, mutator_id: str, db: sqlite_utils.Database | None = None,
                      model: str = "") -> float:
    """What a mutator call costs before this run has made one: the mean of this store's calls by the same
    mutator (an own --mutator-cmd's own, $0 ones counted; a backend's at this model), as --plan prices it;
    with none, the stated prior at the mutator model's price (0 for the fake mutator)."""
    if fake(mutator_id):
        return 0.0
    if db is not None:
        found = planning.mutator_calls(db, model, real=True, mutator=planning.mutator_pattern(mutator_id))
        if found.get("n"):
            return float(found["usd"] or 0.0)
    return usd(price, PRIOR_MUTATOR_TOKENS)


class BudgetStop(Stop, RuntimeError):
    """The next step would pass --budget-usd; the message says what was spent and how to resume."""


def cell_estimate(db: sqlite_utils.Database, contract: Contract) -> float | None:
    """Mean USD of the cells whose agent ran under this contract (same model, agent, turns...; the salt
    aside; a cell its grader failed on included: its agent was paid); None before any, when nothing is
    measured (the caller falls back to the stated prior: prior_cell_usd)."""
    unsalted = dumps({**contract.to_json(), "salt": ""})
    n, mean = cache.final_cell_cost(db, [dumps(contract.to_json()), unsalted])
    return float(mean or 0.0) if n else None


def cell_usd(db: sqlite_utils.Database, contract: Contract, price: Price | None) -> float:
    """A cell's price for a budget: measured (cell_estimate), else the stated prior (prior_cell_usd)."""
    measured = cell_estimate(db, contract)
    return prior_cell_usd(price, contract.agent) if measured is None else measured


def pending_cells(db: sqlite_utils.Database, key: str, n_cells: int, only: frozenset | None = None,
                  agent_key: str | None = None) -> int:
    """Cells of the evaluation `key` not stored yet: of all n_cells, or of just the (task, replicate) cells
    `only` names (a wave, a screen). A cell whose agent run another evaluation with `agent_key` holds is not
    pending: it is re-graded, its agent not run again."""
    stored = cache.stored_cells(db, key, agent_key)
    if only is not None:
        return len(set(only) - stored)
    return max(0, n_cells - len(stored))


@dataclass(frozen=True)
class Budget:
    limit_usd: float
    pricing: dict | None = None   # config.json pricing: prices a cell none has measured (the stated prior)

    def price(self, model: str) -> Price | None:
        try:
            return price_for(self.pricing, model) if self.pricing else None
        except PricingError:
            return None

    def check(self, *, spent: float, next_usd: float, what: str) -> None:
        """Raise BudgetStop when `spent + next_usd` would pass the cap (or it is already reached)."""
        if spent < self.limit_usd and spent + next_usd <= self.limit_usd:
            return
        suggest = max(self.limit_usd * 2, spent + next_usd * 2)
        raise BudgetStop(
            f"budget reached: ${spent:.4f} spent of --budget-usd {self.limit_usd:g}, and {what} would commit "
            f"about ${next_usd:.4f} more. The run is stopped with nothing lost; re-run the same command with "
            f"a higher cap (e.g. --budget-usd {suggest:.2f}) to resume it.")

    def before_evaluation(self, db: sqlite_utils.Database, run_id: str, genome_hash: str, suite: Suite,
                          contract: Contract, label: str, only: frozenset | None = None) -> None:
        # several eval models: each model's cells at its own mean cost
        pending, next_usd = 0, 0.0
        for member in members(contract):
            todo = pending_cells(db, evaluation_key(genome_hash, suite, member),
                                 len(suite.tasks) * member.replicates, only,
                                 agent_key(genome_hash, suite, member))
            each = cell_usd(db, member, self.price(member.model))
            pending, next_usd = pending + todo, next_usd + todo * each
        if pending:
            self.check(spent=run_spent(db, run_id), next_usd=next_usd, what=f"{label} ({pending} cells)")

    def before_mutation(self, db: sqlite_utils.Database, run_id: str, label: str,
                        first_usd: float = 0.0) -> None:
        """`first_usd` (the stated prior) stands in before this run's mutator has made a call."""
        measured = measured_mutation_cost(db, run_id)
        self.check(spent=run_spent(db, run_id), next_usd=first_usd if measured is None else measured,
                   what=label)

    def remaining(self, db: sqlite_utils.Database, run_id: str, unrecorded: float = 0.0) -> float:
        """USD left under the cap; `unrecorded` = spend of cells stored but not yet added to the run's
        cost."""
        return self.limit_usd - run_spent(db, run_id) - unrecorded


class RunGate:
    """A budget as an evaluation asks it, before each cell: what is left, and what a cell costs."""

    def __init__(self, budget, db: sqlite_utils.Database, run_id) -> None:
        self.budget, self.db, self.run_id = budget, db, run_id   # run_id: a callable, the run opens later

    def remaining(self, unrecorded: float) -> float:
        return self.budget.remaining(self.db, self.run_id(), unrecorded)

    def cell_estimate(self, contract: Contract) -> float | None:
        return cell_estimate(self.db, contract)


def refused(outcome, spent_usd: float) -> None:
    """Raise BudgetStop when an evaluation left cells unstarted at the cap (its `budget_stop` says which)."""
    if outcome.budget_stop:
        raise BudgetStop(f"budget reached mid-evaluation: {outcome.budget_stop}. ${spent_usd:.4f} spent; "
                         f"finished cells are kept. Re-run the same command with a higher --budget-usd to "
                         f"resume it.")
