"""The response cache: LRU bounds, a store's change invalidates its entries (and only its), volatile entries
expire, and over HTTP a write by another connection is seen by both the next GET and the live stream."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from mutator.server.app import CACHE, create_app
from mutator.server.cache import ResponseCache

from .conftest import TOKEN


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_hit_returns_the_stored_body_and_counts():
    cache = ResponseCache()
    assert cache.get(("s", "/a?", 1)) is None
    cache.put(("s", "/a?", 1), b"[1]")
    assert cache.get(("s", "/a?", 1)) == b"[1]"
    assert cache.stats() == {"entries": 1, "bytes": 3, "hits": 1, "misses": 1, "evictions": 0}


def test_a_new_version_drops_that_stores_older_entries_only():
    cache = ResponseCache()
    cache.put(("s", "/a?", 1), b"old")
    cache.put(("t", "/a?", 7), b"other store")
    assert cache.get(("s", "/a?", 2)) is None
    assert cache.stats()["entries"] == 1 and cache.get(("t", "/a?", 7)) == b"other store"


@pytest.mark.parametrize(("limits", "kept"), [
    ({"max_entries": 2}, ["/b?", "/c?"]),             # the least recently used goes first
    ({"max_bytes": 5}, ["/c?"]),                       # two 3-byte bodies exceed 5: evict until it fits
])
def test_the_lru_is_bounded(limits, kept):
    cache = ResponseCache(**limits)
    for path in ("/a?", "/b?", "/c?"):
        cache.put(("s", path, 1), b"xyz")
    assert [p for p in ("/a?", "/b?", "/c?") if cache.get(("s", p, 1))] == kept
    assert cache.bytes == 3 * len(kept)


def test_recent_use_protects_an_entry():
    cache = ResponseCache(max_entries=2)
    cache.put(("s", "/a?", 1), b"a")
    cache.put(("s", "/b?", 1), b"b")
    cache.get(("s", "/a?", 1))
    cache.put(("s", "/c?", 1), b"c")
    assert cache.get(("s", "/a?", 1)) == b"a" and cache.get(("s", "/b?", 1)) is None


def test_an_oversized_body_is_not_kept():
    cache = ResponseCache(max_entry_bytes=4)
    cache.put(("s", "/a?", 1), b"12345")
    assert cache.get(("s", "/a?", 1)) is None and cache.bytes == 0


def test_volatile_entries_expire():
    clock = Clock()
    cache = ResponseCache(volatile_ttl=1.0, clock=clock)
    cache.put(("s", "/live?", 1), b"live", volatile=True)
    cache.put(("s", "/done?", 1), b"done")
    clock.now = 0.5
    assert cache.get(("s", "/live?", 1)) == b"live"
    clock.now = 1.0
    assert cache.get(("s", "/live?", 1)) is None and cache.get(("s", "/done?", 1)) == b"done"
    assert cache.bytes == 4


# ---- over HTTP -----------------------------------------------------------------------------------------
pytest_asyncio = pytest.importorskip("pytest_asyncio")


async def _client(aiohttp_client, data_dir):
    client = await aiohttp_client(create_app(data_dir=data_dir, project_root=data_dir.parent, token=TOKEN))
    store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
    return client, store


async def _get(client, path, **params):
    response = await client.get(path, params=params)
    assert response.status == 200, await response.text()
    return response.headers["X-SM-Cache"], await response.json()


@pytest.mark.asyncio
async def test_a_write_by_the_loop_invalidates_and_the_stream_sees_it(aiohttp_client, store_copy, run_id):
    client, store = await _client(aiohttp_client, store_copy)
    path = f"/api/runs/{run_id}"
    state, first = await _get(client, path, store=store)
    assert state == "miss"
    state, again = await _get(client, path, store=store)
    assert state == "hit" and again == first
    # the same query in another order is the same entry; another window is another entry
    assert (await _get(client, path, window="60", store=store))[0] == "miss"
    assert (await _get(client, path, store=store, window="60"))[0] == "hit"
    events = await client.get("/api/events", params={"store": store})
    assert await events.content.readline() == b"event: change\n"
    await events.content.readline()
    await events.content.readline()
    with sqlite3.connect(store_copy / "mutator.db") as conn:  # a writer commits, as the loop does
        conn.execute("update attempts set summary = 'rewritten by the loop' where round = 1")
    line = await asyncio.wait_for(events.content.readline(), timeout=15)
    assert line == b"event: change\n"
    events.close()
    state, fresh = await _get(client, path, store=store)
    assert state == "miss"
    assert [a["summary"] for a in fresh["attempts"] if a["round"] == 1] == ["rewritten by the loop"]
    health = await (await client.get("/api/health")).json()
    assert health["cache"]["hits"] >= 2 and health["cache"]["entries"] >= 1


@pytest.mark.asyncio
async def test_a_running_run_is_cached_only_briefly(aiohttp_client, store_copy, run_id):
    """A 'running' run's alive flag reads a pid outside the store: the entry is volatile (expires)."""
    with sqlite3.connect(store_copy / "mutator.db") as conn:
        conn.execute("update runs set status = 'running', pid = 999999999")
    client, store = await _client(aiohttp_client, store_copy)
    cache = client.server.app[CACHE]
    clock = Clock()
    cache.clock = clock
    assert (await _get(client, "/api/runs", store=store))[0] == "miss"
    assert (await _get(client, "/api/runs", store=store))[0] == "hit"
    clock.now = cache.volatile_ttl
    state, found = await _get(client, "/api/runs", store=store)
    assert state == "miss" and found[0]["alive"] is False


@pytest.mark.asyncio
async def test_errors_are_not_cached(aiohttp_client, dry_store):
    client, store = await _client(aiohttp_client, dry_store)
    for _ in range(2):
        response = await client.get("/api/runs/run-000000000000", params={"store": store})
        assert response.status == 404 and "X-SM-Cache" not in response.headers


@pytest.mark.parametrize("data", [{"a": 1.5, "b": [1, None, "x"], 3: {"nested": (1, 2)}},
                                  [float("1e-9"), "é", True]])
def test_the_encoder_writes_the_same_json_as_the_standard_library(data, monkeypatch):
    import json

    from mutator.server import common
    fast = json.loads(common.encode(data))
    monkeypatch.setattr(common, "orjson", None)
    assert fast == json.loads(common.encode(data)) == json.loads(json.dumps(data, default=str))
