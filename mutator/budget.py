"""The run budget (--budget-usd): stop cleanly before committed spend would pass the cap.

Committed spend = the run's recorded cost (finished cells and mutator calls, across every resume)
plus what the next step commits before it starts: an evaluation's unfinished cells × the mean cost
of a cell already run under the same contract, or one mutator call × the mean of this run's earlier
ones. A step with nothing to run (a cached evaluation) is never stopped. The budget is not part of
the run's identity, so the same command with a higher cap resumes the same run.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils

from eval.cells import Contract, evaluation_key
from eval.suite import Suite
from mutator.store.db import dumps


class BudgetStop(RuntimeError):
    """The next step would pass --budget-usd; the message says what was spent and how to resume."""


def run_spent(db: sqlite_utils.Database, run_id: str) -> float:
    found = list(db.query("select cost_usd from runs where id = ?", [run_id]))
    return float(found[0]["cost_usd"] or 0.0) if found else 0.0


def mean_cell_cost(db: sqlite_utils.Database, contract: Contract) -> float:
    """Mean USD of the cells already run under this contract (same model, agent, turns...); 0 before any."""
    found = list(db.query("select avg(c.cost_usd) as mean from cells c join evaluations e on e.id = c.evaluation_id "
                          "where e.contract = ?", [dumps(contract.to_json())]))
    return float(found[0]["mean"] or 0.0) if found else 0.0


def pending_cells(db: sqlite_utils.Database, key: str, n_cells: int) -> int:
    found = list(db.query("select count(*) as n from cells c join evaluations e on e.id = c.evaluation_id "
                          "where e.key = ?", [key]))
    return max(0, n_cells - int(found[0]["n"] if found else 0))


def mean_mutation_cost(db: sqlite_utils.Database, run_id: str) -> float:
    found = list(db.query("select avg(mutator_cost_usd) as mean from attempts where run_id = ? and "
                          "mutator_cost_usd is not null", [run_id]))
    return float(found[0]["mean"] or 0.0) if found else 0.0


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
            f"about ${next_usd:.4f} more. The run is stopped with nothing lost; re-run the same command with a "
            f"higher cap (e.g. --budget-usd {suggest:.2f}) to resume it.")

    def before_evaluation(self, db: sqlite_utils.Database, run_id: str, genome_hash: str, suite: Suite,
                          contract: Contract, label: str) -> None:
        key = evaluation_key(genome_hash, suite, contract)
        pending = pending_cells(db, key, len(suite.tasks) * contract.replicates)
        if pending:
            self.check(spent=run_spent(db, run_id), next_usd=pending * mean_cell_cost(db, contract),
                       what=f"{label} ({pending} cells)")

    def before_mutation(self, db: sqlite_utils.Database, run_id: str, label: str) -> None:
        self.check(spent=run_spent(db, run_id), next_usd=mean_mutation_cost(db, run_id), what=label)
