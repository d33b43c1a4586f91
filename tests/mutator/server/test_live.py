"""The shared live stream (`/api/events?watch=`): several runs of a store in one connection, each with its own
signature; malformed pairs are 400s; the open streams are counted on /api/health."""

from __future__ import annotations

import json
import sqlite3

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from mutator.server.live import MAX_WATCHED

from .conftest import TOKEN

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def client(aiohttp_client, mixed_store):
    return await aiohttp_client(create_app(data_dir=mixed_store, project_root=mixed_store.parent, token=TOKEN))


async def _event(response) -> dict:
    assert await response.content.readline() == b"event: change\n"
    return json.loads((await response.content.readline()).decode().removeprefix("data: "))


async def test_one_stream_follows_every_tabs_runs(client, mixed_store):
    with sqlite3.connect(mixed_store / "mutator.db") as conn:
        ids = [r for (r,) in conn.execute("select id from runs order by id")]
    store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
    watch = ",".join([f"{store}:{ids[0]}", f"{store}:{ids[1]}", f"{store}:", "0123456789:"])
    response = await client.get("/api/events", params={"watch": watch})
    assert response.status == 200
    data = await _event(response)
    assert list(data["stores"]) == [store]                 # an unknown store is left out
    shown = data["stores"][store]
    assert sorted(shown["run"]) == sorted(ids[:2]) and len(set(shown["run"].values())) == 2
    assert len(shown["runs"]) == 12 and isinstance(shown["version"], int)
    assert (await (await client.get("/api/health")).json())["live_streams"] == 1
    response.close()


async def test_malformed_watch_lists_are_refused(client):
    for watch in ("", "nothex:run-000000", "0123456789:../x", ",".join(["0123456789:"] * (MAX_WATCHED + 1))):
        response = await client.get("/api/events", params={"watch": watch})
        assert response.status == 400, watch
        assert "watch" in (await response.json())["error"]
