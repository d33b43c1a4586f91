"""Migrations keyed by name: a fresh store gets every one once; a store migrated by position (main before names)
is adopted, never re-migrated, and resumes with 0 cells; a positional version this code does not know is refused."""

from __future__ import annotations

import sqlite3
import tarfile
from pathlib import Path

import pytest
import sqlite_utils

from mutator.store.db import connect
from mutator.store.migrations import POSITIONAL, MigrationError, migrate, migration
from tests.conftest import run_cli

FIXTURES = Path(__file__).with_name("fixtures")
OLD_STORES = {   # (tarball, positional versions applied): main before names, --replicates 2 --rounds 2
    "8175abe": (FIXTURES.parents[1] / "round" / "fixtures" / "store-8175abe.tgz", 12),
    "05d97d1": (FIXTURES / "store-05d97d1.tgz", 13),
}


def schema(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("select type, name, sql from sqlite_master where name not like '%migrations%' "
                            "order by name").fetchall()


def names(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("select name from _sqlite_migrations where migration_set = ? "
                                           "order by id", [migration.name])]


def test_a_fresh_store_records_every_migration_by_name_once(tmp_path):
    db = connect(tmp_path / "mutator.db")
    assert migrate(db) == []                                       # connect applied them all; none is pending
    db.close()
    assert names(tmp_path / "mutator.db") == [m.name for m in migration._migrations]
    assert names(tmp_path / "mutator.db")[:13] == [POSITIONAL[v] for v in range(1, 14)]
    assert "schema_migrations" not in sqlite_utils.Database(tmp_path / "mutator.db").table_names()


@pytest.mark.parametrize("commit", sorted(OLD_STORES))
def test_a_store_migrated_by_position_is_adopted_and_resumes_with_no_cell(tmp_path, commit):
    tarball, versions = OLD_STORES[commit]
    with tarfile.open(tarball) as tar:
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    store = data / "mutator.db"
    with sqlite3.connect(store) as conn:
        assert [r[0] for r in conn.execute("select version from schema_migrations order by version")] == \
            list(range(1, versions + 1))
        cells = conn.execute("select count(*) from cells").fetchone()[0]
    fresh = tmp_path / "fresh" / "mutator.db"
    connect(fresh).close()
    again = run_cli("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--rounds", "2",
                    "--data-dir", str(data))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 cells run by this command" in again.stdout
    with sqlite3.connect(store) as conn:
        assert conn.execute("select count(*) from cells").fetchone()[0] == cells
        # skill telemetry (migration cell_skill_use) is null for the old cells; their keys did not change
        assert conn.execute("select count(*) from cells where skill_use is not null").fetchone()[0] == 0
    # the versions it had are recorded under their names, in order; only the ones it lacked ran
    assert names(store) == [POSITIONAL[v] for v in range(1, 14)] + [m.name for m in migration._migrations[13:]]
    assert schema(store) == schema(fresh)                          # the same tables, columns and indexes


def test_adopting_twice_records_nothing_twice(tmp_path):
    with tarfile.open(OLD_STORES["05d97d1"][0]) as tar:
        tar.extractall(tmp_path, filter="data")
    store = tmp_path / "data" / "mutator.db"
    for _ in range(2):
        connect(store).close()
    assert names(store) == [m.name for m in migration._migrations]


def test_a_positional_version_this_code_does_not_know_is_refused_naming_it(tmp_path):
    with tarfile.open(OLD_STORES["05d97d1"][0]) as tar:
        tar.extractall(tmp_path, filter="data")
    store = tmp_path / "data" / "mutator.db"
    with sqlite3.connect(store) as conn:
        conn.execute("insert into schema_migrations (version, applied_at) values (99, 0)")
    with pytest.raises(MigrationError, match=r"positional migration\(s\) \[99\].*POSITIONAL"):
        connect(store)
    assert "_sqlite_migrations" not in sqlite_utils.Database(store).table_names()   # nothing was recorded
    failed = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "1",
                     "--data-dir", str(tmp_path / "data"))
    assert failed.returncode == 2 and "error: " in failed.stderr and "[99]" in failed.stderr
