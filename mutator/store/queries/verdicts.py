"""An attempt's `verdict_note` as SQL: which stored fact decided when the verdict and the gate disagree,
computed by SQLite with the row so no page re-derives it; and whether the store's attempts have `confirm`
(migration v3)."""

from __future__ import annotations

import weakref

import sqlite_utils

# per open store: (schema_version, its attempts' columns); weak, so a closed store's entry goes with it
_CONFIRM: weakref.WeakKeyDictionary[sqlite_utils.Database,
                                    tuple[int, frozenset[str]]] = weakref.WeakKeyDictionary()


def attempt_columns(db: sqlite_utils.Database) -> frozenset[str]:
    """This store's attempts columns (a store no newer loop has opened lacks the newer ones), looked up once
    per schema version (a migration moves it), not on every request."""
    version = db.conn.execute("PRAGMA schema_version").fetchone()[0]
    known = _CONFIRM.get(db)
    if known is None or known[0] != version:
        columns = frozenset(row[1] for row in db.conn.execute("PRAGMA table_info(attempts)"))
        known = _CONFIRM[db] = (version, columns)
    return known[1]


def has_confirm(db: sqlite_utils.Database) -> bool:
    """Whether this store's attempts have `confirm` (migration v3)."""
    return "confirm" in attempt_columns(db)


def touched_column(db: sqlite_utils.Database, alias: str = "") -> str:
    """`skills_touched` of a select over attempts (null when the store predates it)."""
    return f"{alias}skills_touched" if "skills_touched" in attempt_columns(db) else "null as skills_touched"


def verdict_note_column(db: sqlite_utils.Database, alias: str = "") -> str:
    """`... as verdict_note` for a select over attempts (see verdict_note_sql)."""
    return f"{verdict_note_sql(confirm=has_confirm(db), alias=alias)} as verdict_note"


def verdict_note_sql(*, confirm: bool, alias: str = "") -> str:
    """An attempt's `verdict_note` as a SQL expression over its row (`alias` the attempts table's, e.g. "a."):
    when the verdict and the gate disagree, which stored fact decided: a pool's rank (a KEEP the gate did not
    pass, or a REJECT it passed), a better sibling, or the confirmation that overturned a keep (`confirm`: the
    store has that column, migration v3); null when they agree."""
    keep = f"json_extract({alias}gate, '$.keep')"
    overturned = (f"when (case when json_valid({alias}confirm) then json_extract({alias}confirm, '$.stands') "
                  "end) = 0 then 'overturned on confirmation' " if confirm else "")
    return (f"(case when {alias}verdict = 'KEEP' and {keep} = 0 then 'kept by pool rank' "
            f"when {alias}verdict = 'REJECT' and {keep} = 1 then (case {overturned}"
            f"when {alias}pool_snapshot is not null then 'lost on pool rank' else 'lost to a sibling' end) "
            "end)")
