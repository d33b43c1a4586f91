"""GET /api/triggers: the watch's ticks, newest first, with counts per outcome; empty for a store without
them."""

from __future__ import annotations

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from mutator.store.db import connect

from .conftest import TOKEN

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def client(aiohttp_client, tmp_path):
    data = tmp_path / "project" / "data"
    db = connect(data / "mutator.db")
    for i, outcome in enumerate(["skipped-trigger", "proposed", "failed"]):
        db["triggers"].insert({"at": 1000.0 + i, "skill_dir": "/srv/skills/csv-clean",
                               "suites": "/srv/suites/live", "traces_seen": 10 * i, "eligible": 5 * i,
                               "new_eligible": 5 * i, "min_traces": 5, "outcome": outcome,
                               "run_id": "run-abc" if i == 1 else None, "proposal_id": 1 if i == 1 else None,
                               "reason": f"tick {i}", "finished_at": 1001.0 + i})
    db.conn.commit()
    db.conn.close()
    return await aiohttp_client(create_app(data_dir=data, project_root=data.parent, token=TOKEN))


async def test_the_ticks_are_listed_newest_first_with_counts(client):
    meta = await (await client.get("/api/meta")).json()
    response = await client.get("/api/triggers", params={"store": meta["stores"][0]["id"]})
    assert response.status == 200, await response.text()
    found = await response.json()
    assert [t["outcome"] for t in found["ticks"]] == ["failed", "proposed", "skipped-trigger"]
    assert found["counts"] == {"failed": 1, "proposed": 1, "skipped-trigger": 1}
    proposed = found["ticks"][1]
    assert (proposed["run_id"] == "run-abc" and proposed["proposal_id"] == 1
            and proposed["suites_name"] == "live")


async def test_a_store_without_a_triggers_table_has_no_ticks(aiohttp_client, tmp_path):
    import sqlite3
    data = tmp_path / "old" / "data"
    data.mkdir(parents=True)
    sqlite3.connect(data / "mutator.db").execute("create table runs (id text)").connection.commit()
    client = await aiohttp_client(create_app(data_dir=data, project_root=data.parent, token=TOKEN))
    meta = await (await client.get("/api/meta")).json()
    found = await (await client.get("/api/triggers", params={"store": meta["stores"][0]["id"]})).json()
    assert found == {"ticks": [], "counts": {}}
