"""Spend: today / this week / all time, per run and per model, from the stored per-call costs; the daily budget.

Every figure is summed from rows the store already keeps: each cell's cost (build agent calls), each
attempt's mutator call, each meta-skill call. Days and weeks are UTC (weeks start on Monday). The
daily budget belongs to the store (`--daily-budget-usd` records it): a warning at 80 %, and at 100 %
every new spending step stops cleanly. Reading never writes; only `daily_guard` records the limit.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import sqlite_utils

from eval.cells import Contract, evaluation_key
from eval.suite import Suite
from mutator.config import ConfigError, Settings
from mutator.round.budget import BudgetStop, mean_mutation_cost, pending_cells
from mutator.store.db import connect, loads, now, rows

WARN_AT = 0.8
REUSED_AGENT_ZERO = "(case when c.agent_cell_id is null then c.cost_usd else 0 end)"
HEALTH = "health checks"
OTHER = "other (solve phase, unattributed)"
WATCH = "the watch (a tick whose loop did not start)"


def day_start(ts: float) -> float:
    d = datetime.fromtimestamp(ts, UTC)
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()


def week_start(ts: float) -> float:
    return day_start(ts) - datetime.fromtimestamp(ts, UTC).weekday() * 86400


def _attribution(db: sqlite_utils.Database) -> dict[int, str]:
    """evaluation id -> run id (or HEALTH): the ids a run recorded, then same genome + contract (a test run's
    seed evaluation, say) to the earliest such run. A cached evaluation is paid once, by its first user."""
    owner: dict[int, str] = {}

    def claim(evaluation_id, label: str) -> None:
        if evaluation_id is not None:
            owner.setdefault(int(evaluation_id), label)
    for r in rows(db, "select run_id, val_evaluation_id, train_evaluation_id, confirm from attempts order by id"):
        claim(r["val_evaluation_id"], r["run_id"])
        claim(r["train_evaluation_id"], r["run_id"])
        confirm = loads(r["confirm"], {}) or {}
        claim(confirm.get("candidate_evaluation_id"), r["run_id"])
        claim(confirm.get("incumbent_evaluation_id"), r["run_id"])
    for r in rows(db, "select run_id, evaluation_id from test_runs order by id"):
        claim(r["evaluation_id"], r["run_id"])
    if "health_checks" in db.table_names():
        for r in rows(db, "select evaluation_ids from health_checks"):
            for evaluation_id in loads(r["evaluation_ids"], []) or []:
                claim(evaluation_id, HEALTH)
    runs = rows(db, "select id, seed_hash, config from runs order by created_at")
    genomes: dict[str, set[str]] = {}
    for r in rows(db, "select distinct run_id, genome_hash from attempts where genome_hash is not null"):
        genomes.setdefault(r["run_id"], set()).add(r["genome_hash"])
    contracts = {r["id"]: _unsalted((loads(r["config"], {}) or {}).get("contract") or {}) for r in runs}
    for e in rows(db, "select id, genome_hash, contract from evaluations"):
        if e["id"] in owner:
            continue
        contract = _unsalted(loads(e["contract"], {}) or {})
        for r in runs:
            if contracts[r["id"]] == contract and (e["genome_hash"] == r["seed_hash"]
                                                   or e["genome_hash"] in genomes.get(r["id"], ())):
                owner[e["id"]] = r["id"]
                break
    return owner


def _unsalted(contract: dict) -> dict:
    return {k: v for k, v in contract.items() if k != "salt"}


def calls(db: sqlite_utils.Database, since: float = 0.0) -> list[dict]:
    """Every costed call since `since`: {at, usd, run, model, kind}."""
    owner = _attribution(db)
    out = []
    # a cell's spend: its agent (with the earlier tries of a re-run cell) and, apart, an LLM judge grading it
    # a re-graded cell's agent run is another cell's (agent_cell_id): its cost is counted there, once
    agent = (f"{REUSED_AGENT_ZERO} + c.prior_cost_usd" if "agent_cell_id" in db["cells"].columns_dict
             else "c.cost_usd + c.prior_cost_usd")
    for c in rows(db, f"select c.evaluation_id, {agent} as usd, c.grader_cost_usd, "
                      "c.finished_at, e.model from cells c join evaluations e on e.id = c.evaluation_id where "
                      f"coalesce(c.finished_at, 0) >= ? and ({agent} > 0 or "
                      "c.grader_cost_usd > 0)", [since]):
        run = owner.get(c["evaluation_id"], OTHER)
        if c["usd"]:
            out.append({"at": c["finished_at"] or 0.0, "usd": c["usd"], "run": run, "model": c["model"] or "?",
                        "kind": "cell"})
        if c["grader_cost_usd"]:
            out.append({"at": c["finished_at"] or 0.0, "usd": c["grader_cost_usd"], "run": run, "model": "judge",
                        "kind": "judge"})
    models = {r["id"]: r for r in rows(db, "select id, mutator_model, meta_skill, updated_at from runs")}
    for a in rows(db, "select run_id, mutator_cost_usd, coalesce(finished_at, started_at) as at from attempts "
                      "where mutator_cost_usd > 0 and coalesce(finished_at, started_at, 0) >= ?", [since]):
        out.append({"at": a["at"] or 0.0, "usd": a["mutator_cost_usd"], "run": a["run_id"],
                    "model": models.get(a["run_id"], {}).get("mutator_model") or "?", "kind": "mutator"})
    if "triggers" in db.table_names() and "judge_cost_usd" in db["triggers"].columns_dict:
        # a watch tick's judge pass over the mined requests, before its loop ran (its run, when there was one)
        for t in rows(db, "select run_id, judge_cost_usd, coalesce(finished_at, at) as at from triggers "
                          "where judge_cost_usd > 0 and coalesce(finished_at, at) >= ?", [since]):
            out.append({"at": t["at"], "usd": t["judge_cost_usd"], "run": t["run_id"] or WATCH, "model": "judge",
                        "kind": "mining judge"})
    for run_id, r in models.items():
        for entry in loads(r["meta_skill"], []) or []:
            if entry.get("cost_usd") and (r["updated_at"] or 0.0) >= since:
                out.append({"at": r["updated_at"] or 0.0, "usd": entry["cost_usd"], "run": run_id,
                            "model": r["mutator_model"] or "?", "kind": "meta skill"})
    return out


def spent_since(db: sqlite_utils.Database, since: float) -> float:
    return sum(c["usd"] for c in calls(db, since))


def daily_limit(db: sqlite_utils.Database) -> float | None:
    if "spend_limits" not in db.table_names():
        return None
    found = rows(db, "select usd from spend_limits where name = 'daily'")
    return float(found[0]["usd"]) if found else None


def budget_state(spent_today: float, limit: float | None) -> dict:
    if not limit:
        return {"daily_usd": None, "spent_today": spent_today, "fraction": None, "state": "none"}
    fraction = spent_today / limit
    state = "stop" if fraction >= 1 else "warn" if fraction >= WARN_AT else "ok"
    return {"daily_usd": limit, "spent_today": spent_today, "fraction": fraction, "state": state}


def view(db: sqlite_utils.Database, at: float | None = None, days: int = 30) -> dict:
    """The Cost page: totals for today / this week / all time, per run and per model, a daily series."""
    at = at or time.time()
    today, week = day_start(at), week_start(at)
    every = calls(db)

    def totals(items: list[dict]) -> dict:
        return {"today": sum(c["usd"] for c in items if c["at"] >= today),
                "week": sum(c["usd"] for c in items if c["at"] >= week),
                "all_time": sum(c["usd"] for c in items)}

    def grouped(key: str) -> list[dict]:
        groups: dict[str, list[dict]] = {}
        for c in every:
            groups.setdefault(c[key], []).append(c)
        return sorted(({key: name, **totals(items), "calls": len(items)} for name, items in groups.items()),
                      key=lambda g: -g["all_time"])
    runs = {r["id"]: r for r in rows(db, "select id, skill_name, strategy, status, cost_usd from runs")}
    per_run = grouped("run")
    for g in per_run:
        r = runs.get(g["run"], {})
        g.update(skill=r.get("skill_name"), strategy=r.get("strategy"), status=r.get("status"))
    first = day_start(at) - (days - 1) * 86400
    daily = {datetime.fromtimestamp(first + i * 86400, UTC).date().isoformat(): 0.0 for i in range(days)}
    for c in every:
        if c["at"] >= first:
            daily[datetime.fromtimestamp(c["at"], UTC).date().isoformat()] += c["usd"]
    total = totals(every)
    return {"at": at, "today_from": today, "week_from": week, **total, "runs": per_run, "models": grouped("model"),
            "daily": [{"date": d, "usd": v} for d, v in daily.items()],
            "budget": budget_state(total["today"], daily_limit(db))}


@dataclass(frozen=True)
class DailyBudget:
    """The store's daily cap, checked before each spending step like the run budget (mutator/round/budget.py)."""
    limit_usd: float
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def spent_today(self, db: sqlite_utils.Database) -> float:
        return spent_since(db, day_start(self.clock()))

    def check(self, db: sqlite_utils.Database, *, next_usd: float, what: str) -> None:
        spent = self.spent_today(db)
        if spent < self.limit_usd and spent + next_usd <= self.limit_usd:
            return
        tomorrow = datetime.fromtimestamp(day_start(self.clock()), UTC) + timedelta(days=1)
        raise BudgetStop(
            f"daily budget reached: ${spent:.4f} spent today (UTC) of --daily-budget-usd {self.limit_usd:g}, and "
            f"{what} would commit about ${next_usd:.4f} more. New spending is stopped until "
            f"{tomorrow:%Y-%m-%d %H:%M} UTC; nothing scored is lost. Raise it with --daily-budget-usd USD.")

    def before_evaluation(self, db: sqlite_utils.Database, run_id: str, genome_hash: str, suite: Suite,
                          contract: Contract, label: str) -> None:
        pending = pending_cells(db, evaluation_key(genome_hash, suite, contract), len(suite.tasks) * contract.replicates)
        if pending:
            self.check(db, next_usd=pending * mean_model_cell_cost(db, contract.model), what=f"{label} ({pending} cells)")

    def before_mutation(self, db: sqlite_utils.Database, run_id: str, label: str, first_usd: float = 0.0) -> None:
        self.check(db, next_usd=mean_mutation_cost(db, run_id) or first_usd, what=label)

    def remaining(self, db: sqlite_utils.Database, run_id: str, unrecorded: float = 0.0) -> float:
        return self.limit_usd - self.spent_today(db)   # today's spend already counts every stored cell

    def before_check(self, db: sqlite_utils.Database, n_cells: int, model: str, label: str) -> None:
        self.check(db, next_usd=n_cells * mean_model_cell_cost(db, model), what=f"{label} ({n_cells} cells)")


def mean_model_cell_cost(db: sqlite_utils.Database, model: str) -> float:
    found = rows(db, "select avg(c.cost_usd) as mean from cells c join evaluations e on e.id = c.evaluation_id "
                     "where e.model = ?", [model])
    return float(found[0]["mean"] or 0.0) if found else 0.0


@dataclass(frozen=True)
class Budgets:
    """Several budgets checked in turn (the run's --budget-usd and the store's daily one)."""
    parts: tuple

    def before_evaluation(self, *args, **kwargs) -> None:
        for part in self.parts:
            part.before_evaluation(*args, **kwargs)

    def before_mutation(self, *args, **kwargs) -> None:
        for part in self.parts:
            part.before_mutation(*args, **kwargs)

    def remaining(self, db: sqlite_utils.Database, run_id: str, unrecorded: float = 0.0) -> float:
        return min(part.remaining(db, run_id, unrecorded) for part in self.parts)


def combine(*budgets):
    """None, the one budget given, or a Budgets over all of them."""
    present = tuple(b for b in budgets if b is not None)
    return None if not present else present[0] if len(present) == 1 else Budgets(present)


def record_daily(db: sqlite_utils.Database, flag_usd: float | None) -> float | None:
    """Record --daily-budget-usd on the store when given (0 clears it); returns the limit in force."""
    if flag_usd is not None:
        if flag_usd < 0:
            raise ConfigError(f"--daily-budget-usd must be >= 0 (0 clears the store's daily budget), got {flag_usd}")
        if flag_usd == 0:
            db["spend_limits"].delete_where("name = 'daily'")
        else:
            db["spend_limits"].upsert({"name": "daily", "usd": flag_usd, "set_at": now()}, pk="name")
    return daily_limit(db)


def daily_guard(settings: Settings, flag_usd: float | None, *, stream=None) -> DailyBudget | None:
    """Record --daily-budget-usd (0 clears it) on the store, warn at 80 %, stop at 100 % before any spend."""
    stream = stream or sys.stderr
    if flag_usd is None and not settings.db_path.exists():
        return None  # no store yet: no cap recorded and nothing spent; never create a store just to look
    db = connect(settings.db_path)
    limit = record_daily(db, flag_usd)
    if limit is None:
        return None
    budget = DailyBudget(limit)
    spent = budget.spent_today(db)
    if spent >= limit:
        budget.check(db, next_usd=0.0, what="this command")
    if spent >= WARN_AT * limit:
        print(f"warning: ${spent:.4f} of the ${limit:g} daily budget spent today (UTC) ({spent / limit:.0%}); "
              f"new spending stops at 100 %", file=stream)
    return budget
