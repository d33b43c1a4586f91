"""The spend ledger on a store made before it: read as it is (a read-only dashboard), each run's spend is its
recorded total; migrated, those totals are its first charges, so every figure reads as before."""

from __future__ import annotations

import sqlite3
import tarfile
from pathlib import Path

from mutator.after.spend import run_spend, run_totals
from mutator.store.db import connect, connect_readonly

OLD = Path(__file__).with_name("fixtures") / "store-05d97d1.tgz"


def test_an_old_store_reads_and_migrates_with_every_runs_total_kept(tmp_path: Path) -> None:
    with tarfile.open(OLD) as tar:
        tar.extractall(tmp_path, filter="data")
    store = tmp_path / "data" / "mutator.db"
    with sqlite3.connect(store) as conn:
        recorded = dict(conn.execute("select id, cost_usd from runs where cost_usd > 0"))
    assert recorded
    unmigrated = connect_readonly(store)
    assert "charges" not in unmigrated.table_names() and run_totals(unmigrated) == recorded
    unmigrated.conn.close()
    db = connect(store)   # the writer's connection migrates
    assert {r["run_id"]: r["usd"] for r in db.query("select run_id, sum(usd) as usd from charges group by run_id")} \
        == recorded
    for run_id, usd in recorded.items():
        assert run_spend(db, run_id) == {"total": usd, "kinds": {"before itemised spend": usd}}
