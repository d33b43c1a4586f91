"""The store's tables as this code makes them: a fresh store, migrated in memory, read back (for the
generated reference, docs/reference/store.md)."""

from __future__ import annotations

import sqlite_utils

from mutator.store.migrations import migrate, migration


def tables() -> dict[str, list[tuple[str, str]]]:
    """Every table of a fresh store after every migration: name -> [(column, declared type)], in the
    order SQLite lists them (migration bookkeeping and SQLite's own tables aside)."""
    db = sqlite_utils.Database(memory=True)
    migrate(db)
    return {table.name: [(column.name, column.type) for column in table.columns]
            for table in db.tables if not table.name.startswith(("_", "sqlite_"))}


def migration_names() -> list[str]:
    """The named migrations, in the order they apply."""
    return [step.name for step in migration.pending(sqlite_utils.Database(memory=True))]
