"""Cached evaluations: the bridge between the stateless eval core and the store's evaluation cache.

The same evaluation key spends nothing twice (mutator/store/cache.py holds the rows); a crash re-runs
only the cells that never finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from eval.cells import Contract, evaluation_key
from eval.cost import Price, price_for
from eval.evaluate import EvalRequest, evaluate_async, pending_cells
from eval.jobs import CellResult
from eval.suite import Suite
from mutator.progress import Progress
from mutator.score import CellFigures
from mutator.store import cache
from sandbox import Launcher


@dataclass(frozen=True)
class Outcome:
    evaluation_id: int
    cells: tuple[CellFigures, ...]
    ran: int            # cells run now (0 = served from the cache)
    ran_cost: float     # USD of the cells run now


@dataclass
class Evaluator:
    db: sqlite_utils.Database
    data_dir: Path
    contract: Contract
    agent_argv: Sequence[str]
    launcher: Launcher
    price: Price
    concurrency: int
    grader_timeout_s: float
    progress: Progress
    network: bool = False   # real backends need the model API inside a sandbox

    @classmethod
    def for_settings(cls, settings, db: sqlite_utils.Database, contract: Contract, *, agent_argv: Sequence[str],
                     launcher: Launcher, progress: Progress, network: bool = False,
                     concurrency: int | None = None) -> Evaluator:
        """The evaluator a command builds from its settings: priced by the contract's model."""
        return cls(db=db, data_dir=settings.data_dir, contract=contract, agent_argv=agent_argv, launcher=launcher,
                   price=price_for(settings.pricing, contract.model), concurrency=concurrency or settings.concurrency,
                   grader_timeout_s=settings.grader_timeout_ms / 1000, progress=progress, network=network)

    def evaluate(self, genome_dir: Path | None, genome_hash: str, skill_name: str, suite: Suite, *, label: str,
                 contract: Contract | None = None, price: Price | None = None) -> Outcome:
        """genome_dir None evaluates bare (no skill), e.g. the solve phase; price defaults to the build model's."""
        contract = contract or self.contract
        key = evaluation_key(genome_hash, suite, contract)
        row = cache.open_evaluation(self.db, key, genome_hash, suite, contract)
        evaluation_id = row["id"]
        ran, ran_cost = 0, 0.0
        if row["status"] != "done":
            ran, ran_cost = self._run(evaluation_id, genome_dir, skill_name, suite, contract, key, label,
                                      price or self.price)
        return Outcome(evaluation_id, self.cells(evaluation_id), ran, ran_cost)

    def _run(self, evaluation_id: int, genome_dir: Path | None, skill_name: str, suite: Suite,
             contract: Contract, key: str, label: str, price: Price) -> tuple[int, float]:
        done = cache.finished(self.db, evaluation_id)
        request = EvalRequest(
            skill_dir=genome_dir, skill_name=skill_name, suite=suite, contract=contract, key=key,
            cells_root=self.data_dir / "evals" / key, agent_argv=self.agent_argv, launcher=self.launcher,
            price=price, concurrency=self.concurrency, grader_timeout_s=self.grader_timeout_s,
            network=self.network)
        total = len(suite.tasks) * contract.replicates
        todo = len(pending_cells(request, done))
        counts = {"done": total - todo, "errors": 0}
        self.progress.start(label, total, counts["done"])

        def on_cell(cell: CellResult) -> None:
            cache.store_cell(self.db, evaluation_id, cell)
            counts["done"] += 1
            counts["errors"] += cell.status != "ok"
            self.progress.update(counts["done"], total, errors=counts["errors"])

        results = asyncio.run(evaluate_async(request, skip=done, on_cell=on_cell))
        self.progress.finish()
        cache.close_evaluation(self.db, evaluation_id)
        # an LLM judge's own calls are spend too (budget, run total), though not part of the composite
        return len(results), sum(cell.cost_usd + cell.extra.get("grader_cost_usd", 0.0) for cell in results)

    def cells(self, evaluation_id: int) -> tuple[CellFigures, ...]:
        return tuple(
            CellFigures(task_id=r["task_id"], replicate=r["replicate"], score=r["score"] or 0.0,
                        cost_usd=r["cost_usd"] or 0.0, steps=r["steps"] or 0, ok=r["status"] == "ok")
            for r in cache.cell_rows(self.db, evaluation_id))
