"""The shared live stream (`/api/events?watch=`): several runs of a store in one connection, each with its own
signature; malformed pairs are 400s; the open streams are counted on /api/health."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from mutator.server.common import CACHE
from mutator.server.live import MAX_WATCHED

from .conftest import LOCK_HOLDER, ROOT, TOKEN

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def client(aiohttp_client, mixed_store):
    return await aiohttp_client(create_app(data_dir=mixed_store, project_root=mixed_store.parent, token=TOKEN))


async def _event(response) -> dict:
    line = await response.content.readline()
    while line in (b"\n", b": keep-alive\n"):   # the blank line ending the previous event, a heartbeat
        line = await response.content.readline()
    assert line == b"event: change\n"
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




@pytest.fixture
def held_run(store):
    """The greedy run of a copy of the mixed store made running again, its lock and pid a live process's."""
    with sqlite3.connect(store / "mutator.db") as conn:
        run_id, skill = conn.execute("select id, skill_name from runs where strategy = 'greedy'").fetchone()
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(store), run_id], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with sqlite3.connect(store / "mutator.db") as conn:
            conn.execute("update runs set status = 'running', heartbeat_at = ?, pid = ?, finished_at = null "
                         "where id = ?", [time.time(), holder.pid, run_id])
        yield run_id, skill, holder
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


async def test_a_writer_dying_drops_the_cached_running_answer_before_the_pages_hear_of_it(aiohttp_client, store,
                                                                                           held_run):
    """Constructed: a run whose lock and pid a live process holds; /api/runs cached while it lives (a volatile
    entry, its time to live made long so only the fix can end it); the holder is killed with no write, the
    live stream says the store moved, and the refetch that event causes must say stale. On the old code the
    cached RUNNING answer went to every tab refetching on that event, and no later event corrected it (CI,
    the ten-tab test)."""
    run_id, skill, holder = held_run
    client = await aiohttp_client(create_app(data_dir=store, project_root=store.parent, token=TOKEN))
    client.app[CACHE].volatile_ttl = 3600.0
    sid = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
    stream = await client.get("/api/events", params={"store": sid, "run": run_id})
    baseline = await _event(stream)

    async def listed() -> tuple[dict, str]:
        response = await client.get("/api/runs", params={"store": sid, "skill": skill})
        return next(r for r in await response.json() if r["id"] == run_id), response.headers["X-SM-Cache"]

    (first, _), (again, state) = await listed(), await listed()
    assert (first["alive"], first["status"], again["alive"], state) == (True, "running", True, "hit")
    holder.kill()
    holder.wait()
    moved = await asyncio.wait_for(_event(stream), 30)
    assert moved["runs"] != baseline["runs"] and moved["version"] == baseline["version"]   # liveness only
    after, state = await listed()
    assert (after["alive"], after["status"], state) == (False, "stale", "miss")
    stream.close()
