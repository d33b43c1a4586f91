"""A fresh store with one run in it, for the store modules' own tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlite_utils

from mutator.store.db import connect, now

RUN = "run-0000000000aa"


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    store = connect(tmp_path / "mutator.db")
    store["runs"].insert({"id": RUN, "kind": "evolve", "status": "finished", "seed_hash": "s" * 64,
                          "incumbent_hash": "c" * 64, "skill_name": "csv-clean", "val": "clean-val",
                          "suite": "clean-train", "cost_usd": 1.5, "created_at": now(), "updated_at": now()})
    return store
