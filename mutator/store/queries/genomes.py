"""Genomes as the dashboard's diff reads them: the commit in genomes.git that holds each one."""

from __future__ import annotations

import sqlite_utils

from mutator.store.queries.rows import q


def git_commits(db: sqlite_utils.Database, parent_hash: str | None,
                genome_hash: str | None) -> dict[str, str]:
    """{genome hash: git commit} of a parent and its child (either may be missing)."""
    return {r["hash"]: r["git_commit"] for r in q(db, "select hash, git_commit from genomes where hash in "
                                                      "(?, ?)",
                                                  [parent_hash, genome_hash])}
