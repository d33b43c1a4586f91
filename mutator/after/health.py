"""Health checks: evaluate a deployed skill folder as it is (no mutation) and say how it drifted.

Each check snapshots the folder, runs it on one or more suites through the Evaluator with a fresh
replicate salt (a re-check measures again instead of reading the cache), and compares the score with
the previous complete check of the same folder and fingerprint. A cancel (Ctrl-C, --max-seconds, the
daily budget, --budget-usd) keeps every cell already scored and marks the check partial; never a made-up
score.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skills_ref import read_properties

from eval.cells import Contract, evaluation_key
from eval.other_skills import digest
from eval.scheduler import DeadlineReached
from eval.snapshot import copy_tree, hash_tree
from eval.suite import Suite
from mutator.after import drift
from mutator.config import ConfigError, Settings
from mutator.round.budget import BudgetStop, cell_estimate
from mutator.round.progress import Progress
from mutator.round.session import Session, other_skills
from mutator.store import health_checks as checks
from mutator.store.db import connect, dumps, loads, now
from sandbox import Launcher


@dataclass
class HealthCheck:
    settings: Settings
    build_argv: Sequence[str]
    build_id: str
    launcher: Launcher
    parallel: int
    progress: Progress = field(default_factory=Progress)
    max_seconds: float | None = None
    daily: object | None = None     # a spend.DailyBudget (before_check) or None
    budget_usd: float | None = None  # --budget-usd: a cap on this check's own spend, asked before each cell

    def run(self, skill_dir: Path, suites: Sequence[Suite]) -> dict:
        s = self.settings
        if not (skill_dir / "SKILL.md").is_file():
            raise ConfigError(f"--check {skill_dir}: no SKILL.md there; pass a deployed skill folder")
        if not suites:
            raise ConfigError("--check needs at least one --suite NAME")
        if self.parallel < 1:
            raise ConfigError(f"--parallel must be at least 1, got {self.parallel}")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ConfigError(f"--max-seconds must be a positive number of seconds, got {self.max_seconds}")
        db = connect(s.db_path)
        skill_dir = skill_dir.resolve()
        skill_name = read_properties(skill_dir).name
        base = Contract(model=s.model, replicates=s.replicates, max_turns=s.max_turns, agent=self.build_id,
                        silence_ms=s.watchdog.silence_ms, heartbeat_ms=s.watchdog.heartbeat_ms,
                        with_skills=digest(other_skills(s, skill_name)))
        fingerprint = drift.fingerprint([(x.name, x.content_hash) for x in suites], base.to_json())
        genome_hash = hash_tree(skill_dir)
        n_cells = sum(len(x.tasks) for x in suites) * s.replicates
        check_id = checks.start_check(
            db, skill_dir=str(skill_dir), skill_name=skill_name, genome_hash=genome_hash,
            fingerprint=fingerprint, suites=dumps([x.name for x in suites]), contract=dumps(base.to_json()),
            n_cells=n_cells)
        snapshot = s.data_dir / "checks" / str(check_id) / "skill"
        copy_tree(skill_dir, snapshot)   # the check scores this copy even if the folder changes meanwhile
        contract = Contract(**{**base.to_json(), "salt": f"check-{check_id}"})
        # --max-seconds is the event loop's own timeout (never a signal: a job started from a script may have
        # SIGINT ignored); the cells still running at the deadline are cancelled exactly as on Ctrl-C
        deadline = time.monotonic() + self.max_seconds if self.max_seconds else None
        evaluator = Session.open(s, build_argv=tuple(self.build_argv), build_id=self.build_id,
                                 launcher=self.launcher, progress=self.progress, contract=contract,
                                 skill_name=skill_name, concurrency=self.parallel, db=db).evaluator
        evaluator.deadline = deadline
        keys = [evaluation_key(genome_hash, x, contract) for x in suites]
        if self.budget_usd is not None:
            evaluator.spend_gate = CheckGate(self.budget_usd, db, tuple(keys))
        stopped: tuple[str, str] | None = None  # (status, reason)
        try:
            for suite in suites:
                if self.daily is not None:
                    self.daily.before_check(db, len(suite.tasks) * s.replicates, s.model,
                                            f"the check on {suite.name}")
                outcome = evaluator.evaluate(snapshot, genome_hash, skill_name, suite,
                                             label=f"check · {suite.name}")
                if outcome.budget_stop:
                    raise BudgetStop(f"budget reached: {outcome.budget_stop}; --budget-usd "
                                     f"{self.budget_usd:g} caps this check's spend. The cells scored are "
                                     "kept (a partial check).")
        except DeadlineReached:
            stopped = ("cancelled", f"--max-seconds {self.max_seconds:g} reached")
        except KeyboardInterrupt:
            stopped = ("cancelled", "interrupted (Ctrl-C)")
        except BudgetStop as err:
            stopped = ("stopped", str(err))
        return finish(db, check_id, keys, stopped)


@dataclass(frozen=True)
class CheckGate:
    """--budget-usd on a health check, as its evaluator asks before each cell: what is left of the cap after
    the check's own charges (its cells, keyed by this check's salt), and what a cell costs."""
    limit_usd: float
    db: object
    keys: tuple[str, ...]

    def spent(self) -> float:
        return checks.charged_for(self.db, self.keys)

    def remaining(self, unrecorded: float) -> float:
        return self.limit_usd - self.spent()   # each stored cell is on the ledger already (no payer, no run)

    def cell_estimate(self, contract: Contract) -> float | None:
        return cell_estimate(self.db, contract)


def _previous(db, check: dict) -> dict | None:
    return checks.previous_complete(db, check)


def finish(db, check_id: int, keys: list[str], stopped: tuple[str, str] | None) -> dict:
    """Score what finished, band it against the previous complete check, store and return the check."""
    check = checks.check_row(db, check_id)
    ids = [e["id"] for e in checks.evaluations_of_keys(db, keys)]
    cells = checks.scored_cells(db, ids)
    tasks = drift.task_scores([(f"{c['suite']}/{c['task_id']}", c["score"] or 0.0) for c in cells])
    score = drift.overall(tasks)
    previous = _previous(db, check)
    before = {t["task"]: t["score"] for t in loads(previous["tasks"], [])} if previous else None
    partial = stopped is not None and len(cells) < check["n_cells"]
    fields: dict = {"status": stopped[0] if partial else "done", "partial": int(partial),
                    "n_done": len(cells), "cost_usd": sum(c["cost_usd"] or 0.0 for c in cells),
                    "evaluation_ids": dumps(ids), "score": score,
                    "tasks": dumps(drift.breakdown(tasks, before)), "finished_at": now(),
                    "previous_id": previous["id"] if previous else None}
    if score is None:
        fields["summary"] = (f"Cancelled before completion ({stopped[1] if stopped else 'no cells'}): no "
                             f"cell finished, so there is no score and nothing to compare.")
    else:
        # a partial check is compared on the tasks it did score, so missing tasks cannot move the number
        prev_score = None
        if previous is not None:
            same = [before[t] for t in tasks if t in before] if partial else None
            prev_score = (sum(same) / len(same) if same else None) if partial else previous["score"]
        verdict = drift.band(score, prev_score)
        fields.update(band=verdict.name, delta=verdict.delta, previous_score=prev_score, summary=verdict.text)
        if partial:
            fields["summary"] = (f"Cancelled before completion ({stopped[1]}): partial result kept, "
                                 f"{score:.1f}/100 over {len(cells)} of {check['n_cells']} cells "
                                 f"({len(tasks)} tasks). On the tasks scored: {verdict.text}")
    checks.update_check(db, check_id, fields)
    found = checks.check_row(db, check_id)
    found["tasks"] = loads(found["tasks"], [])
    found["reason"] = stopped[1] if stopped else None
    return found
