"""The round driver: plan -> mutate -> critic -> evaluate on val -> score -> integrate -> train.

The loop is serial and the only writer of the database. Every step's result is written before the
next starts, so re-running the same command resumes: finished attempts are reused, unfinished
mutations are redone, and evaluations resume cell by cell from the cache. Its state is the run's Session
(built once the run is opened) and how the run decides; one attempt's steps live in
mutator/round/candidate.py.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import suppress

from eval.cost import price_for
from eval.snapshot import hash_tree
from mutator.briefing.view import MutatorView
from mutator.config import Settings
from mutator.round import api_check
from mutator.round import reasons as words
from mutator.round.budget import Budget, BudgetStop
from mutator.round.candidate import Candidates
from mutator.round.confirm import confirm_keep
from mutator.round.eras import Decisions, configured
from mutator.round.measure import RoundEvaluator
from mutator.round.mutate import MutatorAgent
from mutator.round.nulls import null_controls
from mutator.round.progress import Progress
from mutator.round.provenance import gate_columns, launch_columns
from mutator.round.regrade import changed_since, manifests, regrade_decided, stored_run
from mutator.round.retry import reopen_failed
from mutator.round.session import Agents, Session, Suites, check_roles, run_id_for, run_identity
from mutator.round.solve import SolveAbort, solve_phase, solve_wanted
from mutator.round.solve import store as store_solve
from mutator.round.start_line import new_run_words, resume_words
from mutator.round.state import round_state
from mutator.round.stops import EvaluationStop
from mutator.round.summary import count_val_queries
from mutator.round.tamper import seed_changed_since
from mutator.scoring.gate import method_warning
from mutator.scoring.models import first_model, seed_columns
from mutator.scoring.score import Normalisers, normalisers, summarise
from mutator.store.attempts import insert_attempt, set_genome_figures, set_incumbent_after, update_attempt
from mutator.store.db import DiskFull, disk_full_reason, dumps, keep_reserve, loads, now, release_reserve
from mutator.store.lock import RunLock
from mutator.store.runs import RunRow, insert_run, resume_run, run_heartbeat, runs_with_id, update_run
from sandbox import Launcher
from strategies import Scored, State, Strategy
from strategies.verdicts import AttemptStatus, RunStatus, Verdict


class Loop:
    def __init__(self, settings: Settings, suites: Suites, agents: Agents, launcher: Launcher,
                 strategy: Strategy, *, progress: Progress | None = None, budget: Budget | None = None,
                 retry_failed: bool = False) -> None:
        check_roles(suites)
        self.suites, self.agents, self.strategy, self.launcher = suites, agents, strategy, launcher
        # the command's session; once the run is open, the run's (open_run): the loop's one state
        self.session = Session.open(settings, build_argv=agents.build_argv, build_id=agents.build_id,
                                    launcher=launcher, progress=progress, budget=budget,
                                    network=agents.network, pays=True)
        self.mutator_price = price_for(settings.pricing, first_model(settings.mutator_model))
        self.mutator = MutatorAgent(   # the mutation's and the meta skill's calls (eval/agent_call.py)
            argv=agents.mutator_argv, agent=agents.mutator_id, model=settings.mutator_model,
            max_turns=settings.max_turns, price=self.mutator_price, launcher=launcher,
            silence_ms=settings.watchdog.silence_ms, heartbeat_ms=settings.watchdog.heartbeat_ms,
            network=agents.network)
        self.retry_failed = retry_failed
        # gate, val design, screen, train evidence depth: as configured, or as a stored run was made
        # (open_run)
        self.decisions = configured(settings, self.session.weights)

    # ---- run bookkeeping -------------------------------------------------------------------------
    def identity(self, seed_hash: str, decisions: Decisions | None = None, *,
                 by_content: bool = False) -> dict:
        s = self.session
        return run_identity(s.settings, self.suites, self.agents, s.contract, seed_hash,
                            by_content=by_content, cheaper=(decisions or self.decisions).identity())

    def open_run(self) -> dict:
        """Find or make the run these settings name; from here on the loop works on the run's session."""
        s = self.session.settings
        self.lock = RunLock.acquire(s.data_dir, run_id_for(self.identity(hash_tree(  # one writer per run,
            s.skill_dir))), what="this run")  # locked before its first write (LockHeld names the holder)
        skill_name = self.session.skill_name
        seed_hash = self.session.genomes.put(s.skill_dir, parent_hash=None, skill_name=skill_name,
                                             message=f"seed {skill_name}")
        identity_id = run_id_for(self.identity(seed_hash))
        existing = runs_with_id(self.session.db, identity_id)
        if not existing:
            existing, self.decisions = stored_run(
                self.session, identity_id, self.decisions,
                lambda then, by_content: self.identity(seed_hash, then, by_content=by_content))
        self.session = self.session.for_run(existing[0]["id"] if existing else identity_id)
        session, suites_now = self.session, manifests(self.suites)
        # a finished run with nothing left to do calls no model: no API check (check_api)
        self.nothing_left = bool(existing) and existing[0]["status"] == RunStatus.FINISHED and \
            (existing[0]["rounds_done"] or 0) >= s.rounds and not self.retry_failed
        if existing:
            self._resume(existing[0], suites_now)
        else:
            self._insert(seed_hash, suites_now)
        update_run(session.db, session.run_id, **launch_columns(self.suites, self.agents, s.skill_dir),
                   **gate_columns(s), identity_id=identity_id, suites=dumps(suites_now))
        return session.run()

    def _resume(self, run: dict, suites_now: dict) -> None:
        session, s = self.session, self.session.settings
        resume_run(session.db, session.run_id, rounds_target=max(s.rounds, run["rounds_done"] or 0),
                   holdout=self.suites.holdout.name if self.suites.holdout else run["holdout"])
        solve = resume_words(s, self.suites, self.agents, session.skill_name, run["solve"])
        session.progress.say(f"Resuming {session.run_id}: {run['rounds_done']} of {s.rounds} rounds done "
                             f"(same seed, suites and settings); {solve}.")
        for line in changed_since(session.db.conn, run, {}, suites_now):
            session.progress.say(line)
        if warning := method_warning(s.score.gate_method, s.score.gate_z):
            session.progress.say(warning)
        if self.retry_failed:
            session.progress.say(reopen_failed(session.db, session.run_id, run,
                                               (self.suites.val, self.suites.train), session.contract))

    def _insert(self, seed_hash: str, suites_now: dict) -> None:
        session, s, suites, agents = self.session, self.session.settings, self.suites, self.agents
        insert_run(session.db, RunRow(
            id=session.run_id, kind="evolve", strategy=s.strategy, strategy_opts=dumps(s.strategy_opts),
            seed_hash=seed_hash, skill_name=session.skill_name, suite=suites.train.name,
            suite_hash=suites.train.content_hash, val=suites.val.name, val_hash=suites.val.content_hash,
            holdout=suites.holdout.name if suites.holdout else None, model=s.model, agent=agents.build_id,
            replicates=s.replicates,
            # a --mutator-cmd picks its own model: config's mutatorModel only reaches it as SM_MODEL
            mutator_model=None if agents.mutator_id.startswith("command@") else s.mutator_model,
            rounds_target=s.rounds, rng_seed=s.seed, w_cost=s.score.w_cost, w_steps=s.score.w_steps,
            w_trigger=s.score.w_trigger, min_improvement=s.score.min_improvement, gate_z=s.score.gate_z,
            config=dumps(self.identity(seed_hash)), confirm=int(s.confirm)))
        session.progress.say(f"New run {session.run_id}: "
                             f"{new_run_words(s, suites, agents, session.skill_name)}.")
        identity = self.identity(seed_hash)
        if drift := seed_changed_since(session.db.conn, identity, s.skill_dir, session.genomes.root):
            session.progress.say(f"warning: {drift}")
        if warning := method_warning(s.score.gate_method, s.score.gate_z):
            session.progress.say(warning)
        for line in changed_since(session.db.conn, None, self.identity(seed_hash), suites_now):
            session.progress.say(line)

    # ---- the loop ----------------------------------------------------------------------------------
    def execute(self) -> str:
        run = self.open_run()
        session = self.session
        s = session.settings
        evaluate = RoundEvaluator(session, self.decisions, self.suites.train)
        view = MutatorView(session, self.suites, self.mutator, self.decisions.gating.keep_rule)
        keep_reserve(s.data_dir)
        heartbeat = run_heartbeat(s.db_path, session.run_id)
        try:
            self.check_api()
            if solve_wanted(s.solve, self.agents) and (run["solve"] is None
                                                       or loads(run["solve"]).get("aborted")):
                self.solve(view)
            val_norm = self.round_zero(run)
            regrade_decided(session, evaluate, self.suites)   # a changed grader: re-graded before round 1
            self.candidates = Candidates(session, self.suites, self.decisions, evaluate, self.mutator,
                                         self.mutator_price, view)
            for round_no in range(session.run()["rounds_done"] + 1, s.rounds + 1):
                self.round(round_no, val_norm)
            session.update_run(status=RunStatus.FINISHED, finished_at=now(), pid=None)
        except KeyboardInterrupt:
            session.update_run(status=RunStatus.STOPPED, pid=None,
                               error="interrupted; re-run the same command to resume")
            raise
        except (BudgetStop, EvaluationStop) as err:
            session.update_run(status=RunStatus.STOPPED, pid=None, error=str(err))
            raise
        except Exception as err:
            reason = disk_full_reason(err, s.data_dir)  # a full disk stops the run; it resumes later
            if reason:
                release_reserve(s.data_dir)  # room for the status row, so it never stays `running`
            # a full disk may refuse even this; the message still reaches the user
            with suppress(sqlite3.Error):
                session.update_run(status=RunStatus.STOPPED if reason else RunStatus.FAILED, pid=None,
                                   error=reason or f"{type(err).__name__}: {err}")
            if reason:
                raise DiskFull(reason) from err
            raise
        finally:
            heartbeat.stop()
            self.lock.release()
        return session.run_id

    def check_api(self) -> None:
        """A real run asks the model API once per (endpoint, key, model) before its first cell
        (mutator/round/api_check.py): a dead API stops it here, in seconds, with nothing lost."""
        session, s = self.session, self.session.settings
        if not self.agents.launch.get("real") or self.nothing_left:
            return
        mutator = None if self.agents.mutator_id.startswith("command@") else s.mutator_model
        found = api_check.targets(launch=self.agents.launch, build_models=s.models, mutator_model=mutator,
                                  suites=(self.suites.train, self.suites.val))
        api_check.check(found, db=session.db, run_id=session.run_id, pricing=s.pricing, budget=session.budget,
                        say=session.progress.say)

    def solve(self, view: MutatorView) -> None:
        session, s = self.session, self.session.settings
        # the solve phase's bare cells: the same cell settings, the mutator's backend as the build agent
        solver = dataclasses.replace(session.evaluator, settings=dataclasses.replace(
            session.evaluator.settings, agent_argv=self.agents.solve_argv))
        contract = dataclasses.replace(session.contract, agent=self.agents.solve_id or session.contract.agent)
        record = solve_phase(db=session.db, evaluator=solver, train=self.suites.train, contract=contract,
                             model=s.mutator_model, price=self.mutator_price, attempts=s.solve_attempts,
                             min_score=s.solve_min_score, out_dir=view.solve_dir, budget=session.budget,
                             run_id=session.run_id, account=lambda outcome, suite, label: session.account(
                                 outcome, suite, label, seed=True))
        store_solve(session.db, session.run_id, record)
        if record["aborted"]:
            raise SolveAbort(record["message"])
        worst = min(t['score'] for t in record['tasks'].values())
        session.progress.say(f"Solve phase: {len(record['tasks'])} train tasks demonstrated in "
                             f"{record['passes']} pass(es); worst best-score {worst:.2f}.")

    def round_zero(self, run: dict) -> Normalisers:
        session, suites = self.session, self.suites
        seed = run["seed_hash"]
        attempt = session.attempt_row(0, 0)
        if attempt is None:
            insert_attempt(session.db, run_id=session.run_id, round=0, sibling=0, parent_hash=None,
                           genome_hash=seed, status=AttemptStatus.SEED, verdict=Verdict.SEED,
                           summary="seed skill", started_at=now(), reason=words.SEED, incumbent_after=seed)
            attempt = session.attempt_row(0, 0)
        val = session.evaluate_seed(attempt, seed, suites.val, "the seed on val", column="val_evaluation_id")
        train = session.evaluate_seed(attempt, seed, suites.train, "the seed on train",
                                      column="train_evaluation_id",
                                      only=self.decisions.evidence_cells(suites.train))
        val_norm, train_norm = normalisers(val.cells), normalisers(train.cells)
        summary = summarise(val.cells, session.weights, val_norm)
        update_attempt(session.db, attempt.id, {
            "val_evaluation_id": val.evaluation_id, "train_evaluation_id": train.evaluation_id,
            "composite": summary.composite, "eval": summary.eval, "cost": summary.cost,
            "steps": summary.steps,
            "finished_at": attempt.finished_at or now()})
        session.update_run(seed_val_cost=val_norm.seed_cost, seed_val_steps=val_norm.seed_steps,
                           seed_cost=train_norm.seed_cost, seed_steps=train_norm.seed_steps,
                           **seed_columns(val_norm, train_norm))
        return val_norm

    def state(self, round_no: int, val_norm: Normalisers) -> State:
        """What the strategy sees at the start of round `round_no` (mutator/round/state.py)."""
        return round_state(self.session, self.suites, self.decisions, self.strategy, round_no, val_norm)

    def round(self, round_no: int, val_norm: Normalisers) -> None:
        session, s, suites, tie_rule = self.session, self.session.settings, self.suites, \
            self.decisions.gating.tie_rule
        candidates = self.candidates
        state = self.state(round_no, val_norm)
        specs = self.strategy.plan(state)
        session.progress.say(f"Round {round_no}/{s.rounds}: {len(specs)} candidate(s) from "
                             f"{state.incumbent.genome_hash[:12]} (val composite "
                             f"{state.incumbent.composite:.4f})")
        scored: list[Scored] = []
        for sibling, spec in enumerate(specs):
            first = session.attempt_row(round_no, 0) if sibling else None
            objective = spec.objective or (first.summary or "" if first and spec.share_objective else "")
            scored.append(candidates.attempt(round_no, sibling, spec, state, val_norm, objective))
        integration = self.strategy.integrate(state, scored)
        if s.confirm and integration.incumbent != state.incumbent.genome_hash:
            integration = confirm_keep(session, suites.val, round_no, state, scored, integration, val_norm,
                                       tie_rule=tie_rule, keep_rule=self.decisions.confirm_rule)
        for candidate in scored:
            verdict = integration.verdicts.get(candidate.sibling)
            if verdict:
                row = session.attempt_row(round_no, candidate.sibling)
                update_attempt(session.db, row.id, {
                    "verdict": verdict, "status": AttemptStatus.decided(verdict),
                    "reason": integration.reasons.get(candidate.sibling),
                    "pool_snapshot": dumps(list(integration.pool)) if integration.pool else None,
                    "finished_at": row.finished_at or now()})
                self._report_attempt(round_no, candidate.sibling)
        null_controls(session, suites.val, round_no, state.incumbent.genome_hash, val_norm,
                      tie_rule=tie_rule)   # the round's noise floor (nullControls), never kept
        # kept at an early look: every later candidate
        if integration.incumbent != state.incumbent.genome_hash:
            waves = f"round {round_no} · the new incumbent's remaining val waves"
            whole = summarise(candidates.evaluate(integration.incumbent, suites.val, waves).cells,
                              session.weights, val_norm)
            set_genome_figures(session.db, session.run_id, round_no, integration.incumbent,
                               composite=whole.composite, eval=whole.eval, cost=whole.cost, steps=whole.steps)
        session.update_run(incumbent_hash=integration.incumbent)
        # the decision, for the dashboard
        set_incumbent_after(session.db, session.run_id, round_no, integration.incumbent)
        session.genomes.mark(session.run_id, integration.incumbent)
        for genome_hash in integration.selected:
            train = candidates.evaluate(genome_hash, suites.train,
                                        f"round {round_no} · {genome_hash[:12]} on train")
            for candidate in (c for c in scored if c.genome_hash == genome_hash):
                row = session.attempt_row(round_no, candidate.sibling)
                update_attempt(session.db, row.id, {"train_evaluation_id": train.evaluation_id})
        session.update_run(rounds_done=round_no, val_queries=self.val_queries())
        every = s.meta_skill_every
        if every and round_no % every == 0:
            candidates.view.meta_skill(round_no)

    def val_queries(self) -> int:
        s = self.session
        return count_val_queries(s.val_queries(), s.settings.val_query_warn, s.progress.say)

    def _report_attempt(self, round_no: int, sibling: int) -> None:
        row = self.session.attempt_row(round_no, sibling)
        self.session.progress.say(f"  → {row.verdict}: Δcomposite {row.delta:+.4f} vs gate threshold "
                                  f"{row.gate_threshold:+.4f} · {row.summary}"
                                  + (f" [{row.error}]" if row.error else ""))
