"""What a run is given and works with: its suites in their roles, its agents, the run id made of its identity,
and the `Session` every command that evaluates a skill builds once (the loop, --aa, --test-run, --check,
--compare).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import sqlite_utils
from skills_ref import read_properties

from eval.cells import Contract
from eval.errors import SkillMutatorError
from eval.other_skills import digest, find_skills
from eval.suite import Suite
from mutator.config import ConfigError, Settings
from mutator.round.budget import Budget, BudgetStop, RunGate
from mutator.round.evaluations import Evaluator
from mutator.round.failures import Health, assess, describe
from mutator.round.outcome import Outcome
from mutator.round.progress import Progress
from mutator.round.stops import IncompleteEvaluation, UnhealthySeed
from mutator.scoring.prior import Pool, Prior
from mutator.scoring.score import Comparison, Weights
from mutator.store.attempts import attempt_at, update_attempt
from mutator.store.db import connect, dumps, loads, now
from mutator.store.figures import Figures, Kept, RunFigures, kept_sum, kept_where
from mutator.store.genome import GenomeStore
from mutator.store.rows import AttemptRow
from mutator.store.runs import add_spend, run_row, update_run
from sandbox import Launcher


def genome_name(skill_dir: Path) -> str:
    """The seed's name: its SKILL.md's `name`, or a skill set's folder name (eval/skill_set.py)."""
    from eval.skill_set import is_skill_set
    return Path(skill_dir).name if is_skill_set(skill_dir) else read_properties(skill_dir).name

class LoopError(SkillMutatorError, RuntimeError):
    """The loop refuses to start (e.g. --suite equals --val); the message says the fix."""


def other_skills(settings: Settings, skill_name: str) -> tuple[Path, ...]:
    """--with-skills DIR: the other skills to install in every cell, checked before any spend
    (eval/other_skills.py)."""
    if not settings.with_skills:
        return ()
    return find_skills(Path(os.path.abspath(settings.with_skills)), skill_name)


@dataclass(frozen=True)
class Suites:
    train: Suite
    val: Suite
    holdout: Suite | None = None


@dataclass(frozen=True)
class Agents:
    build_argv: tuple[str, ...]
    build_id: str            # part of the evaluation contract
    mutator_argv: tuple[str, ...]
    mutator_id: str
    network: bool = False    # real backends call the model API: a sandbox must share the network
    # the mutator model solving a task bare; None: its backend cannot
    solve_argv: tuple[str, ...] | None = None
    solve_id: str = ""
    mutator_how: str = "the fake mutator"      # how the mutator backend was chosen, for messages
    # the agent flags, so --test-run RUN can repeat them
    launch: dict = dataclasses.field(default_factory=dict)


def check_roles(suites: Suites) -> None:
    if suites.train.path == suites.val.path or suites.train.name == suites.val.name:
        raise LoopError(f"--suite and --val are both {suites.train.name!r}; validation must be a different "
                        f"suite from train (the gate would otherwise score on the mutator's evidence)")
    if suites.holdout and suites.holdout.name in (suites.train.name, suites.val.name):
        raise LoopError(f"--holdout {suites.holdout.name!r} is also used as train or val; "
                        f"a test suite must be held out from both")


def run_id_for(identity: dict) -> str:
    return "run-" + hashlib.sha256(dumps(identity).encode()).hexdigest()[:12]


def cheaper_identity(design, screen, tie_rule: str = "keep", evidence: int = 0,
                     keep_rule: str = "lenient", confirm_rule: str = "lenient") -> dict:
    """The identity's part for sequential val, the screen, the tie rule, the train evidence's depth
    (`evidence` replicates when fewer than the run's, else 0), the keep rule and the rule --confirm applies:
    each part is absent at its old setting (one look, no screen, every tie kept, evidence at every replicate,
    the lenient gate), so a run made before it existed keeps its id."""
    return {**({"sequential": design.identity()} if design.sequential else {}),
            **({"screen": dataclasses.asdict(screen)} if screen.tasks else {}),
            **({"tie_rule": tie_rule} if tie_rule != "keep" else {}),
            **({"evidence_replicates": evidence} if evidence else {}),
            **({"keep_rule": keep_rule} if keep_rule != "lenient" else {}),
            **({"confirm_rule": confirm_rule} if confirm_rule != "lenient" else {})}


def run_identity(s, suites: Suites, agents: Agents, contract, seed_hash: str, *, cheaper: dict,
                 by_content: bool = False) -> dict:
    """What makes a run this run: its id hashes it (settings `s`, never an executor or a path). A suite is
    named by what its agents see (its agent hash), so a grader fix resumes the same run and re-grades; a run
    stored before that (`by_content`) hashed each suite's whole folder."""
    def named(suite: Suite) -> list[str]:
        return [suite.name, suite.content_hash if by_content else suite.agent_hash]
    return {"seed": seed_hash, "suite": named(suites.train), "val": named(suites.val), "strategy": s.strategy,
            "strategy_opts": s.strategy_opts, "model": s.model, "mutator_model": s.mutator_model,
            "mutator": agents.mutator_id, "contract": contract.to_json(), "w_cost": s.score.w_cost,
            "w_steps": s.score.w_steps, "min_improvement": s.score.min_improvement, "gate_z": s.score.gate_z,
            **({"gate_method": s.score.gate_method} if s.score.gate_method != "t" else {}),
            "rng_seed": s.seed, **({"w_trigger": s.score.w_trigger} if s.score.w_trigger else {}),
            **({"model_gate": s.score.model_gate} if s.score.model_gate != "mean" else {}),
            **({"confirm": True} if s.confirm else {}),
            **({"null_controls": s.null_controls} if s.null_controls else {}), **cheaper}


@dataclass
class Tally:
    """What this command ran, counted as each evaluation is accounted (Session.account): a counter the session
    holds, read once the command is done (`N cells run by this command`)."""
    cells_run: int = 0       # cells this command ran (cached ones are not counted)
    # cells graded again on a stored agent run (the agent's work reused, not re-spent)
    cells_regraded: int = 0


@dataclass
class _Memo:
    """What the session keeps of the store between looks, never anything the store does not hold."""
    # attempt id -> (its gate_n and gate as stored, the comparison read from them): each gate is parsed once
    comparisons: dict[int, tuple[tuple, Comparison | None]] = field(default_factory=dict)
    figures: RunFigures | None = None
    kept: dict[str, Kept] = field(default_factory=dict)   # by name (Session.kept); a Pool per suite hash


@dataclass(frozen=True)
class Session:
    """One command's working set, built once by `open` and passed typed: the store, the genomes, the scoring
    weights, the evaluation contract and its evaluator, progress, the budget, and the run it writes. It never
    changes: the run's session is another one (`for_run`), made once the run's id is known.
    """
    settings: Settings
    db: sqlite_utils.Database
    genomes: GenomeStore
    weights: Weights
    skill_name: str
    contract: Contract
    evaluator: Evaluator
    progress: Progress
    budget: Budget | None = None
    run_id: str = ""
    pays: bool = False       # each cell's spend is charged to the run as the cell is stored
    tally: Tally = field(default_factory=Tally)
    memo: _Memo = field(default_factory=_Memo, repr=False, compare=False)

    @classmethod
    def open(cls, settings: Settings, *, build_argv: tuple[str, ...], build_id: str, launcher: Launcher,
             progress: Progress | None = None, budget: Budget | None = None, network: bool = False,
             contract: Contract | None = None, weights: Weights | None = None, skill_name: str | None = None,
             concurrency: int | None = None, db: sqlite_utils.Database | None = None,
             pays: bool = False) -> Session:
        """The session of `settings`; a command measuring a stored run passes that run's contract, weights and
        skill name instead of today's settings (and the store it read the run from). With `pays`, every cell
        is charged to the session's run as it is stored; without (a health check), nothing is charged to a
        run."""
        db = db or connect(settings.db_path)
        progress = progress or Progress()
        skill_name = skill_name or genome_name(settings.skill_dir)
        others = other_skills(settings, skill_name)
        contract = contract or Contract(
            model=settings.model, replicates=settings.replicates, max_turns=settings.max_turns,
            agent=build_id,
            silence_ms=settings.watchdog.silence_ms, heartbeat_ms=settings.watchdog.heartbeat_ms,
            with_skills=digest(others))
        if contract.with_skills != digest(others):
            was = f"among other skills (digest {contract.with_skills})" if contract.with_skills else "alone"
            now_ = f"those of {settings.with_skills} (digest {digest(others)})" if others else "none"
            raise ConfigError(f"--with-skills: the run was evaluated {was}, but this command installs "
                              f"{now_}; pass the run's own --with-skills DIR, unchanged (or none for a run "
                              f"evaluated alone)")
        evaluator = Evaluator.for_settings(settings, db, contract, agent_argv=build_argv, launcher=launcher,
                                           progress=progress, network=network, concurrency=concurrency,
                                           with_skills=others)
        session = cls(settings=settings, db=db, genomes=GenomeStore(settings.data_dir, db),
                      weights=weights or Weights(settings.score.w_cost, settings.score.w_steps,
                                                 settings.score.w_trigger),
                      skill_name=skill_name, contract=contract,
                      evaluator=evaluator, progress=progress, budget=budget, pays=pays)
        return session.for_run("")

    def for_run(self, run_id: str) -> Session:
        """This session writing run `run_id`: every cell asks the run's budget first, and with `pays` each
        cell's spend is charged to the run as the cell is stored (one count)."""
        if self.budget:
            self.evaluator.spend_gate = RunGate(self.budget, self.db, lambda: run_id)
        if self.pays:
            self.evaluator.payer = lambda: run_id
        return dataclasses.replace(self, run_id=run_id, memo=_Memo())

    # ---- the run row -------------------------------------------------------------------------------
    def run(self) -> dict:
        return run_row(self.db, self.run_id)

    def update_run(self, **fields) -> None:
        update_run(self.db, self.run_id, **fields, updated_at=now())

    def spend(self, usd: float) -> None:
        """Count money spent for this run (once; the evaluator and the agent calls report what they spent)."""
        add_spend(self.db, self.run_id, usd)

    # ---- attempts ------------------------------------------------------------------------------------
    def attempt_row(self, round_no: int, sibling: int) -> AttemptRow | None:
        return attempt_at(self.db, self.run_id, round_no, sibling)

    def figures(self) -> RunFigures:
        """The run's attempts' small columns, re-read each time only where they changed
        (mutator/store/figures.py)."""
        if self.memo.figures is None or self.memo.figures.run_id != self.run_id:
            self.memo.figures = RunFigures(self.db, self.run_id)
        return self.memo.figures

    def kept(self, name: str, make: Callable[[], Kept]) -> Any:
        """What the Kept `make()` makes from the run's attempts, brought up to date each look (one per
        name)."""
        return (self.memo.kept.get(name) or self.memo.kept.setdefault(name, make())).of(self.figures())

    def val_queries(self) -> int:
        """The candidate evaluations that queried val so far: each attempt's own and its confirmation's two
        (never the seed's baseline, round 0)."""
        return self.kept("val queries", lambda: kept_sum(
            lambda f: (f.val_evaluation_id is not None) + 2 * f.confirmed if f.round > 0 else 0))[0]

    def last_pooled(self, *, before: int) -> int:
        """The last attempt before round `before` that stored a pool snapshot (0: none)."""
        pooled = self.kept("pooled", lambda: kept_where(lambda f: f.round if f.pooled else None))
        return next((attempt_id for attempt_id, made in reversed(pooled.items()) if made < before), 0)

    def prior_comparisons(self, *, exclude: int, suite_hash: str) -> Prior:
        """This run's stored full-evaluation comparisons (the gate's pooled noise) graded by the suite whose
        content hash is `suite_hash` (one grader's comparisons), all but attempt `exclude`; kept from round to
        round where only new attempts changed (mutator/scoring/prior.py)."""
        def member(rows: dict[int, Figures], attempt_id: int) -> tuple[tuple, Comparison] | None:
            f = rows.get(attempt_id)
            if f is None or f.gate_n is None or f.val_suite_hash != suite_hash:
                return None
            known = self.memo.comparisons.get(f.id)
            if known is None or known[0] != (f.gate_n, f.gate):   # new, or its gate rewritten since
                gate = loads(f.gate)
                # an early look averages fewer replicates per task: its scale is not the full evaluation's
                known = self.memo.comparisons[f.id] = ((f.gate_n, f.gate), None if "early_look" in gate else
                                                   Comparison(f.gate_n, gate["s_r"], gate.get("delta"),
                                                              gate.get("keep")))
            return None if known[1] is None else known

        pool = self.kept(f"pool {suite_hash}", lambda: Kept(
            lambda rows: Pool.build(rows, partial(member, rows)),
            lambda pool, ids, rows: pool.update(ids, partial(member, rows))))
        return pool.prior(exclude)

    # ---- evaluations ---------------------------------------------------------------------------------
    def measure(self, genome_hash: str, suite: Suite, label: str, *, contract: Contract | None = None,
                only: frozenset | None = None) -> Outcome:
        """Evaluate a stored genome (under `contract`, e.g. fresh replicates), not yet accounted
        (`account`)."""
        return self.evaluator.evaluate(self.genomes.path(genome_hash), genome_hash, self.skill_name, suite,
                                       label=label, contract=contract, only=only)

    def evaluate(self, genome_hash: str, suite: Suite, label: str, only: frozenset | None = None, *,
                 seed: bool = False) -> Outcome:
        """Evaluate a stored genome under the budget, count its cells and spend, and stop on what is no
        result."""
        if self.budget:
            self.budget.before_evaluation(self.db, self.run_id, genome_hash, suite, self.contract, label,
                                          only)
        return self.account(self.measure(genome_hash, suite, label, only=only), suite, label, seed=seed)

    def account(self, outcome: Outcome, suite: Suite, label: str, *, seed: bool = False) -> Outcome:
        """Record what an evaluation spent; stop on the budget, or on cells that are not results yet."""
        # its spend was charged to the run cell by cell (Evaluator.payer)
        self.tally.cells_run += outcome.ran
        self.tally.cells_regraded += outcome.regraded
        if outcome.budget_stop:
            raise BudgetStop(f"budget reached mid-evaluation: {outcome.budget_stop}. "
                             f"${self.run()['cost_usd']:.4f} spent; finished cells are kept. Re-run the same "
                             f"command with a higher --budget-usd to resume it.")
        health = assess(outcome, self.settings.max_failed_share)
        if not health.complete and not seed:   # the seed's own check says it in its words
            raise IncompleteEvaluation(self.describe(outcome, health, suite, label))
        return outcome

    def describe(self, outcome: Outcome, health: Health, suite: Suite, label: str) -> str:
        """What failed in this evaluation and how to go on (mutator/round/failures.py's words)."""
        return describe(outcome, health, what=f"{label} ({suite.name})",
                        max_failed_share=self.settings.max_failed_share,
                        agent=" ".join(self.evaluator.settings.agent_argv)[-120:],
                        grader=f"{suite.runner} in {suite.path}")

    def evaluate_seed(self, attempt: AttemptRow, seed: str, suite: Suite, what: str, *, column: str,
                      only: frozenset | None = None) -> Outcome:
        """The seed on one suite (its evaluation id goes in the seed attempt's `column`; `only` these cells,
        e.g. the train evidence's replicates); an unhealthy one (exit 7) or an incomplete one (exit 8:
        infra_error or grader_error cells, redone by re-running) stops the run before anything else is
        spent."""
        outcome = self.evaluate(seed, suite, f"round 0 · {what[4:]}", only, seed=True)
        health = assess(outcome, self.settings.max_failed_share)
        if not health.healthy:
            update_attempt(self.db, attempt.id, {column: outcome.evaluation_id,
                                                 "failures": dumps(outcome.failures)})
            # an outage or a grader bug: re-running redoes exactly those cells (exit 8)
            if not health.complete:
                raise IncompleteEvaluation("the seed's evaluation is not complete, so no mutation was tried: "
                                           + self.describe(outcome, health, suite, what))
            raise UnhealthySeed("the seed's evaluation is unhealthy, so no mutation was tried: "
                                + self.describe(outcome, health, suite, what))
        return outcome
