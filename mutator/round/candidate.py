"""One attempt of a round: mutate the parent, let the critic look, screen on train, decide on val in waves.

Each step's result is written on the attempt before the next starts, so a resumed round takes the attempt up
where it stopped. Works on the run's Session, its decisions and the round's evaluator; never on the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from eval.cost import Price
from eval.skill_set import is_skill_set, touched
from mutator.briefing.view import MutatorView
from mutator.critic import guards as critic
from mutator.critic.sets import changed_paths, review_set
from mutator.round import reasons as words
from mutator.round.budget import prior_mutator_usd
from mutator.round.eras import Decisions
from mutator.round.failures import assess
from mutator.round.measure import RoundEvaluator
from mutator.round.mutate import MutatorAgent, mutate
from mutator.round.outcome import Outcome
from mutator.round.session import Session, Suites
from mutator.round.waves import looked_at, screen_fields, sequential_val
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import Normalisers, per_task, summarise
from mutator.store import charges
from mutator.store.attempts import insert_attempt, update_attempt
from mutator.store.db import dumps, loads, now
from mutator.store.rows import AttemptRow
from strategies import CandidateSpec, Scored, State
from strategies.verdicts import AttemptStatus, Verdict


@dataclass(frozen=True)
class Candidates:
    """What a round needs to take one candidate from its spec to a Scored: the run's session and suites, how
    it decides, the round's evaluator and the mutator agent (with the briefing's view of the run)."""
    session: Session
    suites: Suites
    decisions: Decisions
    evaluate: RoundEvaluator
    mutator: MutatorAgent
    mutator_price: Price
    view: MutatorView

    def attempt(self, round_no: int, sibling: int, spec: CandidateSpec, state: State, val_norm: Normalisers,
                objective: str) -> Scored:
        s = self.session
        row = s.attempt_row(round_no, sibling)
        if row is None:
            insert_attempt(s.db, run_id=s.run_id, round=round_no, sibling=sibling,
                           parent_hash=spec.parent_hash, ref_hashes=dumps(list(spec.ref_hashes)),
                           status=AttemptStatus.PENDING, started_at=now())
            row = s.attempt_row(round_no, sibling)
        not_evaluated = Scored(sibling, spec, row.genome_hash, evaluated=False)
        if row.status in (AttemptStatus.CRITIC_REJECTED, AttemptStatus.FAILED, AttemptStatus.SCREENED):
            return not_evaluated
        if row.genome_hash is None:
            row = self.mutate(row, round_no, sibling, spec, state, objective)
            if row.status == "failed":
                s.progress.say(f"  → FAILED: {row.error}")
                return Scored(sibling, spec, None, evaluated=False)
        genome_hash = row.genome_hash
        if row.critic is None and not self.review(row, spec, genome_hash):
            return Scored(sibling, spec, genome_hash, evaluated=False)
        if row.gate is None:
            if self.screen(row, round_no, genome_hash, state):
                return Scored(sibling, spec, genome_hash, evaluated=False)
            outcome, gate, looks = sequential_val(
                self.decisions.gating, self.evaluate, val=self.suites.val, genome=genome_hash,
                incumbent=state.incumbent.genome_hash, norm=val_norm,
                prior=s.prior_comparisons(exclude=row.id, suite_hash=self.suites.val.content_hash),
                label=f"round {round_no} · {genome_hash[:12]} on val",
                healthy=lambda o: assess(o, s.settings.max_failed_share).healthy)
            if gate is None:   # no gate decision, no KEEP: a sick evaluation is nobody's verdict
                return self.unhealthy(row, sibling, spec, genome_hash, outcome, looks)
            summary = summarise(outcome.cells, s.weights, val_norm)
            gate_json = {**gate.to_json(), **({"early_look": len(looks)} if looks[-1]["decision"] else {})}
            update_attempt(s.db, row.id, {
                "status": AttemptStatus.SCORED, "val_evaluation_id": outcome.evaluation_id,
                "composite": summary.composite, "eval": summary.eval, "cost": summary.cost,
                "steps": summary.steps, "delta": gate.delta, "delta_eval": gate.delta_eval,
                "delta_cost": gate.delta_cost, "delta_steps": gate.delta_steps,
                "gate_threshold": gate.threshold,
                "gate_se": gate.se, "gate_s": gate.s, "gate_df": gate.df, "gate_t": gate.t, "gate_n": gate.n,
                "gate": dumps(gate_json), "looks": dumps(looks),   # the comparator:
                "comparator_hash": state.incumbent.genome_hash,
                "comparator_evaluation_id": looks[-1]["incumbent_evaluation_id"]})
            row = s.attempt_row(round_no, sibling)
        outcome = self.evaluate(genome_hash, self.suites.val, "val (cached)",
                                looked_at(loads(row.looks, None), self.suites.val))
        candidate = per_task(outcome.cells, s.weights, val_norm)
        gate_json = loads(row.gate)
        return Scored(sibling, spec, genome_hash, evaluated=True, composite=row.composite,
                      keep_by_gate=bool(gate_json["keep"]),
                      task_composites={t: f.composite for t, f in candidate.items()},
                      delta=row.delta, threshold=row.gate_threshold,
                      rejected_on=tuple((gate_json.get("model_gate") or {}).get("rejected_by", ())),
                      keep_rule=gate_json.get("keep_rule"))

    def review(self, row: AttemptRow, spec: CandidateSpec, genome_hash: str) -> bool:
        """The critic's checks, stored on the attempt: False when it rejected the candidate (CRITIC)."""
        s = self.session
        limits = critic.limits_from(s.settings)
        child, parent = s.genomes.path(genome_hash), s.genomes.path(spec.parent_hash)
        checks = (review_set(child, parent, limits=limits) if is_skill_set(parent)
                  else critic.review(child, parent, skill_name=s.skill_name, limits=limits))
        fields = {"critic": dumps([c.to_json() for c in checks])}
        if not critic.passed(checks):
            reasons = "; ".join(f"{c.gate}: {c.reason}" for c in checks if c.verdict == "fail")
            fields.update(status=AttemptStatus.CRITIC_REJECTED, verdict=Verdict.CRITIC, error=reasons,
                          finished_at=now(), reason=words.critic([c.to_json() for c in checks], reasons))
            update_attempt(s.db, row.id, fields)
            s.progress.say(f"  → CRITIC: {reasons} · {row.summary}")
            return False
        update_attempt(s.db, row.id, fields)
        for check in checks:
            if check.verdict == "warn":   # passes: a problem the parent already has (stored on the attempt)
                s.progress.say(f"  critic warns ({check.gate}): {check.reason}")
        return True

    def unhealthy(self, row: AttemptRow, sibling: int, spec: CandidateSpec, genome_hash: str,
                  outcome: Outcome, looks: list[dict]) -> Scored:
        s = self.session
        health = assess(outcome, s.settings.max_failed_share)
        why = s.describe(outcome, health, self.suites.val, "this candidate on val")
        update_attempt(s.db, row.id, words.for_fields({
            "status": AttemptStatus.FAILED, "verdict": Verdict.FAILED,
            "error": f"unhealthy evaluation, no gate decision: {why}",
            "val_evaluation_id": outcome.evaluation_id, "failures": dumps(outcome.failures),
            "looks": dumps(looks) if looks else None, "finished_at": now()}))
        s.progress.say(f"  → FAILED: {outcome.n_failed} of {outcome.n_cells} cells failed ({health.counts})")
        return Scored(sibling, spec, genome_hash, evaluated=False)

    def screen(self, row: AttemptRow, round_no: int, genome_hash: str, state: State) -> bool:
        """The kill-only train screen (screen.tasks > 0): True when it SCREENED the candidate out."""
        s = self.session
        if row.screen is not None or not self.decisions.screen.tasks:
            return False
        record = self.decisions.screen.run(
            self.decisions.gating, self.evaluate, train=self.suites.train, genome=genome_hash,
            incumbent=state.incumbent.genome_hash, norm=stored_normalisers(s.run(), "train"),
            seed=f"{s.settings.seed}:{s.run_id}:{round_no}:screen",
            label=f"round {round_no} · {genome_hash[:12]} on train")
        if record is None:
            return False
        fields = screen_fields(record)
        if record["decision"] == "loss":
            s.progress.say(f"  → SCREENED: {fields['error']} · {row.summary}")
        update_attempt(s.db, row.id, words.for_fields({**fields, "screen": dumps(record)}))
        return record["decision"] == "loss"

    def mutate(self, row: AttemptRow, round_no: int, sibling: int, spec: CandidateSpec, state: State,
               objective: str) -> AttemptRow:
        s = self.session
        refs = {h[:12]: s.genomes.path(h) for h in spec.ref_hashes}
        workspace = s.settings.data_dir / "workspaces" / s.run_id / f"round-{round_no}-{sibling}"
        if s.budget:
            # before this run's first call: the store's calls by this mutator, else the stated prior
            first = prior_mutator_usd(self.mutator_price, self.mutator.agent, s.db, self.mutator.model)
            s.budget.before_mutation(s.db, s.run_id, f"the round {round_no} mutation", first)
        watch = {"seed skill": s.settings.skill_dir, "train suite": self.suites.train.path,
                 # a write to the seed or a suite is FAILED (round/tamper.py)
                 "val suite": self.suites.val.path,
                 **({"test suite": self.suites.holdout.path} if self.suites.holdout else {})}

        def stage(workspace, shared):
            return self.view.evidence().stage(workspace, spec.parent_hash, shared)

        def call(meter):
            return mutate(
                workspace=workspace, parent_dir=s.genomes.path(spec.parent_hash),
                briefing=self.view.briefing(round_no, sibling, state, objective, spec), refs=refs,
                agent=self.mutator, round_no=round_no, sibling=sibling,
                stage=stage, watch=watch, meter=meter)
        meter = charges.call_meter(s.settings.data_dir, s.run_id, workspace.name)
        # with a try a crash cut short
        result, carried = charges.paid_call(s.db, meter, self.mutator_price, call, payer=s.run_id,
                                            kind="mutator", attempt_id=row.id)
        paid = {**result.columns(),
                "mutator_cost_usd": carried + (row.mutator_cost_usd or 0) + result.cost_usd}
        if not result.ok:
            update_attempt(s.db, row.id, words.for_fields({
                "status": AttemptStatus.FAILED, "verdict": Verdict.FAILED, "error": result.error, **paid,
                "finished_at": now()}))
            return s.attempt_row(round_no, sibling)
        genome_hash = s.genomes.put(result.skill_dir, parent_hash=spec.parent_hash, skill_name=s.skill_name,
                                    message=f"round {round_no}.{sibling}: "
                                            f"{result.summary}\n\n{result.reasoning}")
        parent = s.genomes.path(spec.parent_hash)
        hit = touched(changed_paths(s.genomes.path(genome_hash), parent)) if is_skill_set(parent) else []
        update_attempt(s.db, row.id, {
            "genome_hash": genome_hash, "summary": result.summary, "reasoning": result.reasoning,
            **paid, "diff_stat": s.genomes.diff_stat(spec.parent_hash, genome_hash),
            **({"skills_touched": ", ".join(hit)} if hit else {})})
        return s.attempt_row(round_no, sibling)
