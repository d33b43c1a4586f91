"""What the mutator is shown, assembled from the store: its briefing, staged evidence and meta skill.

An object the loop holds (over the run's Session, its suites and the mutator agent); never shows val task
details or anything of the test suite — see mutator/briefing/evidence.py and tests/mutator/test_no_leaks.py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from eval.skill_set import members
from mutator.briefing.evidence import Evidence
from mutator.briefing.meta import distil
from mutator.briefing.render import LAST_ATTEMPTS, BriefingInput, render
from mutator.critic.caps import caps_text, limits_from, room
from mutator.critic.text import Tree
from mutator.scoring.gate import gate_t, pooled
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import per_task, split_key, summarise
from mutator.store import briefing_reads, cache, charges
from mutator.store.attempt_reads import champion_attempt, latest_evaluation_id
from mutator.store.db import dumps, loads
from mutator.store.evidence import EvidenceStore
from mutator.store.skill_use import cell_uses, evaluation_tally, skill_files, tally, task_text
from strategies import CandidateSpec, State

if TYPE_CHECKING:
    from mutator.round.mutate import MutatorAgent
    from mutator.round.session import Session, Suites


# score.wTrigger > 0 (mutator/scoring/trigger.py): what the briefing's formula adds
TRIGGER_FORMULA = " − {w}·(1 − trigger hit share)"
TRIGGER_HIT = (" A hit is a cell that loaded the skill when its task should use it, or did not when it "
               "should not (a near-miss task scores 1 if the skill was not loaded, else 0).")

class MutatorView:
    """The mutator's view of a run: its briefing, the evidence staged beside it, and the meta skill's
    lessons."""

    def __init__(self, session: Session, suites: Suites, mutator: MutatorAgent, keep_rule: str = "lenient"):
        self.session, self.suites, self.mutator = session, suites, mutator
        self.keep_rule = keep_rule   # the run's score.keepRule (as the run was made: mutator/round/eras.py)
        # (evaluation id, finished at) -> composite
        self._train_composites: dict[tuple[int, str], float] = {}
        # what the run's shared history holds (Evidence.known), this session's stagings
        self._shared: dict = {}

    def meta_lessons(self) -> list[dict]:
        return loads(self.session.run()["meta_skill"], [])

    def meta_skill(self, round_no: int) -> None:
        """Distil the attempt log into lessons once per `meta_skill_every` rounds (skipped when done)."""
        lessons = self.meta_lessons()
        if any(entry["round"] == round_no for entry in lessons):
            return
        incumbent = self.session.run()["incumbent_hash"]
        workspace = self.session.settings.data_dir / "workspaces" / self.session.run_id / f"meta-{round_no}"
        meter = charges.call_meter(self.session.settings.data_dir, self.session.run_id, workspace.name)
        result, _ = charges.paid_call(
            self.session.db, meter, self.mutator.price, payer=self.session.run_id, kind="meta skill",
            call=lambda meter: distil(workspace=workspace, skill_dir=self.session.genomes.path(incumbent),
                                      stage=lambda ws, shared: self.evidence().stage(ws, incumbent, shared),
                                      agent=self.mutator,
                                      round_no=round_no, meter=meter))
        if not result.ok:
            self.session.progress.say(f"  meta skill after round {round_no} failed (the run goes on): "
                                      f"{result.error}")
        lessons.append({"round": round_no, "lessons": result.text, "cost_usd": result.cost_usd,
                        "error": result.error, "usage": result.usage})
        self.session.update_run(meta_skill=dumps(lessons))
        if result.ok:
            self.session.progress.say(f"  meta skill distilled after round {round_no}")

    def evidence(self) -> Evidence:
        return Evidence(db=self.session.db, genomes=self.session.genomes,
                        store=EvidenceStore(self.session.settings.data_dir), run_id=self.session.run_id,
                        train=self.suites.train, train_composite=self.train_composite,
                        solve_dir=self.solve_dir, known=self._shared, figures=self.session.figures())

    @property
    def solve_dir(self) -> Path:
        return self.session.settings.data_dir / "solve" / self.session.run_id

    def train_composite(self, evaluation_id: int) -> float:
        """A train evaluation's composite, normalised by the seed's train cost and steps; a finished
        evaluation's is worked out once (every later briefing's ledger asks for it again), until its cells are
        re-graded."""
        done = briefing_reads.done_evaluation(self.session.db, evaluation_id)
        key = (evaluation_id, done["finished_at"]) if done else None
        if key not in self._train_composites:
            norm = stored_normalisers(self.session.run(), "train")
            found = summarise(self.session.evaluator.cells(evaluation_id), self.session.weights,
                              norm).composite
            if key is None:
                return found
            self._train_composites[key] = found
        return self._train_composites[key]

    def briefing(self, round_no: int, sibling: int, state: State, objective: str,
                 spec: CandidateSpec | None = None) -> str:
        s = self.session.settings
        # the figures shown are the parent's: the incumbent for greedy/branching, a pool/front member
        # otherwise
        parent = spec.parent_hash if spec else state.incumbent.genome_hash
        incumbent = champion_attempt(self.session.db, self.session.run_id, parent)
        train_tasks = []
        train_id = latest_evaluation_id(self.session.db, self.session.run_id, parent, "train_evaluation_id")
        if train_id is not None:
            norm = stored_normalisers(self.session.run(), "train")
            evaluation_id = train_id
            cells = self.session.evaluator.cells(evaluation_id)
            failing: dict[str, set[str]] = {}
            # several models: all
            ids = list(cache.member_ids(self.session.db, evaluation_id).values()) or [evaluation_id]
            for r in briefing_reads.failing_tests(self.session.db, ids):
                failing.setdefault(r["task_id"], set()).add(r["name"])
            uses = self._task_uses(ids)
            for task_id, f in per_task(cells, self.session.weights, norm).items():
                train_tasks.append({"task_id": task_id, "eval": f.eval, "cost": f.cost, "steps": f.steps,
                                    "composite":
                                    f.composite, "failing": sorted(failing.get(split_key(task_id)[0], ())),
                                    "skill_use": uses.get(split_key(task_id)[0], "—")})
        attempts = [{"round": row.label,
                     **row.__dict__} for row in self.evidence().ledger_rows(last=LAST_ATTEMPTS)]
        return render(BriefingInput(
            round=round_no, sibling=sibling, skill_name=self.session.skill_name,
            set_members=[m.name for m in members(self.session.genomes.path(parent))],
            formula=(f"composite = eval − {s.score.w_cost}·(cost/seedCost) − "
                     f"{s.score.w_steps}·(steps/seedSteps)"
                     f"{TRIGGER_FORMULA.format(w=s.score.w_trigger) if s.score.w_trigger else ''}; "
                     f"eval is the mean "
                     f"per-cell score in [0,1], cost and steps per-cell means, normalised to the seed."
                     f"{TRIGGER_HIT if s.score.w_trigger else ''}"),
            gate=self.gate_text(),
            incumbent=incumbent, train_tasks=train_tasks, attempts=attempts, objective=objective,
            meta_skill=next((e["lessons"] for e in reversed(self.meta_lessons()) if e["lessons"]), ""),
            siblings=self._earlier_siblings(round_no, sibling) if objective else (),
            target_tasks=spec.target_tasks if spec else (),
            caps=caps_text(room(Tree(self.session.genomes.path(parent)), limits_from(s))),
            skill_use=self.skill_use_lines(parent, train_id,
                                           incumbent.get("val_evaluation_id"))))

    def _task_uses(self, evaluation_ids: list[int]) -> dict[str, str]:
        """Each train task's skill use over its cells, as a table cell (train only: never called for val)."""
        by_task: dict[str, list[dict]] = {}
        for r in briefing_reads.cell_skill_uses(self.session.db, evaluation_ids):
            by_task.setdefault(r["task_id"], []).append(r)
        return {task: task_text(tally(cell_uses(found))) for task, found in by_task.items()}

    def skill_use_lines(self, parent: str, train_id: int | None, val_id: int | None) -> list[str]:
        """The parent's skill use: on train per file (every file of the skill, read or not); on val the same
        aggregates over all its cells, never which val task did what."""
        files = skill_files(self.session.genomes.path(parent))
        lines = []
        for split, evaluation_id in (("train", train_id), ("val (aggregates only)", val_id)):
            if evaluation_id is None:
                continue
            ids = list(cache.member_ids(self.session.db, evaluation_id).values()) or [evaluation_id]
            found = evaluation_tally(self.session.db, ids, files)
            if found.cells:
                lines += [f"- {split}: {found.summary()}", *(f"  - {line}" for line in found.lines())]
        return lines

    def gate_text(self) -> str:
        """The gate as it stands now, with this run's pooled noise figures."""
        s = self.session.settings
        pooled_s, df = pooled(self.session.prior_comparisons(exclude=-1,
                                                             suite_hash=self.suites.val.content_hash))
        n = len(self.suites.val.tasks)
        t = gate_t(s.score.gate_z, df)
        se = pooled_s / math.sqrt(n) if n else 0.0
        delta = "its Δcomposite vs the incumbent (mean of paired per-task deltas on the validation suite)"
        now = (f"Now: minImprovement {s.score.min_improvement}, gateZ {s.score.gate_z}, pooled s "
               f"{pooled_s:.4f} over df {df}, SE {se:.4f} for {n} tasks, t {t:.3f}")
        loss = f"{s.score.min_improvement - t * se:+.4f}"
        rule = {"positive": f"is above minImprovement (keep rule 'positive'). {now}: a change with Δ < "
                            f"{loss} is a decisive loss, and one with Δ at or below minImprovement is not "
                            "kept either. Statistical ties are not kept.",
                "strict": "is a decisive win, above minImprovement + t·SE (keep rule 'strict'). "
                          f"{now}: a change is kept only if Δ > {s.score.min_improvement + t * se:+.4f}.",
                "eb": "shrunk toward the mean Δ of this run's earlier candidates (empirical Bayes, keep "
                      f"rule 'eb') is above minImprovement. {now}: a change with Δ < {loss} is a decisive "
                      "loss."}
        text = (f"A candidate is kept when {delta} {rule[self.keep_rule]}" if self.keep_rule in rule else
                f"A candidate is kept unless {delta} < minImprovement − t·SE. {now} → a change is rejected "
                f"only if Δ < {loss}. Statistical ties are kept.")
        return (text
                + (" (t here is the Student-t value; the gate itself takes t from sign flips of the "
                   "candidate's own per-task deltas, so one task's large swing widens it.)"
                   if s.score.gate_method == "signflip"
                   and t > 0 else ""))

    def _earlier_siblings(self, round_no: int, sibling: int) -> list[dict]:
        """This round's earlier implementations (summary + diff), for a sibling sharing the objective."""
        found = briefing_reads.earlier_siblings(self.session.db, self.session.run_id, round_no, sibling)
        store = EvidenceStore(self.session.settings.data_dir)   # the diff staged later: made once for both
        return [{"sibling": r["sibling"], "summary": r["summary"] or "",
                 "diff": store.diff(r["parent_hash"], r["genome_hash"],
                                    self.session.genomes.diff).read_bytes()
                 .decode("utf-8")} for r in found]
