"""The run budget (--budget-usd): a hard cap, checked before every cell and every mutator call.

Committed spend = the run's recorded cost (finished cells and mutator calls, across every resume)
plus what the next step commits before it starts. A cell is never started when the spend so far,
the cells in flight and itself (each at the mean cost of the finished cells under the same contract)
would pass the cap; with no such cell yet, one pilot cell runs alone first. A mutator call is
estimated from this run's earlier real (non-zero) mutator calls, or, before the first, as one build
cell priced at the mutator model. So spend <= cap + the cells already in flight when the cap is
reached. The budget is not part of the run's identity: the same command with a higher cap resumes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils

from eval.cells import Contract, agent_key, evaluation_key
from eval.errors import Stop
from eval.suite import Suite
from mutator.scoring.models import members
from mutator.store import cache
from mutator.store.attempts import mean_mutation_cost
from mutator.store.db import dumps
from mutator.store.runs import run_spent


class BudgetStop(Stop, RuntimeError):
    """The next step would pass --budget-usd; the message says what was spent and how to resume."""


def cell_estimate(db: sqlite_utils.Database, contract: Contract) -> float | None:
    """Mean USD of the final cells already run under this contract (same model, agent, turns...; the
    salt aside); None before any, when nothing is known to estimate from."""
    unsalted = dumps({**contract.to_json(), "salt": ""})
    n, mean = cache.final_cell_cost(db, [dumps(contract.to_json()), unsalted])
    return float(mean or 0.0) if n else None


def mean_cell_cost(db: sqlite_utils.Database, contract: Contract) -> float:
    return cell_estimate(db, contract) or 0.0


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
            pending, next_usd = pending + todo, next_usd + todo * mean_cell_cost(db, member)
        if pending:
            self.check(spent=run_spent(db, run_id), next_usd=next_usd, what=f"{label} ({pending} cells)")

    def before_mutation(self, db: sqlite_utils.Database, run_id: str, label: str,
                        first_usd: float = 0.0) -> None:
        """`first_usd` stands in for the mean before this run has made a real mutator call."""
        self.check(spent=run_spent(db, run_id), next_usd=mean_mutation_cost(db, run_id) or first_usd,
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


def price_ratio(mutator, build) -> float:
    """How much dearer the mutator model is than the build model (input and output prices summed)."""
    return (mutator.input + mutator.output) / ((build.input + build.output) or 1.0)
