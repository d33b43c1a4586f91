"""Looks at a test suite, counted per skill: every finished test of a champion on a suite is a look, numbered
in the order the champions were first tested (a repeated test of the same champion is that look again, its
cells served from the cache, never a new look).

Reads and numbers `test_runs` rows (their `look` and `repeat_of` columns); never runs a cell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlite_utils


def rows(db: sqlite_utils.Database, sql: str, params: list | tuple = ()) -> list[dict]:
    # not mutator.store.db's: the migrations (which db imports) number old stores' looks with this module
    return [dict(r) for r in db.query(sql, params)]


@dataclass(frozen=True)
class Look:
    """Look `k` of `suite` for `skill`: k counts the distinct champions tested there so far, this one
    included; `repeat_of` is the first finished test of this same champion there (None: a new look); `looks`
    is how many looks the suite has had, this one included."""
    k: int
    repeat_of: int | None
    looks: int



def _done(db: sqlite_utils.Database, skill_name: str, suite: str, before: int | None) -> list[dict]:
    return rows(db, "select t.id, t.genome_hash from test_runs t join runs r on r.id = t.run_id where "
                    "r.skill_name = ? and t.suite = ? and t.status = "
                    "'done'" + (" and t.id < ?" if before is not None else "")
                + " order by t.id", [skill_name, suite, *([before] if before is not None else [])])


def look_of(db: sqlite_utils.Database, *, skill_name: str, suite: str, genome_hash: str,
            before: int | None = None) -> Look:
    """The look a test of `genome_hash` on `suite` is (counting finished tests, those with id < `before` if
    given)."""
    done = _done(db, skill_name, suite, before)
    first: dict[str, int] = {}
    for row in done:
        first.setdefault(row["genome_hash"], row["id"])
    order = list(first)
    if genome_hash in first:
        return Look(order.index(genome_hash) + 1, first[genome_hash], len(order))
    return Look(len(order) + 1, None, len(order) + 1)


def sealed_by(db: sqlite_utils.Database, run_id: str, suite: str, genome_hash: str) -> dict | None:
    """The run's first finished test on `suite`, when it tested another champion than `genome_hash` (a sealed
    run refuses this test); None when the test may go ahead."""
    found = rows(db, "select id, genome_hash, round, created_at from test_runs where run_id = ? and suite = "
                     "? and status = 'done' order by id limit 1", [run_id, suite])
    return found[0] if found and found[0]["genome_hash"] != genome_hash else None


UNRECORDED = (
    "select distinct e.genome_hash, e.id from evaluations e where e.suite = ? and e.genome_hash != ? "
    "and e.genome_hash in (select a.genome_hash from attempts a join runs r on r.id = a.run_id "
    "  where r.skill_name = ? and ? not in (coalesce(r.suite, ''), coalesce(r.val, '')) "
    "  union select incumbent_hash from runs where skill_name = ? and ? not in (coalesce(suite, ''), "
    "  coalesce(val, ''))) "
    "and e.genome_hash not in (select seed_hash from runs where skill_name = ? and seed_hash is not null) "
    "and e.genome_hash not in (select t.genome_hash from test_runs t join runs r on r.id = t.run_id "
    "  where r.skill_name = ? and t.suite = ?) order by e.id")


def unrecorded(db: sqlite_utils.Database, *, skill_name: str, suite: str, genome_hash: str) -> list[str]:
    """Champions of this skill other than `genome_hash` that the store holds evaluations of on `suite` (a test
    leaves its champion's cells there) but no test record names: the looks at `suite` cannot be counted from
    `test_runs` (rows deleted), so a test must not go ahead. A run's seed (measured in every test, and
    never a look by itself), the runs that train or validate on `suite`, and health checks (--check) are
    not tests."""
    found = rows(db, UNRECORDED,
                 [suite, genome_hash, skill_name, suite, skill_name, suite, skill_name, skill_name, suite])
    checked: set[int] = set()
    for row in rows(db, "select evaluation_ids from health_checks where skill_name = ?", [skill_name]):
        try:
            checked.update(int(i) for i in json.loads(row["evaluation_ids"] or "[]"))
        except (ValueError, TypeError):
            continue
    return list(dict.fromkeys(r["genome_hash"] for r in found if r["id"] not in checked))


def number_all(db: sqlite_utils.Database) -> int:
    """Give every finished test row its look number and repeat (a store made before looks were counted);
    returns how many rows were numbered."""
    numbered = 0
    for row in rows(db, "select t.id, t.suite, t.genome_hash, r.skill_name from test_runs t join runs r on "
                        "r.id = t.run_id where t.status = 'done' and t.look is null order by t.id"):
        look = look_of(db, skill_name=row["skill_name"], suite=row["suite"], genome_hash=row["genome_hash"],
                       before=row["id"])
        db.execute("update test_runs set look = ?, repeat_of = ? where id = ?",
                   [look.k, look.repeat_of, row["id"]])
        numbered += 1
    return numbered
