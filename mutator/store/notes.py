"""A researcher's name, tags and note for a run or an attempt, in the `notes` table (migration
run_command_and_notes). Written by `run.py --annotate` only; the dashboard reads it and edits it through that
command.
"""

from __future__ import annotations

import re
import time

import sqlite_utils

from eval.errors import SkillMutatorError

RUN_TARGET = re.compile(r"^(run|aa)-[0-9a-f]{6,64}$")
LIMITS = {"name": 200, "tags": 500, "note": 4000}


class NoteError(SkillMutatorError, ValueError):
    """A bad --annotate target or field; the message names it and the fix (exit 2)."""


def target_of(db: sqlite_utils.Database, what: str) -> str:
    """'run:<id>' for a run id, 'attempt:<id>' for an attempt number; NoteError when the store has neither."""
    if RUN_TARGET.match(what):
        if not db.execute("select 1 from runs where id = ?", [what]).fetchone():
            raise NoteError(f"--annotate {what}: no such run in this store (run.py --export lists them)")
        return f"run:{what}"
    if what.isascii() and what.isdigit():
        if not db.execute("select 1 from attempts where id = ?", [int(what)]).fetchone():
            raise NoteError(f"--annotate {what}: no attempt with that id in this store")
        return f"attempt:{int(what)}"
    raise NoteError(f"--annotate {what!r}: give a run id (run-<hex> or aa-<hex>) or an attempt id (a number)")


def tag_list(text: str) -> list[str]:
    return sorted({t.strip() for t in text.split(",") if t.strip()})


def annotate(db: sqlite_utils.Database, what: str, *, name: str | None = None, tags: str | None = None,
             note: str | None = None) -> dict:
    """Set the given fields of a run's or an attempt's notes (None keeps a field, ''
    clears it); returns the row."""
    target = target_of(db, what)
    fields = {"name": name, "tags": None if tags is None else ",".join(tag_list(tags)), "note": note}
    for field, value in fields.items():
        if value is not None and (len(value) > LIMITS[field] or "\x00" in value):
            raise NoteError(f"--{field}: at most {LIMITS[field]} characters, no NUL")
    row = next(iter(db["notes"].rows_where("target = ?", [target])), None) or {"target": target}
    row.update({k: v for k, v in fields.items() if v is not None}, updated_at=time.time())
    with db.conn:
        db["notes"].upsert(row, pk="target")
    return row


def notes_of(db: sqlite_utils.Database, targets: list[str]) -> dict[str, dict]:
    """{target: {name, tags: [...], note}} of the targets that have notes (none for
    a store without the table)."""
    if not targets or "notes" not in db.table_names():
        return {}
    found = db.execute("select target, name, tags, note from notes where target in "
                       f"({','.join('?' * len(targets))})",
                       targets).fetchall()
    return {t: {"name": n, "tags": tag_list(g or ""), "note": x} for t, n, g, x in found}
