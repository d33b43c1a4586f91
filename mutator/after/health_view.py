"""The Health page's summary of one watched target (a skill folder + check fingerprint), read-only.

Status (healthy / drifting / regressed / no_data), the latest check with its band text, a daily trend
(UTC days, up to 365, saying how far back the data reaches), tasks worst first, and cost.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import sqlite_utils

from mutator.after import drift
from mutator.after.spend import day_start
from mutator.store.db import loads
from mutator.store.health_checks import check_targets, checks_of

MAX_DAYS = 365


def targets(db: sqlite_utils.Database) -> list[dict]:
    found = check_targets(db)
    for t in found:
        t["suites"] = loads(t["suites"], [])
    return found


def summary(db: sqlite_utils.Database, *, skill_dir: str | None = None, fingerprint: str | None = None,
            days: int = 30, at: float | None = None) -> dict:
    at = at or time.time()
    days = max(1, min(MAX_DAYS, days))
    found = targets(db)
    target = next((t for t in found if t["skill_dir"] == skill_dir and t["fingerprint"] == fingerprint),
                  None) if skill_dir else (found[0] if found else None)
    empty = {"targets": found, "target": target, "status": "no_data", "latest": None, "trend": [],
             "days": days, "covered_from": None, "complete": False, "tasks": [],
             "cost": {"last_check": None, "period_total": 0.0}, "counts": {"checks": 0, "in_period": 0}}
    if target is None:
        return empty
    checks = checks_of(db, target["skill_dir"], target["fingerprint"])   # a dead checker's `running`: `stale`
    start = day_start(at) - (days - 1) * 86400
    period = [c for c in checks if (c["started_at"] or 0) >= start]
    latest = checks[-1]
    scored = [c for c in checks if c["score"] is not None]
    status = drift.status(scored[-1]["band"]) if scored else "no_data"
    trend: dict[str, list[float]] = {}
    for c in period:
        if c["score"] is not None:
            trend.setdefault(_day(c["started_at"]), []).append(c["score"])
    first = _day(checks[0]["started_at"])
    return {**empty, "status": status,
            "latest": {k: latest[k] for k in ("id", "status", "partial", "score", "previous_score", "delta",
                                              "band", "summary", "n_done", "n_cells", "cost_usd",
                                              "genome_hash", "started_at", "finished_at", "previous_id",
                                              "stale_note") if k in latest},
            "trend": [{"date": d, "avg_score": sum(v) / len(v), "checks": len(v)} for d,
                      v in sorted(trend.items())],
            "covered_from": first, "complete": first <= _day(start),
            "tasks": loads(latest["tasks"], []) or [],
            "cost": {"last_check": latest["cost_usd"],
                     "period_total": sum(c["cost_usd"] or 0.0 for c in period)},
            "counts": {"checks": len(checks), "in_period": len(period)},
            "checks": [{k: c[k] for k in ("id", "status", "partial", "score", "band", "started_at",
                                          "cost_usd")}
                       for c in reversed(checks[-20:])]}


def _day(ts: float | None) -> str:
    return datetime.fromtimestamp(ts or 0, UTC).date().isoformat()
