"""Spend: today / this week / all time, per run and per model, from the stored per-call costs; the daily
budget.

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
from mutator.round.budget import BudgetStop, measured_mutation_cost, pending_cells
from mutator.store import spending
from mutator.store.db import connect, loads
from mutator.store.run_lookup import mutator_models, run_labels
from mutator.store.spending import daily_limit, mean_model_cell_cost

WARN_AT = 0.8
HEALTH = "health checks"
OTHER = "other (no run)"
WATCH = "the watch (mining judge passes)"
# what a cell's charge paid for, told from its evaluation (the ledger's kind says agent or judge)
CELLS, SOLVE, CONTROL, TEST, AA, MEMBER, NULL = ("cells", "solve phase", "no-skill control", "test run",
                                                 "A/A re-evaluation", "member evaluation", "null controls")
BARE = "bare"   # the genome hash of a skill-less evaluation (mutator/round/solve.py)


def day_start(ts: float) -> float:
    d = datetime.fromtimestamp(ts, UTC)
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()


def week_start(ts: float) -> float:
    return day_start(ts) - datetime.fromtimestamp(ts, UTC).weekday() * 86400


def _roles(db: sqlite_utils.Database, ids: set[int]) -> dict[int, tuple[str, str]]:
    """evaluation id -> (what its cells were for, model), for the evaluations charges name."""
    if not ids:
        return {}
    members = spending.member_evaluation_ids(db)
    out = {}
    for e in spending.charged_evaluations(db, ids):
        salt = str((loads(e["contract"], {}) or {}).get("salt") or "")
        role = (SOLVE if e["genome_hash"] == BARE and salt.startswith("solve-") else
                CONTROL if e["genome_hash"] == BARE else
                TEST if e["split"] == "test" else
                AA if salt.startswith("aa-") else
                NULL if salt.startswith("null:") else
                MEMBER if e["id"] in members else CELLS)
        out[e["id"]] = (role, e["model"] or "?")
    return out


def _health_evaluations(db: sqlite_utils.Database) -> set[int]:
    return spending.health_check_evaluations(db)


# the model of a mutator call made by the run's own command (--mutator-cmd): it names no model
OWN_COMMAND = "own mutator command (--mutator-cmd)"


def calls(db: sqlite_utils.Database, since: float = 0.0, run_id: str | None = None) -> list[dict]:
    """Every charge on the ledger (mutator/store/ledger.py) since `since` (of one run, when given):
    {at, usd, run, model, kind}. The run is the one charged when it was spent, never guessed afterwards; a
    charge of no run is a health check's, a watch tick's judge pass, or other."""
    found = spending.charges_since(db, since, run_id)
    roles = _roles(db, {c["evaluation_id"] for c in found if c["evaluation_id"] is not None})
    health = _health_evaluations(db) if any(c["run_id"] is None for c in found) else set()
    runs = mutator_models(db)
    out = []
    for c in found:
        role, model = roles.get(c["evaluation_id"], (c["kind"], "?"))
        kind = "judge" if c["kind"] == "judge" else role if c["kind"] == "cell" else c["kind"]
        model = ("judge" if c["kind"] in ("judge",
                                          "mining judge") else model if c["evaluation_id"] is not None
                 else runs.get(c["run_id"]) or OWN_COMMAND if c["kind"] in ("mutator", "meta skill") else "?")
        run = c["run_id"] or (HEALTH if c["evaluation_id"] in health or c["kind"] == "health check"
                              else WATCH if c["kind"] == "mining judge" else OTHER)
        out.append({"at": c["at"], "usd": c["usd"], "run": run, "model": model, "kind": kind})
    return out


def run_spend(db: sqlite_utils.Database, run_id: str) -> dict:
    """THE spend of one run, as Home, the CLI and the Cost page show it: {total, kinds: {kind: usd}}, the
    total being the sum of the run's charges on the ledger (and runs.cost_usd, written with each charge)."""
    kinds: dict[str, float] = {}
    for c in calls(db, run_id=run_id):
        kinds[c["kind"]] = kinds.get(c["kind"], 0.0) + c["usd"]
    return {"total": sum(kinds.values()), "kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1]))}


def run_totals(db: sqlite_utils.Database) -> dict[str, float]:
    """Every run's spend (the sum of its charges), for pages listing many runs."""
    return spending.run_totals(db)


def spent_since(db: sqlite_utils.Database, since: float) -> float:
    return sum(c["usd"] for c in calls(db, since))


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
    runs = run_labels(db)
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
    return {"at": at, "today_from": today, "week_from": week, **total, "runs": per_run,
            "models": grouped("model"), "daily": [{"date": d, "usd": v} for d, v in daily.items()],
            "budget": budget_state(total["today"], daily_limit(db))}


@dataclass(frozen=True)
class DailyBudget:
    """The store's daily cap, checked before each spending step like the run budget
    (mutator/round/budget.py)."""
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
            f"daily budget reached: ${spent:.4f} spent today (UTC) of --daily-budget-usd {self.limit_usd:g}, "
            f"and {what} would commit about ${next_usd:.4f} more. New spending is stopped until "
            f"{tomorrow:%Y-%m-%d %H:%M} UTC; nothing scored is lost. Raise it with --daily-budget-usd USD.")

    def before_evaluation(self, db: sqlite_utils.Database, run_id: str, genome_hash: str, suite: Suite,
                          contract: Contract, label: str, only: frozenset | None = None) -> None:
        # `only`: the cells of a wave or a screen, as the run's own Budget is asked
        pending = pending_cells(db, evaluation_key(genome_hash, suite, contract),
                                len(suite.tasks) * contract.replicates, only)
        if pending:
            self.check(db, next_usd=pending * mean_model_cell_cost(db, contract.model),
                       what=f"{label} ({pending} cells)")

    def before_mutation(self, db: sqlite_utils.Database, run_id: str, label: str,
                        first_usd: float = 0.0) -> None:
        measured = measured_mutation_cost(db, run_id)   # the stated prior before this run's first call
        self.check(db, next_usd=first_usd if measured is None else measured, what=label)

    def remaining(self, db: sqlite_utils.Database, run_id: str, unrecorded: float = 0.0) -> float:
        return self.limit_usd - self.spent_today(db)   # today's spend already counts every stored cell

    def before_check(self, db: sqlite_utils.Database, n_cells: int, model: str, label: str) -> None:
        self.check(db, next_usd=n_cells * mean_model_cell_cost(db, model), what=f"{label} ({n_cells} cells)")


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
            raise ConfigError("--daily-budget-usd must be >= 0 (0 clears the store's daily budget), got "
                              f"{flag_usd}")
        spending.set_daily_limit(db, flag_usd)
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
        print(f"warning: ${spent:.4f} of the ${limit:g} daily budget spent today (UTC) "
              f"({spent / limit:.0%}); new spending stops at 100 %", file=stream)
    return budget
