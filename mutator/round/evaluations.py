"""Cached evaluations: the bridge between the stateless eval core and the store's evaluation cache.

The same evaluation key spends nothing twice (mutator/store/cache.py holds the rows); a crash re-runs
only the cells that never finished. Each cell's spend is charged to the `payer` run as the cell is stored;
a cell cut short (Ctrl-C, a deadline, a crash) is settled from its meter (mutator/store/charges.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import sqlite_utils

from eval.agents.meter import agent_meter, judge_meter
from eval.breaker import DEFAULT_LIMIT, Breaker, BreakerOpen
from eval.cells import CellSpec, Contract, agent_key, enumerate_cells, evaluation_key
from eval.cost import Price, PricingError, price_for
from eval.evaluate import EvalRequest, evaluate_async, pending_cells
from eval.executors import Executor, ExecutorLost, get_executor
from eval.jobs import FINAL, CellResult, CellSettings
from eval.kept import regradable
from eval.scheduler import until
from eval.suite import Suite
from mutator.round.budget import prior_cell_usd
from mutator.round.outcome import Outcome
from mutator.round.progress import Progress
from mutator.round.stops import ApiDown, ExecutorGone
from mutator.round.summary import cell_figures, stored_cells
from mutator.scoring.models import first_model, is_group, members
from mutator.scoring.score import CellFigures
from mutator.store import cache, charges, triggers
from sandbox import Launcher

FAILED_AGENT = ("agent_error", "timeout")
Cells = frozenset  # of (task_id, replicate): the cells of one pass over part of an evaluation


class SpendGate(Protocol):
    """The run's budget as an evaluation sees it, asked before each cell starts."""
    def remaining(self, unrecorded: float) -> float: ...
    def cell_estimate(self, contract: Contract) -> float | None: ...


@dataclass
class Evaluator:
    db: sqlite_utils.Database
    data_dir: Path
    contract: Contract
    settings: CellSettings   # how every cell is run (cell_settings()): passed whole to each request and job
    price: Price
    concurrency: int
    progress: Progress
    spend_gate: SpendGate | None = None
    executor: Executor | None = None   # where cells run (eval/executors): None = local; never part of the key
    pricing: dict[str, Price] | None = None   # prices each member model of a several-model evaluation
    # a time.monotonic() instant (--max-seconds): past it the event loop cancels the running cells, as Ctrl-C
    # would, and DeadlineReached is raised; a timeout of the loop itself, never a signal (SIGINT may be
    # ignored)
    deadline: float | None = None
    # the run charged for each cell as it is stored (a callable: the run opens later); None charges nobody
    payer: Callable[[], str] | None = None
    # infra_error tries in a row across every evaluation of the command (eval/breaker.py): shared by the
    # evaluators made from this one (dataclasses.replace), so the solve phase's cells count too
    breaker: Breaker = field(default_factory=Breaker)
    # (evaluation, cells) already given a pass by this process: a partial one is not re-run over and over
    _passed: set[tuple[int, Cells | None]] = field(default_factory=set)

    @classmethod
    def for_settings(cls, settings, db: sqlite_utils.Database, contract: Contract, *,
                     agent_argv: Sequence[str], launcher: Launcher, progress: Progress, network: bool = False,
                     concurrency: int | None = None, spend_gate: SpendGate | None = None,
                     deadline: float | None = None, payer: Callable[[], str] | None = None,
                     with_skills: tuple[Path, ...] = ()) -> Evaluator:
        """The evaluator a command builds from its settings: priced by the contract's model (each member model
        of a several-model evaluation by its own), its cells run as `cell_settings` says."""
        cells = replace(cell_settings(settings, agent_argv=agent_argv, launcher=launcher, network=network),
                        with_skills=with_skills)
        return cls(db=db, data_dir=settings.data_dir, contract=contract, settings=cells,
                   price=price_for(settings.pricing, first_model(contract.model)),
                   concurrency=concurrency or settings.concurrency, progress=progress, spend_gate=spend_gate,
                   executor=executor_for(settings, cells), pricing=settings.pricing, deadline=deadline,
                   payer=payer, breaker=Breaker(limit=breaker_limit(settings)))

    def evaluate(self, genome_dir: Path | None, genome_hash: str, skill_name: str, suite: Suite, *,
                 label: str, contract: Contract | None = None, price: Price | None = None,
                 only: Cells | None = None, run: bool = True) -> Outcome:
        """genome_dir None evaluates bare (no skill), e.g. the solve phase; price defaults to the build
        model's.

        `only` runs and returns just those (task, replicate) cells of the evaluation (a wave of sequential
        val, a screen): they are the evaluation's own cells under its own key, so a later pass over more cells
        reuses them. `run=False` returns what is stored and runs nothing."""
        contract = contract or self.contract
        if is_group(contract):
            return self._evaluate_group(genome_dir, genome_hash, skill_name, suite, label=label,
                                        contract=contract, price=price, only=only, run=run)
        key = evaluation_key(genome_hash, suite, contract)
        row = cache.open_evaluation(self.db, key, genome_hash, suite, contract,
                                    agent_key(genome_hash, suite, contract))
        evaluation_id = row["id"]
        ran, ran_cost, budget_stop = (0, 0), 0.0, ""
        if run and row["status"] != "done" and (evaluation_id, only) not in self._passed:
            self._passed.add((evaluation_id, only))
            ran, ran_cost, budget_stop = self._run(evaluation_id, genome_dir, skill_name, suite, contract,
                                                   key, label, price or self.price,
                                                   retry_failed=row["status"] == "retry", only=only)
        return replace(self.outcome(evaluation_id, ran[0], ran_cost, budget_stop, only=only), regraded=ran[1])

    def _evaluate_group(self, genome_dir: Path | None, genome_hash: str, skill_name: str, suite: Suite, *,
                        label: str, contract: Contract, price: Price | None, only: Cells | None,
                        run: bool) -> Outcome:
        """Several eval models: each model's one-model evaluation (cached under its own key), then the group
        row over them. Each member's cells are priced at its own model's prices."""
        parts = {}
        for member in members(contract):
            own = price_for(self.pricing, member.model) if self.pricing else (price or self.price)
            parts[member.model] = self.evaluate(genome_dir, genome_hash, skill_name, suite,
                                                label=f"{label} · {member.model}", contract=member, price=own,
                                                only=only, run=run)
        group = cache.open_group(self.db, evaluation_key(genome_hash, suite, contract), genome_hash, suite,
                                 contract, {m: o.evaluation_id for m, o in parts.items()})
        cache.close_group(self.db, group)
        outcome = self.outcome(group, sum(o.ran for o in parts.values()),
                               sum(o.ran_cost for o in parts.values()),
                               "; ".join(o.budget_stop for o in parts.values() if o.budget_stop), only=only,
                               members=len(parts))
        return replace(outcome, regraded=sum(o.regraded for o in parts.values()))

    def outcome(self, evaluation_id: int, ran: int = 0, ran_cost: float = 0.0, budget_stop: str = "", *,
                only: Cells | None = None, members: int = 1) -> Outcome:
        """The evaluation as stored: its cells, and from the same rows its failure counts and one error. With
        `only`, just those cells, complete when every one of them is stored and final."""
        row = cache.evaluation_row(self.db, evaluation_id)
        cells = cache.cell_rows(self.db, evaluation_id)
        if only is not None:
            cells = [c for c in cells if (c["task_id"], c["replicate"]) in only]
            n_cells = len(only) * members
            complete = row["status"] == "done" or (len(cells) == n_cells and all(c["status"] in FINAL
                                                                                  for c in cells))
        else:
            n_cells, complete = row["n_cells"], row["status"] == "done"
        failed = [c for c in cells if c["status"] != "ok"]
        failures: dict[str, int] = {}
        for c in failed:
            failures[c["status"]] = failures.get(c["status"], 0) + 1
        first = min((c for c in failed if c["error"]), key=lambda c: c["id"], default=None)
        return Outcome(evaluation_id, tuple(cell_figures(cells, triggers.no_trigger_ids(row))), ran, ran_cost,
                       complete=complete, failures=dict(sorted(failures.items())), n_cells=n_cells,
                       budget_stop=budget_stop, first_error=first["error"] if first else "")

    def _run(self, evaluation_id: int, genome_dir: Path | None, skill_name: str, suite: Suite,
             contract: Contract, key: str, label: str, price: Price, *,
             retry_failed: bool = False, only: Cells | None = None) -> tuple[tuple[int, int], float, str]:
        """Run this pass's cells; returns ((agents run, cells re-graded), USD spent, the budget's stop)."""
        cells_root = self.data_dir / "evals" / key
        self._settle(evaluation_id, suite, contract, key, cells_root, price)   # cells a crash cut short
        done = cache.finished(self.db, evaluation_id, retry_failed=retry_failed)
        regrade = set() if retry_failed else cache.to_regrade(self.db, evaluation_id)
        agent = cache.evaluation_row(self.db, evaluation_id).get("agent_key")
        sources = cache.reusable(self.db, evaluation_id, agent) if agent else {}
        if only is not None:   # the cells outside this pass count as skipped, not as missing
            outside = {(t.id, r) for t in suite.tasks for r in range(contract.replicates)} - set(only)
            done, regrade = done | outside, regrade & set(only)
            sources = {cell: row for cell, row in sources.items() if cell in only}
        done |= self._adopt(evaluation_id, sources, retry_failed=retry_failed)
        request = EvalRequest(
            skill_dir=genome_dir, skill_name=skill_name, suite=suite, contract=contract, key=key,
            cells_root=cells_root, price=price, concurrency=self.concurrency, settings=self.settings)
        reuse = {cell: Path(row["cell_dir"]) for cell, row in sources.items()
                 if row["status"] in ("ok", "grader_error") and row["cell_dir"]
                 and regradable(Path(row["cell_dir"]))}
        total = len(suite.tasks) * contract.replicates if only is None else len(only)
        todo = len(pending_cells(request, done))
        counts = {"done": total - todo, "errors": 0, "spent": 0.0}
        self.progress.start(label, total, counts["done"])
        gate = _Starter(self.spend_gate, contract, prior=prior_cell_usd(price, contract.agent))

        payer = self.payer() if self.payer else None

        def on_cell(cell: CellResult) -> None:
            source = sources.get((cell.task_id, cell.replicate)) if cell.extra.get("regraded") else None
            # a re-graded cell is charged only its new judge calls: its agent run was paid when it ran
            charged = cache.store_cell(self.db, evaluation_id, cell, payer=payer,
                                       agent_cell_id=(source.get("agent_cell_id") or source["id"])
                                       if source else None)
            for meter in (agent_meter(Path(cell.cell_dir)), judge_meter(Path(cell.cell_dir))):
                meter.unlink(missing_ok=True)   # on the row now (a crash before this is told apart by time)
            gate.finished(0.0 if payer else charged)   # a payer's charge is in the run's spend already
            counts["spent"] += charged
            counts["done"] += 1
            counts["errors"] += cell.status != "ok"
            self.progress.update(counts["done"], total, errors=counts["errors"])

        free = set(reuse) | {cell for cell in regrade
                             if regradable(request.cells_root / CellSpec(*cell, 0).name)}
        try:
            results = self._passes(request, suite, contract, done=done, free=free, todo=todo, regrade=regrade,
                                   reuse=reuse, on_cell=on_cell, gate=gate)
        finally:   # Ctrl-C or the deadline: the cells cut short are recorded with what they were served
            self._settle(evaluation_id, suite, contract, key, cells_root, price)
        self.progress.finish()
        cache.close_evaluation(self.db, evaluation_id)
        # an LLM judge's own calls are spend too (budget, run total), though not part of the composite; a
        # re-graded cell's agent was paid when it ran (store_cell charges it nothing)
        spent = counts["spent"]
        stop = ""
        if gate.refused:
            stop = (f"{label}: {total - counts['done']} of {total} cells not started (the budget would pass "
                    f"the cap)")
        regraded = sum(1 for cell in results if cell.extra.get("regraded"))
        if regraded:
            self.progress.say(f"  {label}: {regraded} cell(s) graded again from their agents' kept work, "
                              f"{len(results) - regraded} agent(s) run")
        return (len(results) - regraded, regraded), spent, stop

    def _passes(self, request: EvalRequest, suite: Suite, contract: Contract, *, done: set, free: set,
                todo: int, regrade: set, reuse: dict, on_cell: Callable[[CellResult], None],
                gate: _Starter) -> list[CellResult]:
        """The cells of one evaluation pass: the free ones first (re-graded by script or expectations), a
        pilot cell when nothing prices a cell yet, then the rest under the budget's gate."""
        results: list[CellResult] = []
        try:
            # grading by script or expectations spends nothing: no budget's say
            if free and suite.runner != "judge":
                every = {(t.id, r) for t in suite.tasks for r in range(contract.replicates)}
                results += asyncio.run(until(self.deadline, evaluate_async(
                    request, skip=done | (every - free), regrade=regrade, reuse=reuse, on_cell=on_cell,
                    executor=self.executor, breaker=self.breaker)))
                done = done | {(c.task_id, c.replicate) for c in results}
            if self.spend_gate is not None and todo and self.spend_gate.cell_estimate(contract) is None:
                # nothing to estimate a cell's cost from yet: one pilot cell alone, then the rest at its price
                results += asyncio.run(until(self.deadline, evaluate_async(
                    request, skip=done, regrade=regrade, reuse=reuse, on_cell=on_cell, limit=1,
                    may_start=gate.may_start, executor=self.executor, breaker=self.breaker)))
                done = done | {(c.task_id, c.replicate) for c in results}
            results += asyncio.run(until(self.deadline, evaluate_async(
                request, skip=done, regrade=regrade, reuse=reuse, on_cell=on_cell,
                may_start=gate.may_start if self.spend_gate else None, executor=self.executor,
                breaker=self.breaker)))
        except ExecutorLost as err:
            # its cells in flight are stored (infra_error): a stop like any incomplete one
            raise ExecutorGone(str(err)) from None
        except BreakerOpen as err:
            raise ApiDown(str(err)) from None
        return results

    def _adopt(self, evaluation_id: int, sources: dict[tuple[str, int], dict], *, retry_failed: bool) -> set:
        """Take over the cells whose agent failed on its own under the same agent key (nothing to grade),
        unless the user asked failed cells to run again; returns them. The rest of `sources` is re-graded."""
        taken = set() if retry_failed else {cell for cell, row in sources.items()
                                            if row["status"] in FAILED_AGENT}
        for cell in sorted(taken):
            cache.adopt(self.db, evaluation_id, sources.pop(cell))
        return taken

    def _settle(self, evaluation_id: int, suite: Suite, contract: Contract, key: str, cells_root: Path,
                price: Price) -> None:
        def price_of(model: str) -> Price:
            try:
                return price_for(self.pricing, model) if self.pricing and model else price
            except PricingError:
                return price
        specs = [(spec.task_id, spec.replicate, cells_root / spec.name)
                 for spec in enumerate_cells(suite, contract, key)]
        charges.settle_cells(self.db, evaluation_id, specs, price=price, price_of=price_of,
                             payer=self.payer() if self.payer else None)

    def cells(self, evaluation_id: int) -> tuple[CellFigures, ...]:
        return tuple(stored_cells(self.db, evaluation_id))


class _Starter:
    """Asked before each cell starts: never start one whose estimated cost would pass the cap, counting
    the cells already in flight; once one is refused, no further cell starts this pass. A cell is priced at
    the mean of those measured under its contract, or before any at `prior` (the plan's stated prior: a cell
    is never priced $0 for lack of a measurement, the pilot included)."""

    def __init__(self, gate: SpendGate | None, contract: Contract, prior: float = 0.0) -> None:
        self.gate, self.contract, self.prior = gate, contract, prior
        self.in_flight, self.spent, self.refused = 0, 0.0, False

    def may_start(self) -> bool:
        if self.gate is None:
            return True
        if not self.refused:
            measured = self.gate.cell_estimate(self.contract)
            estimate = self.prior if measured is None else measured
            left = self.gate.remaining(self.spent)
            self.refused = left <= 0 or (self.in_flight + 1) * estimate > left
        if self.refused:
            return False
        self.in_flight += 1
        return True

    def finished(self, cost_usd: float) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        self.spent += cost_usd


def cell_settings(settings, *, agent_argv: Sequence[str], launcher: Launcher,
                  network: bool = False) -> CellSettings:
    """How a command's cells are run, from its settings: the one place the per-cell caps and retries are read
    (--grader-timeout-ms, --cell-timeout-ms, --max-output-mb, --infra-retries)."""
    return CellSettings(agent_argv=agent_argv, launcher=launcher,
                        grader_timeout_s=settings.grader_timeout_ms / 1000, network=network,
                        cell_timeout_ms=settings.cell_timeout_ms,
                        max_output_bytes=int(settings.max_output_mb * 2**20),
                        infra_retries=settings.infra_retries)


def breaker_limit(settings) -> int:
    """breaker.infraFailures (settings made by hand in a test may have no breaker: the default)."""
    return getattr(getattr(settings, "breaker", None), "infra_failures", DEFAULT_LIMIT)


def executor_for(settings, cells: CellSettings | None) -> Executor:
    """--executor local (the default) or ray; the same run and the same cells either way (not in any key)."""
    executor_id = getattr(settings, "executor", "local")
    if executor_id != "ray":
        return get_executor(executor_id)
    # a lost worker or node is retried by Ray as often as an infra_error cell is retried here
    retries = cells.infra_retries if cells else settings.infra_retries
    return get_executor("ray", address=settings.ray_address, resources=settings.cell_resources,
                        max_retries=retries, concurrency=settings.concurrency, exclude=(settings.data_dir,),
                        timeout_s=settings.ray_timeout_s)
