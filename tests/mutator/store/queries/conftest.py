"""A read-only connection to the session's demo store (tests/conftest.py demo_store), as the dashboard opens
it."""

from __future__ import annotations

import sqlite3

import pytest

from mutator.store.db import connect_readonly


@pytest.fixture
def reader(demo_store):
    db = connect_readonly(demo_store[0] / "mutator.db")
    db.conn.row_factory = sqlite3.Row   # the dashboard's connections hand out rows like this
    yield db
    db.conn.close()


@pytest.fixture
def run_id(reader) -> str:
    return reader.execute("select id from runs").fetchone()[0]
