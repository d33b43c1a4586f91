"""The watch's ticks (run.py --watch, the `triggers` table) as the dashboard lists them."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import q


def ticks(db: sqlite_utils.Database, limit: int) -> list[dict]:
    """The newest `limit` ticks, newest first."""
    return q(db, "select id, at, skill_dir, suites, traces_seen, eligible, new_eligible, min_traces, "
                 "outcome, run_id, proposal_id, reason, finished_at, judge_cost_usd from triggers order by "
                 "id desc limit ?", [limit])


def outcome_counts(db: sqlite_utils.Database) -> dict[str, int]:
    """{outcome: number of ticks}."""
    found = q(db, "select outcome, count(*) as n from triggers group by outcome")
    return {r["outcome"]: r["n"] for r in found}
