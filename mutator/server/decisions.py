"""What the loop decided, as it stored it: each round's incumbent and each attempt's verdict reason.

The loop writes `attempts.incumbent_after` (every attempt of a round carries the incumbent once that round was
integrated) and `attempts.reason` (the strategy's words for KEEP/REJECT, the loop's for the rest); this module only
reads them back. It never restates a strategy's rule: a strategy that changes its rule changes what is stored.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence

import sqlite_utils

from mutator.store.backfill import genome_composites  # noqa: F401  (one rule, read by compare and queries as D.genome_composites)


def incumbents(rows: Sequence[dict]) -> dict[int, str | None]:
    """round -> the incumbent once that round was integrated; a round not integrated yet still has the last one."""
    stored: dict[int, str | None] = {}
    for r in rows:
        if r.get("incumbent_after") is not None:
            stored.setdefault(r["round"], r["incumbent_after"])
    out: dict[int, str | None] = {}
    current = None
    for rnd in sorted({r["round"] for r in rows}):
        current = stored.get(rnd, current)
        out[rnd] = current
    return out


def pending(a: dict) -> str:
    """The words for an attempt with no verdict yet (nothing is decided, so nothing is stored)."""
    if a.get("status") == "scored":
        return "scored: waiting for the round's other candidates before the verdict"
    return f"in progress ({a.get('status') or 'pending'})"


# per open store: (schema_version, whether its attempts have `confirm`); weak, so a closed store's entry goes with it
_CONFIRM: weakref.WeakKeyDictionary[sqlite_utils.Database, tuple[int, bool]] = weakref.WeakKeyDictionary()


def has_confirm(db: sqlite_utils.Database) -> bool:
    """Whether this store's attempts have `confirm` (migration v3; a store no newer loop has opened lacks it), looked
    up once per schema version (a migration moves it), not on every request."""
    version = db.conn.execute("PRAGMA schema_version").fetchone()[0]
    known = _CONFIRM.get(db)
    if known is None or known[0] != version:
        known = _CONFIRM[db] = (version, "confirm" in {row[1] for row in db.conn.execute("PRAGMA table_info(attempts)")})
    return known[1]


def verdict_note_column(db: sqlite_utils.Database, alias: str = "") -> str:
    """`... as verdict_note` for a select over attempts (see verdict_note_sql)."""
    return f"{verdict_note_sql(confirm=has_confirm(db), alias=alias)} as verdict_note"


def verdict_note_sql(*, confirm: bool, alias: str = "") -> str:
    """An attempt's `verdict_note` as a SQL expression over its row (`alias` the attempts table's, e.g. "a."): when
    the verdict and the gate disagree, which stored fact decided: a pool's rank (a KEEP the gate did not pass, or a
    REJECT it passed), a better sibling, or the confirmation that overturned a keep (`confirm`: the store has that
    column, migration v3); null when they agree. SQLite computes it with the row, so no page re-derives it per row."""
    keep = f"json_extract({alias}gate, '$.keep')"
    overturned = (f"when (case when json_valid({alias}confirm) then json_extract({alias}confirm, '$.stands') end) = 0 "
                  "then 'overturned on confirmation' " if confirm else "")
    return (f"(case when {alias}verdict = 'KEEP' and {keep} = 0 then 'kept by pool rank' "
            f"when {alias}verdict = 'REJECT' and {keep} = 1 then (case {overturned}"
            f"when {alias}pool_snapshot is not null then 'lost on pool rank' else 'lost to a sibling' end) end)")


def annotate(targets: Iterable[dict]) -> None:
    """Set each attempt's `reason` to the stored one (targets were read with their `reason` column)."""
    for a in targets:
        if a.get("reason"):
            continue
        if a.get("verdict") is None:
            a["reason"] = pending(a)
        else:   # decided by a loop that stored no reason (an older version still writing this store)
            error = str(a.get("error") or "").splitlines()
            a["reason"] = f"{str(a['verdict']).lower()}: {error[0] if error else 'no reason recorded'}"
