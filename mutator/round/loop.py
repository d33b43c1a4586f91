"""The round driver: plan -> mutate -> critic -> evaluate on val -> score -> integrate -> train.

The loop is serial and the only writer of the database. Every step's result is written before the
next starts, so re-running the same command resumes: finished attempts are reused, unfinished
mutations are redone, and evaluations resume cell by cell from the cache.
"""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from contextlib import suppress

from eval.cells import evaluation_key
from eval.cost import price_for
from eval.snapshot import hash_tree
from eval.suite import Suite
from mutator.briefing.view import MutatorView
from mutator.config import Settings
from mutator.critic import guards as critic
from mutator.round import reasons as words
from mutator.round.budget import Budget, BudgetStop, cell_estimate, price_ratio
from mutator.round.confirm import confirm_keep
from mutator.round.eras import Decisions, configured
from mutator.round.failures import (
    EvaluationStop,
    account,
    assess,
    describe_for,
    reopen_failed,
    seed_evaluation,
)
from mutator.round.mutate import MutatorAgent, mutate
from mutator.round.nulls import null_controls
from mutator.round.progress import Progress
from mutator.round.provenance import gate_columns, launch_columns
from mutator.round.regrade import changed_since, manifests, regrade_decided, stored_run
from mutator.round.session import Agents, Session, Suites, check_roles, run_id_for, run_identity
from mutator.round.solve import SolveAbort, solve_phase, solve_wanted
from mutator.round.solve import store as store_solve
from mutator.round.start_line import new_run_words, resume_words
from mutator.round.summary import count_val_queries
from mutator.round.tamper import seed_changed_since
from mutator.round.waves import looked_at, screen_fields, sequential_val
from mutator.scoring.models import first_model, seed_columns, stored_normalisers
from mutator.scoring.score import Comparison, Normalisers, normalisers, per_task, summarise
from mutator.store import charges
from mutator.store.attempts import insert_attempt, set_genome_figures, set_incumbent_after, update_attempt
from mutator.store.db import (
    DiskFull,
    disk_full_reason,
    dumps,
    keep_reserve,
    loads,
    now,
    release_reserve,
    rows,
)
from mutator.store.lock import RunLock
from mutator.store.runs import RunRow, insert_run, resume_run, run_heartbeat, update_run
from sandbox import Launcher
from strategies import CandidateSpec, Member, Scored, State, Strategy
from strategies.verdicts import AttemptStatus, RunStatus, Verdict


class Loop:
    def __init__(self, settings: Settings, suites: Suites, agents: Agents, launcher: Launcher,
                 strategy: Strategy, *, progress: Progress | None = None, budget: Budget | None = None,
                 retry_failed: bool = False) -> None:
        check_roles(suites)
        self.suites, self.agents, self.strategy, self.launcher = suites, agents, strategy, launcher
        self.session = Session.open(settings, build_argv=agents.build_argv, build_id=agents.build_id,
                                    launcher=launcher, progress=progress, budget=budget, network=agents.network,
                                    pays=True)
        self.mutator_price = price_for(settings.pricing, first_model(settings.mutator_model))
        self.mutator = MutatorAgent(   # the mutation's and the meta skill's calls (eval/agent_call.py)
            argv=agents.mutator_argv, agent=agents.mutator_id, model=settings.mutator_model,
            max_turns=settings.max_turns, price=self.mutator_price, launcher=launcher,
            silence_ms=settings.build_timeout_ms, heartbeat_ms=settings.build_heartbeat_ms, network=agents.network)
        self.view = MutatorView(self.session, suites, self.mutator)
        self.retry_failed = retry_failed
        self.decisions = configured(settings, self.weights)   # gate, val design, screen, train evidence depth

    # the session's parts, read where the round reads them (the session is the one owner)
    settings = property(lambda self: self.session.settings)
    db = property(lambda self: self.session.db)
    genomes = property(lambda self: self.session.genomes)
    weights = property(lambda self: self.session.weights)
    skill_name = property(lambda self: self.session.skill_name)
    contract = property(lambda self: self.session.contract)
    evaluator = property(lambda self: self.session.evaluator)
    progress = property(lambda self: self.session.progress)
    budget = property(lambda self: self.session.budget)
    run_id = property(lambda self: self.session.run_id)
    cells_run = property(lambda self: self.session.cells_run)
    cells_regraded = property(lambda self: self.session.cells_regraded)   # cells graded again from kept agent work

    # ---- run bookkeeping -------------------------------------------------------------------------
    def identity(self, seed_hash: str, decisions: Decisions | None = None, *, by_content: bool = False) -> dict:
        return run_identity(self.settings, self.suites, self.agents, self.contract, seed_hash, by_content=by_content,
                            cheaper=(decisions or self.decisions).identity())

    def open_run(self) -> dict:
        self.lock = RunLock.acquire(self.settings.data_dir, run_id_for(self.identity(hash_tree(  # one writer per run,
            self.settings.skill_dir))), what="this run")  # locked before its first write (LockHeld names the holder)
        seed_hash = self.genomes.put(self.settings.skill_dir, parent_hash=None, skill_name=self.skill_name,
                                     message=f"seed {self.skill_name}")
        self.session.run_id = identity_id = run_id_for(self.identity(seed_hash))
        existing = list(self.db["runs"].rows_where("id = ?", [self.run_id])) or stored_run(self, seed_hash)
        s, suites_now = self.settings, manifests(self.suites)
        if existing:
            run = existing[0]
            resume_run(self.db, self.run_id, rounds_target=max(s.rounds, run["rounds_done"] or 0),
                       holdout=self.suites.holdout.name if self.suites.holdout else run["holdout"])
            self.progress.say(f"Resuming {self.run_id}: {run['rounds_done']} of {s.rounds} rounds done "
                              f"(same seed, suites and settings); {resume_words(s, self.suites, self.agents, self.skill_name, run['solve'])}.")
            for line in changed_since(self.db.conn, run, {}, suites_now):
                self.progress.say(line)
            if self.retry_failed:
                self.progress.say(reopen_failed(self.db, self.run_id, run, (self.suites.val, self.suites.train),
                                                self.contract))
        else:
            insert_run(self.db, RunRow(
                id=self.run_id, kind="evolve", strategy=s.strategy, strategy_opts=dumps(s.strategy_opts),
                seed_hash=seed_hash, skill_name=self.skill_name, suite=self.suites.train.name,
                suite_hash=self.suites.train.content_hash, val=self.suites.val.name,
                val_hash=self.suites.val.content_hash, holdout=self.suites.holdout.name if self.suites.holdout else None,
                model=s.model, agent=self.agents.build_id, replicates=s.replicates,
                mutator_model=None if self.agents.mutator_id.startswith("command@") else s.mutator_model,  # a
                # --mutator-cmd picks its own model: config's mutatorModel only reaches it as SM_MODEL
                rounds_target=s.rounds, rng_seed=s.seed, w_cost=s.w_cost, w_steps=s.w_steps, w_trigger=s.w_trigger,
                min_improvement=s.min_improvement, gate_z=s.gate_z, config=dumps(self.identity(seed_hash)),
                confirm=int(s.confirm)))
            self.progress.say(f"New run {self.run_id}: {new_run_words(s, self.suites, self.agents, self.skill_name)}.")
            if drift := seed_changed_since(self.db.conn, self.identity(seed_hash), s.skill_dir, self.genomes.root):
                self.progress.say(f"warning: {drift}")
            for line in changed_since(self.db.conn, None, self.identity(seed_hash), suites_now):
                self.progress.say(line)
        update_run(self.db, self.run_id, **launch_columns(self.suites, self.agents, s.skill_dir), **gate_columns(s),
                   identity_id=identity_id, suites=dumps(suites_now))
        return self.run()

    def run(self) -> dict:
        return self.session.run()

    def _update_run(self, **fields) -> None:
        self.session.update_run(**fields)

    def _evaluate(self, genome_hash: str, suite: Suite, label: str, only: frozenset | None = None, *,
                  seed: bool = False):
        if suite is self.suites.train and only is None:   # a genome's train evidence (a selected one's, re-graded)
            only = self.decisions.evidence_cells(self.suites.train)
        return self.session.evaluate(genome_hash, suite, label, only, seed=seed)

    # ---- the loop ----------------------------------------------------------------------------------
    def execute(self) -> str:
        run = self.open_run()
        keep_reserve(self.settings.data_dir)
        heartbeat = run_heartbeat(self.settings.db_path, self.run_id)
        try:
            if self.solve_enabled and (run["solve"] is None or loads(run["solve"]).get("aborted")):
                self.solve()
            val_norm = self.round_zero(run)
            regrade_decided(self)   # a changed grader: the scored genomes' evaluations re-graded before round 1
            for round_no in range(self.run()["rounds_done"] + 1, self.settings.rounds + 1):
                self.round(round_no, val_norm)
            self._update_run(status=RunStatus.FINISHED, finished_at=now(), pid=None)
        except KeyboardInterrupt:
            self._update_run(status=RunStatus.STOPPED, pid=None, error="interrupted; re-run the same command to resume")
            raise
        except (BudgetStop, EvaluationStop) as err:
            self._update_run(status=RunStatus.STOPPED, pid=None, error=str(err))
            raise
        except Exception as err:
            reason = disk_full_reason(err, self.settings.data_dir)  # a full disk stops the run; it resumes later
            if reason:
                release_reserve(self.settings.data_dir)  # room for the status row, so it never stays `running`
            with suppress(sqlite3.Error):  # a full disk may refuse even this; the message still reaches the user
                self._update_run(status=RunStatus.STOPPED if reason else RunStatus.FAILED, pid=None,
                                 error=reason or f"{type(err).__name__}: {err}")
            if reason:
                raise DiskFull(reason) from err
            raise
        finally:
            heartbeat.stop()
            self.lock.release()
        return self.run_id

    @property
    def solve_enabled(self) -> bool:
        return solve_wanted(self.settings.solve, self.agents)

    def solve(self) -> None:
        s = self.settings
        # the solve phase's bare cells: the same cell settings, the mutator's backend as the build agent
        solver = dataclasses.replace(self.evaluator, settings=dataclasses.replace(
            self.evaluator.settings, agent_argv=self.agents.solve_argv))
        contract = dataclasses.replace(self.contract, agent=self.agents.solve_id or self.contract.agent)
        record = solve_phase(db=self.db, evaluator=solver, train=self.suites.train, contract=contract,
                             model=s.mutator_model, price=self.mutator_price, attempts=s.solve_attempts,
                             min_score=s.solve_min_score, out_dir=self.view.solve_dir, budget=self.budget,
                             run_id=self.run_id, account=lambda outcome, suite, label: account(
                                 self.session, outcome, suite, label, seed=True))
        store_solve(self.db, self.run_id, record)
        if record["aborted"]:
            raise SolveAbort(record["message"])
        self.progress.say(f"Solve phase: {len(record['tasks'])} train tasks demonstrated in {record['passes']} "
                          f"pass(es); worst best-score {min(t['score'] for t in record['tasks'].values()):.2f}.")

    def round_zero(self, run: dict) -> Normalisers:
        seed = run["seed_hash"]
        attempt = self._attempt_row(0, 0)
        if attempt is None:
            insert_attempt(self.db, run_id=self.run_id, round=0, sibling=0, parent_hash=None, genome_hash=seed,
                           status=AttemptStatus.SEED, verdict=Verdict.SEED, summary="seed skill", started_at=now(),
                           reason=words.SEED, incumbent_after=seed)
            attempt = self._attempt_row(0, 0)
        val = seed_evaluation(self.session, attempt, seed, self.suites.val, "the seed on val",
                              column="val_evaluation_id")
        train = seed_evaluation(self.session, attempt, seed, self.suites.train, "the seed on train",
                                column="train_evaluation_id", only=self.decisions.evidence_cells(self.suites.train))
        val_norm, train_norm = normalisers(val.cells), normalisers(train.cells)
        summary = summarise(val.cells, self.weights, val_norm)
        update_attempt(self.db, attempt["id"], {
            "val_evaluation_id": val.evaluation_id, "train_evaluation_id": train.evaluation_id,
            "composite": summary.composite, "eval": summary.eval, "cost": summary.cost, "steps": summary.steps,
            "finished_at": attempt["finished_at"] or now()})
        self._update_run(seed_val_cost=val_norm.seed_cost, seed_val_steps=val_norm.seed_steps,
                         seed_cost=train_norm.seed_cost, seed_steps=train_norm.seed_steps, **seed_columns(val_norm, train_norm))
        return val_norm

    def state(self, round_no: int, val_norm: Normalisers) -> State:
        """What a strategy may see: the incumbent, every genome scored on val, the last pool snapshot; all as the
        previous round left them (a round stopped after its decision, e.g. before its train evidence, is planned
        and integrated again from the same state, so it selects the same genomes)."""
        left = rows(self.db, "select incumbent_after from attempts where run_id = ? and round < ? and "
                             "incumbent_after is not null order by round desc, id desc limit 1", [self.run_id, round_no])
        incumbent = left[0]["incumbent_after"] if left else self.run()["incumbent_hash"]
        scored = rows(self.db, "select distinct genome_hash from attempts where run_id = ? and round < ? and "
                               "val_evaluation_id is not null and status != 'failed' order by id", [self.run_id, round_no]) \
            if getattr(self.strategy, "reads_members", True) else []   # each one's cells: a cost growing per round
        pooled = self.session.last_pooled(before=round_no)
        snapshot = rows(self.db, "select pool_snapshot from attempts where id = ?", [pooled]) if pooled else []
        return State(round=round_no, incumbent=self.member(incumbent, val_norm),
                     rng=random.Random(f"{self.settings.seed}:{self.run_id}:{round_no}"),
                     members=tuple(self.member(r["genome_hash"], val_norm) for r in scored),
                     pool=tuple(loads(snapshot[0]["pool_snapshot"])) if snapshot else ())

    def member(self, genome_hash: str, val_norm: Normalisers) -> Member:
        # what is stored, never a run: an attempt decided at an early look is scored on the waves it ran
        cells = self.evaluator.evaluate(self.genomes.path(genome_hash), genome_hash, self.skill_name, self.suites.val,
                                        label="val (cached)", run=False).cells
        tasks = per_task(cells, self.weights, val_norm)
        return Member(genome_hash, summarise(cells, self.weights, val_norm).composite,
                      {t: f.composite for t, f in tasks.items()}, self._train_tasks(genome_hash))

    def _train_tasks(self, genome_hash: str) -> dict[str, float]:
        """Per-train-task composites from the genome's finished train evidence; never runs a cell."""
        found = rows(self.db, "select id from evaluations where key = ?",
                     [evaluation_key(genome_hash, self.suites.train, self.contract)])
        evidence = found and self.evaluator.outcome(found[0]["id"], only=self.decisions.evidence_cells(self.suites.train),
                                                    members=len(self.settings.models))
        if not evidence or not evidence.complete:
            return {}
        norm = stored_normalisers(self.run(), "train")
        return {t: f.composite for t, f in per_task(evidence.cells, self.weights, norm).items()}

    def round(self, round_no: int, val_norm: Normalisers) -> None:
        state = self.state(round_no, val_norm)
        specs = self.strategy.plan(state)
        self.progress.say(f"Round {round_no}/{self.settings.rounds}: {len(specs)} candidate(s) from "
                          f"{state.incumbent.genome_hash[:12]} (val composite {state.incumbent.composite:.4f})")
        scored: list[Scored] = []
        for sibling, spec in enumerate(specs):
            first = self._attempt_row(round_no, 0) if sibling else None
            objective = spec.objective or (first["summary"] or "" if first and spec.share_objective else "")
            scored.append(self.attempt(round_no, sibling, spec, state, val_norm, objective))
        integration = self.strategy.integrate(state, scored)
        if self.settings.confirm and integration.incumbent != state.incumbent.genome_hash:
            integration = confirm_keep(self.session, self.suites.val, round_no, state, scored, integration, val_norm,
                                       tie_rule=self.decisions.gating.tie_rule)
        for candidate in scored:
            verdict = integration.verdicts.get(candidate.sibling)
            if verdict:
                row = self._attempt_row(round_no, candidate.sibling)
                update_attempt(self.db, row["id"], {
                    "verdict": verdict, "status": AttemptStatus.decided(verdict),
                    "reason": integration.reasons.get(candidate.sibling),
                    "pool_snapshot": dumps(list(integration.pool)) if integration.pool else None,
                    "finished_at": row["finished_at"] or now()})
                self._report_attempt(round_no, candidate.sibling)
        null_controls(self.session, self.suites.val, round_no, state.incumbent.genome_hash, val_norm,
                      tie_rule=self.decisions.gating.tie_rule)   # the round's noise floor (nullControls), never kept
        if integration.incumbent != state.incumbent.genome_hash:   # kept at an early look: every later candidate
            whole = summarise(self._evaluate(integration.incumbent, self.suites.val, f"round {round_no} · the new "
                                             "incumbent's remaining val waves").cells, self.weights, val_norm)
            set_genome_figures(self.db, self.run_id, round_no, integration.incumbent, composite=whole.composite,
                               eval=whole.eval, cost=whole.cost, steps=whole.steps)
        self._update_run(incumbent_hash=integration.incumbent)
        set_incumbent_after(self.db, self.run_id, round_no, integration.incumbent)   # the decision, for the dashboard
        self.genomes.mark(self.run_id, integration.incumbent)
        for genome_hash in integration.selected:
            train = self._evaluate(genome_hash, self.suites.train, f"round {round_no} · {genome_hash[:12]} on train")
            for candidate in (c for c in scored if c.genome_hash == genome_hash):
                row = self._attempt_row(round_no, candidate.sibling)
                update_attempt(self.db, row["id"], {"train_evaluation_id": train.evaluation_id})
        self._update_run(rounds_done=round_no, val_queries=self.val_queries())
        every = self.settings.meta_skill_every
        if every and round_no % every == 0:
            self.view.meta_skill(round_no)

    def val_queries(self) -> int:
        return count_val_queries(self.session.val_queries(), self.settings.val_query_warn, self.progress.say)

    def _report_attempt(self, round_no: int, sibling: int) -> None:
        row = self._attempt_row(round_no, sibling)
        self.progress.say(f"  → {row['verdict']}: Δcomposite {row['delta']:+.4f} vs gate threshold "
                          f"{row['gate_threshold']:+.4f} · {row['summary']}"
                          + (f" [{row['error']}]" if row["error"] else ""))

    # ---- one attempt -------------------------------------------------------------------------------
    def _attempt_row(self, round_no: int, sibling: int) -> dict | None:
        return self.session.attempt_row(round_no, sibling)

    def attempt(self, round_no: int, sibling: int, spec: CandidateSpec, state: State, val_norm: Normalisers,
                objective: str) -> Scored:
        row = self._attempt_row(round_no, sibling)
        if row is None:
            insert_attempt(self.db, run_id=self.run_id, round=round_no, sibling=sibling, parent_hash=spec.parent_hash,
                           ref_hashes=dumps(list(spec.ref_hashes)), status=AttemptStatus.PENDING, started_at=now())
            row = self._attempt_row(round_no, sibling)
        not_evaluated = Scored(sibling, spec, row["genome_hash"], evaluated=False)
        if row["status"] in (AttemptStatus.CRITIC_REJECTED, AttemptStatus.FAILED, AttemptStatus.SCREENED):
            return not_evaluated
        if row["genome_hash"] is None:
            row = self._mutate(row, round_no, sibling, spec, state, objective)
            if row["status"] == "failed":
                self.progress.say(f"  → FAILED: {row['error']}")
                return Scored(sibling, spec, None, evaluated=False)
        genome_hash = row["genome_hash"]
        if row["critic"] is None:
            limits = critic.limits_from(self.settings)
            checks = critic.review(self.genomes.path(genome_hash), self.genomes.path(spec.parent_hash),
                                   skill_name=self.skill_name, limits=limits)
            fields = {"critic": dumps([c.to_json() for c in checks])}
            if not critic.passed(checks):
                reasons = "; ".join(f"{c.gate}: {c.reason}" for c in checks if c.verdict == "fail")
                fields.update(status=AttemptStatus.CRITIC_REJECTED, verdict=Verdict.CRITIC, error=reasons, finished_at=now(),
                              reason=words.critic([c.to_json() for c in checks], reasons))
                update_attempt(self.db, row["id"], fields)
                self.progress.say(f"  → CRITIC: {reasons} · {row['summary']}")
                return Scored(sibling, spec, genome_hash, evaluated=False)
            update_attempt(self.db, row["id"], fields)
            for check in checks:
                if check.verdict == "warn":   # passes: a problem the parent already has (stored on the attempt)
                    self.progress.say(f"  critic warns ({check.gate}): {check.reason}")
        if row["gate"] is None:
            screened = self._screen(row, round_no, genome_hash, state)
            if screened:
                return Scored(sibling, spec, genome_hash, evaluated=False)
            outcome, gate, looks = sequential_val(
                self.decisions.gating, self._evaluate, val=self.suites.val, genome=genome_hash,
                incumbent=state.incumbent.genome_hash, norm=val_norm, prior=self.prior_comparisons(exclude=row["id"]),
                label=f"round {round_no} · {genome_hash[:12]} on val",
                healthy=lambda o: assess(o, self.settings.max_failed_share).healthy)
            if gate is None:   # no gate decision, no KEEP: a sick evaluation is nobody's verdict
                return self._unhealthy(row, sibling, spec, genome_hash, outcome, looks)
            summary = summarise(outcome.cells, self.weights, val_norm)
            gate_json = {**gate.to_json(), **({"early_look": len(looks)} if looks[-1]["decision"] else {})}
            update_attempt(self.db, row["id"], {
                "status": AttemptStatus.SCORED, "val_evaluation_id": outcome.evaluation_id, "composite": summary.composite,
                "eval": summary.eval, "cost": summary.cost, "steps": summary.steps, "delta": gate.delta,
                "delta_eval": gate.delta_eval, "delta_cost": gate.delta_cost, "delta_steps": gate.delta_steps,
                "gate_threshold": gate.threshold, "gate_se": gate.se, "gate_s": gate.s, "gate_df": gate.df,
                "gate_t": gate.t, "gate_n": gate.n, "gate": dumps(gate_json), "looks": dumps(looks),   # the comparator:
                "comparator_hash": state.incumbent.genome_hash, "comparator_evaluation_id": looks[-1]["incumbent_evaluation_id"]})
            row = self._attempt_row(round_no, sibling)
        outcome = self._evaluate(genome_hash, self.suites.val, "val (cached)", looked_at(loads(row["looks"], None), self.suites.val))
        candidate = per_task(outcome.cells, self.weights, val_norm)
        gate_json = loads(row["gate"])
        return Scored(sibling, spec, genome_hash, evaluated=True, composite=row["composite"],
                      keep_by_gate=bool(gate_json["keep"]), task_composites={t: f.composite for t, f in candidate.items()},
                      delta=row["delta"], threshold=row["gate_threshold"],
                      rejected_on=tuple((gate_json.get("model_gate") or {}).get("rejected_by", ())))

    def _unhealthy(self, row: dict, sibling: int, spec: CandidateSpec, genome_hash: str, outcome, looks) -> Scored:
        health = assess(outcome, self.settings.max_failed_share)
        why = describe_for(self.session, outcome, health, self.suites.val, "this candidate on val")
        update_attempt(self.db, row["id"], words.for_fields({
            "status": AttemptStatus.FAILED, "verdict": Verdict.FAILED, "error": f"unhealthy evaluation, no gate decision: {why}",
            "val_evaluation_id": outcome.evaluation_id, "failures": dumps(outcome.failures),
            "looks": dumps(looks) if looks else None, "finished_at": now()}))
        self.progress.say(f"  → FAILED: {outcome.n_failed} of {outcome.n_cells} cells failed ({health.counts})")
        return Scored(sibling, spec, genome_hash, evaluated=False)

    def _screen(self, row: dict, round_no: int, genome_hash: str, state: State) -> bool:
        """The kill-only train screen (screen.tasks > 0): True when it SCREENED the candidate out."""
        if row["screen"] is not None or not self.decisions.screen.tasks:
            return False
        record = self.decisions.screen.run(
            self.decisions.gating, self._evaluate, train=self.suites.train, genome=genome_hash,
            incumbent=state.incumbent.genome_hash, norm=stored_normalisers(self.run(), "train"),
            seed=f"{self.settings.seed}:{self.run_id}:{round_no}:screen", label=f"round {round_no} · {genome_hash[:12]} on train")
        if record is None:
            return False
        fields = screen_fields(record)
        if record["decision"] == "loss":
            self.progress.say(f"  → SCREENED: {fields['error']} · {row['summary']}")
        update_attempt(self.db, row["id"], words.for_fields({**fields, "screen": dumps(record)}))
        return record["decision"] == "loss"

    def prior_comparisons(self, *, exclude: int) -> list[Comparison]:
        return self.session.prior_comparisons(exclude=exclude, suite_hash=self.suites.val.content_hash)

    def _mutate(self, row: dict, round_no: int, sibling: int, spec: CandidateSpec, state: State,
                objective: str) -> dict:
        refs = {h[:12]: self.genomes.path(h) for h in spec.ref_hashes}
        workspace = self.settings.data_dir / "workspaces" / self.run_id / f"round-{round_no}-{sibling}"
        if self.budget:
            first = (cell_estimate(self.db, self.contract) or 0.0) * price_ratio(self.mutator_price,
                                                                                  self.evaluator.price)
            self.budget.before_mutation(self.db, self.run_id, f"the round {round_no} mutation", first)

        def call(meter):
            return mutate(
                workspace=workspace, parent_dir=self.genomes.path(spec.parent_hash),
                briefing=self.view.briefing(round_no, sibling, state, objective, spec), refs=refs, agent=self.mutator,
                round_no=round_no, sibling=sibling,
                stage=lambda workspace, shared: self.view.evidence().stage(workspace, spec.parent_hash, shared),
                watch={"seed skill": self.settings.skill_dir, "train suite": self.suites.train.path,
                       "val suite": self.suites.val.path,  # a write to the seed or a suite is FAILED (mutator/round/tamper.py)
                       **({"test suite": self.suites.holdout.path} if self.suites.holdout else {})},
                meter=meter)
        result, carried = charges.paid_call(self.db, charges.call_meter(self.settings.data_dir, self.run_id,
                                            workspace.name), self.mutator_price, call, payer=self.run_id, kind="mutator",
                                            attempt_id=row["id"])   # with a try a crash cut short
        paid = {**result.columns(), "mutator_cost_usd": carried + (row["mutator_cost_usd"] or 0) + result.cost_usd}
        if not result.ok:
            update_attempt(self.db, row["id"], words.for_fields({
                "status": AttemptStatus.FAILED, "verdict": Verdict.FAILED, "error": result.error, **paid,
                "finished_at": now()}))
            return self._attempt_row(round_no, sibling)
        genome_hash = self.genomes.put(result.skill_dir, parent_hash=spec.parent_hash, skill_name=self.skill_name,
                                       message=f"round {round_no}.{sibling}: {result.summary}\n\n{result.reasoning}")
        update_attempt(self.db, row["id"], {
            "genome_hash": genome_hash, "summary": result.summary, "reasoning": result.reasoning,
            **paid, "diff_stat": self.genomes.diff_stat(spec.parent_hash, genome_hash)})
        return self._attempt_row(round_no, sibling)

