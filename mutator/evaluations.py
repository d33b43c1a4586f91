"""Cached evaluations: the bridge between the stateless eval core and the store.

An evaluation row is keyed by genome + suite content + contract; finished cells are written the
moment they are graded (cell + its tests in one transaction), so a crash re-runs only the cells
that never finished and a repeated key spends nothing.
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
from eval.runner import CellResult
from eval.suite import Suite
from mutator.db import dumps, now
from mutator.progress import Progress
from mutator.score import CellFigures
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
        row = self._row(key)
        if row is None:
            n_cells = len(suite.tasks) * contract.replicates
            evaluation_id = self.db["evaluations"].insert({
                "key": key, "genome_hash": genome_hash, "suite": suite.name, "suite_hash": suite.content_hash,
                "split": suite.split, "contract": dumps(contract.to_json()), "model": contract.model,
                "replicates": contract.replicates, "status": "running", "n_cells": n_cells, "n_done": 0,
                "started_at": now()}).last_pk
            row = self._row(key)
        evaluation_id = row["id"]
        ran, ran_cost = 0, 0.0
        if row["status"] != "done":
            ran, ran_cost = self._run(evaluation_id, genome_dir, skill_name, suite, contract, key, label,
                                      price or self.price)
        return Outcome(evaluation_id, self.cells(evaluation_id), ran, ran_cost)

    def _row(self, key: str) -> dict | None:
        found = list(self.db["evaluations"].rows_where("key = ?", [key]))
        return found[0] if found else None

    def _run(self, evaluation_id: int, genome_dir: Path | None, skill_name: str, suite: Suite,
             contract: Contract, key: str, label: str, price: Price) -> tuple[int, float]:
        done = {(r["task_id"], r["replicate"]) for r in
                self.db.query("select task_id, replicate from cells where evaluation_id = ?", [evaluation_id])}
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
            self._store_cell(evaluation_id, cell)
            counts["done"] += 1
            counts["errors"] += cell.status != "ok"
            self.progress.update(counts["done"], total, errors=counts["errors"])

        results = asyncio.run(evaluate_async(request, skip=done, on_cell=on_cell))
        self.progress.finish()
        figures = self.cells(evaluation_id)
        n = max(len(figures), 1)
        self.db["evaluations"].update(evaluation_id, {
            "status": "done", "n_done": len(figures), "finished_at": now(),
            "eval": sum(c.score for c in figures) / n, "cost": sum(c.cost_usd for c in figures) / n,
            "steps": sum(c.steps for c in figures) / n, "cost_usd_total": sum(c.cost_usd for c in figures)})
        # an LLM judge's own calls are spend too (budget, run total), though not part of the composite
        return len(results), sum(cell.cost_usd + cell.extra.get("grader_cost_usd", 0.0) for cell in results)

    def _store_cell(self, evaluation_id: int, cell: CellResult) -> None:
        """The cell, its tests and the evaluation's counter commit together or not at all."""
        row = {"evaluation_id": evaluation_id, "task_id": cell.task_id, "replicate": cell.replicate,
               "status": cell.status, "score": cell.score, "cost_usd": cell.cost_usd, "steps": cell.steps,
               "input_tokens": cell.input_tokens, "output_tokens": cell.output_tokens,
               "cache_write_tokens": cell.cache_write_tokens, "cache_read_tokens": cell.cache_read_tokens,
               "duration_ms": cell.duration_ms, "agent_subtype": cell.agent_subtype, "error": cell.error,
               "cell_dir": cell.cell_dir, "finished_at": now()}
        conn = self.db.conn
        with conn:
            cursor = conn.execute(f"insert into cells ({', '.join(row)}) values ({', '.join('?' * len(row))})",
                                  list(row.values()))
            conn.executemany("insert into tests (cell_id, name, score) values (?, ?, ?)",
                             [(cursor.lastrowid, name, score) for name, score in sorted(cell.tests.items())])
            conn.execute("update evaluations set n_done = n_done + 1 where id = ?", [evaluation_id])

    def cells(self, evaluation_id: int) -> tuple[CellFigures, ...]:
        return tuple(
            CellFigures(task_id=r["task_id"], replicate=r["replicate"], score=r["score"] or 0.0,
                        cost_usd=r["cost_usd"] or 0.0, steps=r["steps"] or 0, ok=r["status"] == "ok")
            for r in self.db.query("select * from cells where evaluation_id = ? order by task_id, replicate",
                                   [evaluation_id]))
