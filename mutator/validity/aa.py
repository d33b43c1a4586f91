"""A/A mode: the seed against N byte-identical copies of itself through the full evaluate → gate path.

Identical genomes share one hash, so each copy gets a fresh replicate salt (`Contract.salt`): new cell
seeds, a new cache key, real cells. Each copy is gated against its OWN re-evaluation of the seed (a second
fresh salt), so the copies are independent trials: their verdicts are not correlated through one shared seed
evaluation, and the false-reject and "beat +t·SE" rates get honest exact binomial CIs. Any difference the gate
calls is noise by construction, so the run measures the gate's false-alarm rate and the per-task noise that
every other run's SE is built from.
Stored as runs.kind = 'aa' with one attempts row per copy; never mutates, never reads a test suite.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace

import numpy as np
import sqlite_utils
from scipy import stats

from eval.cells import Contract
from eval.suite import Suite
from mutator.config import ConfigError, Settings
from mutator.round.budget import BudgetStop, refused
from mutator.round.evaluations import Outcome
from mutator.round.progress import Progress
from mutator.round.reasons import SEED
from mutator.round.session import Session
from mutator.round.summary import spend_basis
from mutator.round.waves import Gating, looked_at, sequential_val
from mutator.scoring.score import (
    CellFigures,
    Comparison,
    Normalisers,
    Weights,
    normalisers,
    per_task,
    summarise,
)
from mutator.store.attempt_reads import decided_rounds, first_sibling, gates_before, round_zero_val_ids
from mutator.store.attempts import insert_attempt, update_attempt
from mutator.store.db import dumps, loads, now
from mutator.store.evaluation_reads import cells_of
from mutator.store.lock import RunLock
from mutator.store.run_lookup import run_cost, run_of, run_row
from mutator.store.runs import RunRow, insert_run, resume_run, run_heartbeat, update_run
from mutator.validity.stats import Rate, binomial_rate
from sandbox import Launcher
from strategies.verdicts import AttemptStatus, RunStatus, Verdict

KIND = "aa"


def copy_reason(gate, false_improvement: bool) -> str:
    """Why a copy got its verdict: any difference the gate calls between identical copies is a false one."""
    words = f"Δ {gate.delta:+.4f} vs gate threshold {gate.threshold:+.4f}"
    if not gate.keep:
        return f"rejected: {words} — a false call, the copy is byte-identical to the seed"
    return f"kept: {words}" + (" — but Δ beats +t·SE: a false improvement" if false_improvement else
                               " — no difference called between identical copies")


def salt(copy: int) -> str:
    return f"aa-{copy}"


def seed_salt(copy: int) -> str:
    """The salt of the seed's re-evaluation that copy `copy` is compared with (its own, fresh)."""
    return f"aa-{copy}-seed"


class AARun:
    def __init__(self, settings: Settings, val: Suite, *, train: Suite | None, build_argv: tuple[str, ...],
                 build_id: str, launcher: Launcher, progress: Progress | None = None, budget=None) -> None:
        self.val, self.train = val, train
        # --budget-usd and the daily budget are asked before each cell, as in a run; each cell's spend is
        # charged
        # to the A/A run as it is stored (Evaluator.payer)
        self.session = Session.open(settings, build_argv=build_argv, build_id=build_id, launcher=launcher,
                                    progress=progress, budget=budget, pays=True)
        # the loop's own gate and val design: an A/A measures the sequential noise gate a run uses against its
        # design rate 1 − Φ(gateZ). score.keepRule is not applied (nor in the id): a rule on Δ alone (positive
        # rejects a null copy half the time by construction) is not what an A/A calibrates
        self.gating = replace(Gating.for_settings(settings, self.session.weights), keep_rule="lenient")
        self.held: list = []   # release/stop of its lock and heartbeat

    def identity(self, seed_hash: str) -> dict:
        s = self.session.settings
        return {"kind": KIND, "seed": seed_hash, "val": [self.val.name, self.val.content_hash],
                "contract": self.session.contract.to_json(), "w_cost": s.score.w_cost,
                "w_steps": s.score.w_steps, "min_improvement": s.score.min_improvement,
                "gate_z": s.score.gate_z, "pairing": "independent",
                **({"gate_method": s.score.gate_method} if s.score.gate_method != "t" else {}),
                **({"sequential": self.gating.design.identity()} if self.gating.design.sequential else {}),
                # an A/A run from before the tie rule is another measurement: a new id, its cells all cached
                **({"tie_rule": self.gating.tie_rule} if self.gating.tie_rule != "keep" else {})}

    def _open(self, copies: int) -> str:
        s = self.session.settings
        seed_hash = self.session.genomes.put(s.skill_dir, parent_hash=None,
                                             skill_name=self.session.skill_name,
                                     message=f"seed {self.session.skill_name}")
        identity = self.identity(seed_hash)
        self.session = self.session.for_run("aa-" + hashlib.sha256(dumps(identity).encode()).hexdigest()[:12])
        # one writer (LockHeld)
        self.held = [RunLock.acquire(s.data_dir, self.session.run_id, what="this A/A run").release]
        found = run_row(self.session.db, self.session.run_id)
        if found:
            resume_run(self.session.db, self.session.run_id,
                       rounds_target=max(copies, found["rounds_done"] or 0))
        else:
            insert_run(self.session.db, RunRow(
                id=self.session.run_id, kind=KIND, strategy=KIND, strategy_opts="{}", seed_hash=seed_hash,
                skill_name=self.session.skill_name, suite=self.train.name if self.train else None,
                suite_hash=self.train.content_hash if self.train else None, val=self.val.name,
                val_hash=self.val.content_hash, model=s.model, agent=self.session.contract.agent,
                replicates=s.replicates, rounds_target=copies, rng_seed=s.seed, w_cost=s.score.w_cost,
                w_steps=s.score.w_steps, min_improvement=s.score.min_improvement, gate_z=s.score.gate_z,
                config=dumps(identity)))
        update_run(self.session.db, self.session.run_id, gate_method=s.score.gate_method,
                   model_gate=s.score.model_gate)
        return seed_hash

    def _evaluate(self, seed_hash: str, contract: Contract, label: str,
                  only: frozenset | None = None) -> Outcome:
        outcome = self.session.evaluator.evaluate(self.session.genomes.path(seed_hash), seed_hash,
                                                  self.session.skill_name, self.val,
                                          label=label, contract=contract, only=only)
        # its spend was charged to the run cell by cell (Evaluator.payer)
        self.session.tally.cells_run += outcome.ran
        refused(outcome, run_cost(self.session.db, self.session.run_id))
        return outcome

    def _attempt(self, copy: int) -> dict | None:
        return first_sibling(self.session.db, self.session.run_id, copy)

    def execute(self, copies: int) -> str:
        if copies < 1:
            raise ConfigError(f"--aa needs at least 1 copy, got {copies}; e.g. --aa 5")
        seed_hash = self._open(copies)
        # a killed A/A run shows `stale`
        self.held.append(run_heartbeat(self.session.settings.db_path, self.session.run_id).stop)
        try:
            self._copies(seed_hash, copies)
            update_run(self.session.db, self.session.run_id, status=RunStatus.FINISHED, finished_at=now(),
                       pid=None, updated_at=now())
        except BaseException as err:
            update_run(self.session.db, self.session.run_id,
                       status=RunStatus.STOPPED if isinstance(err, KeyboardInterrupt | BudgetStop)
                       else RunStatus.FAILED, pid=None, error=f"{type(err).__name__}: {err}")
            raise
        finally:
            for release in reversed(self.held):
                release()
        return self.session.run_id

    def _copies(self, seed_hash: str, copies: int) -> None:
        if self._attempt(0) is None:
            insert_attempt(self.session.db, run_id=self.session.run_id, round=0, sibling=0,
                           genome_hash=seed_hash, status=AttemptStatus.SEED, verdict=Verdict.SEED,
                           summary="seed (A/A incumbent)", reason=SEED, incumbent_after=seed_hash,
                           started_at=now())
        seed = self._evaluate(seed_hash, self.session.contract, f"A/A · seed on {self.val.name}")
        norm = normalisers(seed.cells)
        figures = summarise(seed.cells, self.session.weights, norm)
        update_attempt(self.session.db, self._attempt(0)["id"], {
            "val_evaluation_id": seed.evaluation_id, "composite": figures.composite, "eval": figures.eval,
            "cost": figures.cost, "steps": figures.steps, "finished_at": now()})
        update_run(self.session.db, self.session.run_id, seed_val_cost=norm.seed_cost,
                   seed_val_steps=norm.seed_steps)
        self.session.progress.say(f"A/A {self.session.run_id}: seed {seed_hash[:12]} vs {copies} identical "
                                  f"copies on {self.val.name} "
                          f"({len(self.val.tasks)} tasks × {self.session.contract.replicates} replicates), "
                          f"each against its own re-evaluation of the seed")
        for copy in range(1, copies + 1):
            row = self._attempt(copy)
            if row and row["verdict"]:
                continue
            if row is None:
                insert_attempt(
                    self.session.db, run_id=self.session.run_id, round=copy, sibling=0,
                    parent_hash=seed_hash, genome_hash=seed_hash, status=AttemptStatus.PENDING,
                    started_at=now(), summary=f"A/A copy {copy}: the seed, byte-identical, replicate salt "
                                              f"{salt(copy)}, "
                            f"against the seed re-evaluated with salt {seed_salt(copy)}")
                row = self._attempt(copy)
            contracts = {"copy": replace(self.session.contract, salt=salt(copy)),
                         "base": replace(self.session.contract, salt=seed_salt(copy))}
            labels = {"copy": f"A/A · copy {copy}/{copies} on {self.val.name}",
                      "base": f"A/A · seed again for copy {copy}/{copies} on {self.val.name}"}
            prior = [Comparison(r["gate_n"],
                                gate["s_r"]) for r in gates_before(self.session.db, self.session.run_id,
                                                                                copy - 1)
                     if "early_look" not in (gate := loads(r["gate"]))]
            outcome, gate, looks = sequential_val(
                self.gating, lambda side, _suite, _label, only, c=contracts, lb=labels: self._evaluate(
                    seed_hash, c[side], lb[side], only),
                val=self.val, genome="copy", incumbent="base", norm=norm, prior=prior, label=labels["copy"],
                healthy=lambda _outcome: True)
            base = self._evaluate(seed_hash, contracts["base"], labels["base"], looked_at(looks, self.val))
            early = {"early_look": len(looks)} if looks[-1]["decision"] else {}
            gain = gate.delta > gate.min_improvement + gate.t * gate.se
            summary = summarise(outcome.cells, self.session.weights, norm)
            verdict = Verdict.KEEP if gate.keep else Verdict.REJECT
            update_attempt(self.session.db, row["id"], {
                "status": AttemptStatus.decided(verdict), "verdict": verdict,
                "val_evaluation_id": outcome.evaluation_id, "composite": summary.composite,
                "eval": summary.eval, "cost": summary.cost, "steps": summary.steps, "delta": gate.delta,
                "delta_eval": gate.delta_eval, "delta_cost": gate.delta_cost,
                "delta_steps": gate.delta_steps, "gate_threshold": gate.threshold, "gate_se": gate.se,
                "gate_s": gate.s, "gate_df": gate.df, "gate_t": gate.t, "gate_n": gate.n,
                "gate": dumps({**gate.to_json(), **early, "aa": {"salt": salt(copy),
                                                                 "seed_salt": seed_salt(copy),
                                                                 "seed_evaluation_id": base.evaluation_id,
                                                                 "false_improvement": bool(gain)}}),
                "looks": dumps(looks), "finished_at": now(), "reason": copy_reason(gate, gain),
                "comparator_hash": seed_hash, "comparator_evaluation_id": base.evaluation_id,
                "incumbent_after": seed_hash})
            update_run(self.session.db, self.session.run_id, rounds_done=copy, updated_at=now())
            self.session.progress.say(f"  copy {copy}: Δ {gate.delta:+.4f} vs threshold "
                                      f"{gate.threshold:+.4f} → "
                              f"{verdict}" + (" (beats +t·SE: a false improvement)"
                                                                        if gain else ""))


# --- the record, read back -----------------------------------------------------------------------


def _cell_sd(db: sqlite_utils.Database, evaluation_ids: list[int], weights: Weights,
             norm: Normalisers) -> float:
    """Pooled within-task SD of one cell's composite over every cell of these (identical-genome)
    evaluations."""
    by_task: dict[str, list[float]] = {}
    for r in cells_of(db, evaluation_ids):
        cell = CellFigures(r["task_id"], r["replicate"], r["score"] or 0.0, r["cost_usd"] or 0.0,
                           r["steps"] or 0, r["status"] == "ok")
        by_task.setdefault(cell.task_id, []).append(per_task([cell], weights, norm)[cell.task_id].composite)
    ss = dof = 0.0
    for values in by_task.values():
        if len(values) > 1:
            ss += float(np.var(values, ddof=1)) * (len(values) - 1)
            dof += len(values) - 1
    return math.sqrt(ss / dof) if dof else 0.0


def figures(db: sqlite_utils.Database, run_id: str) -> dict:
    """Everything the summary (and --plan) needs from an A/A run's rows."""
    run = run_of(db, run_id)
    copies = decided_rounds(db, run_id)
    seed = round_zero_val_ids(db, run_id)
    weights = Weights.of_run(run)
    norm = Normalisers(run["seed_val_cost"] or 0.0, run["seed_val_steps"] or 0.0)
    all_deltas = [d for c in copies for d in loads(c["gate"])["deltas"].values()]
    last = copies[-1] if copies else None
    bases = [loads(c["gate"])["aa"].get("seed_evaluation_id") for c in copies]
    evaluations = [e for e in [seed[0] if seed else None, *bases,
                               *(c["val_evaluation_id"] for c in copies)] if e]
    rejects = sum(c["verdict"] == Verdict.REJECT for c in copies)
    gains = sum(bool(loads(c["gate"])["aa"]["false_improvement"]) for c in copies)
    return {
        "run": run, "copies": copies, "n": len(copies),
        "rejects": rejects, "false_improvements": gains,
        "reject_rate": binomial_rate(rejects, len(copies)),
        "improvement_rate": binomial_rate(gains, len(copies)), "independent": bool(copies) and all(bases),
        "s": last["gate_s"] if last else None, "df": last["gate_df"] if last else None,
        "n_tasks": last["gate_n"] if last else None,
        "se": (last["gate_s"] / math.sqrt(last["gate_n"])) if last else None,
        "sd_deltas": float(np.std(all_deltas, ddof=1)) if len(all_deltas) > 1 else None,
        "cell_sd": _cell_sd(db, evaluations, weights, norm) if evaluations else None,
    }


def summary(db: sqlite_utils.Database, run_id: str) -> str:
    f = figures(db, run_id)
    run, n = f["run"], f["n"]
    reps, gate_z = run["replicates"], run["gate_z"]
    design = float(stats.norm.sf(gate_z)) if gate_z > 0 else None
    lines = [f"A/A run {run_id} · seed {run['seed_hash'][:12]} vs {n} byte-identical copies (fresh replicate "
             f"salts) · val {run['val']} · {reps} replicates · gate_z {gate_z:g} · min_improvement "
             f"{run['min_improvement']:g} · status {run['status']}",
             "  copy   Δcomposite      SE       t    threshold   verdict   beats +t·SE"]
    for c in f["copies"]:
        gain = loads(c["gate"])["aa"]["false_improvement"]
        lines.append(f"  {c['round']:>4}   {c['delta']:+.4f}     {c['gate_se']:.4f}  {c['gate_t']:6.3f}   "
                     f"{c['gate_threshold']:+.4f}    {c['verdict']:<8}  {'yes' if gain else 'no'}")
    if not n:
        return "\n".join(lines + ["  no finished copies yet"])
    called = sum(1 for c in f["copies"] if c["verdict"] == Verdict.REJECT
                 or loads(c["gate"])["aa"]["false_improvement"])
    d = "—" if design is None else f"{design:.1%}"
    lines += [
        "",
        f"  The gate called a difference in {called} of {n} identical comparisons ({called / n:.0%}); "
        f"design {d} per side at gate_z {gate_z:g}"
        + (", min_improvement 0" if not run["min_improvement"] else
                                                        " (for min_improvement 0; this run's is "
                                                        f"{run['min_improvement']:g})"),
        f"  false REJECT   {_rate(f['reject_rate'])}   design {d}",
        f"  beat +t·SE     {_rate(f['improvement_rate'])}   design {d}   (Δ > min_improvement + t·SE: a "
        "false improvement)",
        f"  Per-task noise: pooled robust s = {f['s']:.4f} (df {f['df']}) · plain SD of all "
        f"{n}×{f['n_tasks']} copy−seed deltas = {_num(f['sd_deltas'])} → SE of one comparison on "
        f"{f['n_tasks']} tasks = s/√{f['n_tasks']} = {f['se']:.4f}",
        f"  Cell noise: within-task SD of one cell's composite = {_num(f['cell_sd'])} → a task delta at "
        f"{reps} replicates has SD ≈ σ_cell·√(2/{reps}) = "
        f"{_num(f['cell_sd'] and f['cell_sd'] * math.sqrt(2 / reps))}",
        ("  Each copy is compared with its own fresh re-evaluation of the seed, so the copies are "
         "independent trials and the CIs are exact binomial (Clopper–Pearson) intervals; more copies tighten "
         "them."
         if f["independent"] else "  These copies share one seed evaluation (an A/A run from before "
                                  "independent "
         "pairing), so their verdicts are correlated and the CIs are optimistic."),
        f"  Spend ${run['cost_usd']:.4f} ({spend_basis(run['agent'])}).",
    ]
    return "\n".join(lines)


def _rate(rate: Rate) -> str:
    if rate.rate is None:
        return "—"
    return (f"{rate.k:>3}/{rate.n:<3} = {rate.rate:6.1%}  95% CI [{rate.ci_low:.1%}, {rate.ci_high:.1%}] "
            "(exact binomial)")


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"
