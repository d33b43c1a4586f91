"""What every dashboard handler shares: the app's keys, JSON responses and errors, the response cache
hooks, the store a request names, and the POST body.

Imports nothing of the handlers (app.py, after.py), so both build on it without a circle.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from aiohttp import web

from mutator.config import Settings
from mutator.server.cache import ResponseCache
from mutator.server.launch import Children
from mutator.server.stores import Store, Stores

STORE_ID = re.compile(r"^[0-9a-f]{10}$")
DIGITS = re.compile(r"[0-9]{1,9}")
SKILL = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
RUN_ID = re.compile(r"^(run|aa)-[0-9a-f]{6,64}$")   # ordinary runs and A/A runs (mutator/validity/aa.py)

STORES = web.AppKey("stores", Stores)
SETTINGS = web.AppKey("settings", Settings)
TOKEN = web.AppKey("token", str)
CHILDREN = web.AppKey("children", Children)
STOP = web.AppKey("stop", asyncio.Event)
ALLOWED_HOSTS = web.AppKey("allowed_hosts", frozenset)
CACHE = web.AppKey("cache", ResponseCache)

# ---- responses -----------------------------------------------------------------------------------------
def fail(status: int, message: str) -> web.HTTPException:
    cls = {400: web.HTTPBadRequest, 403: web.HTTPForbidden, 404: web.HTTPNotFound, 415: web.HTTPUnsupportedMediaType}
    return cls[status](text=json.dumps({"error": message}), content_type="application/json")


try:   # optional: 4-8x faster on the big run/lineage/history bodies (bench/dashboard.py); same JSON out
    import orjson
except ImportError:  # pragma: no cover - the stdlib encoder is the fallback
    orjson = None


def encode(data: Any) -> bytes:
    if orjson is not None:
        return orjson.dumps(data, default=str, option=orjson.OPT_NON_STR_KEYS)
    return json.dumps(data, default=str).encode()


def ok(data: Any) -> web.Response:
    return web.json_response(data, dumps=lambda v: json.dumps(v, default=str), headers={"Cache-Control": "no-store"})


def json_body(body: bytes, state: str) -> web.Response:
    return web.Response(body=body, content_type="application/json",
                        headers={"Cache-Control": "no-store", "X-SM-Cache": state})


def cache_key(request: web.Request, store: Store) -> tuple[str, str, int]:
    """(store, canonical path + sorted query, data_version); the version is read before any query runs, so
    an entry can only be newer than its key, never older."""
    query = "&".join(f"{k}={v}" for k, v in sorted(request.query.items()))
    return store.id, f"{request.path}?{query}", request.app[STORES].data_version(store)


def hit(request: web.Request, store: Store) -> tuple[tuple[str, str, int], web.Response | None]:
    key = cache_key(request, store)
    body = request.app[CACHE].get(key)
    return key, None if body is None else json_body(body, "hit")


def remember(request: web.Request, key: tuple[str, str, int], data: Any, *, volatile: bool = False) -> web.Response:
    body = encode(data)
    request.app[CACHE].put(key, body, volatile=volatile)
    return json_body(body, "miss")


def running(*runs: dict) -> bool:
    """A response naming a running run (its `alive` flag reads a pid) or a running test (progress reads cell
    dirs on disk) depends on more than the store: it is cached only briefly. So does a `stale` one (its
    heartbeat's age and its lock are read outside the store)."""
    return any(r.get("status") in ("running", "stale") for r in runs)


def number(request: web.Request, name: str, default: int, low: int, high: int, meaning: str) -> int:
    """A whole-number query parameter in ASCII digits only (str.isdigit() also accepts '²' and '①', which
    int() then refuses): anything else, or out of [low, high], is a 400 naming the parameter."""
    text = request.query.get(name, str(default))
    if not DIGITS.fullmatch(text) or not low <= int(text) <= high:
        raise fail(400, f"{name}: {meaning}, a whole number from {low} to {high} in ASCII digits")
    return int(text)


def store_of(request: web.Request, *, required: bool = True) -> Store:
    sid = request.query.get("store")
    if sid is not None and not STORE_ID.match(sid):
        raise fail(400, "store: expected the 10-hex id from /api/meta")
    store = request.app[STORES].get(sid)
    if store is None:
        raise fail(404, f"no store {sid!r}" if sid else "no mutator.db found; launch a run first")
    return store


def store_in(request: web.Request, body: dict) -> Store:
    """The store a POST body names by its id (required): 400 for a malformed id, 404 for an unknown one."""
    sid = body.get("store")
    if not isinstance(sid, str) or not STORE_ID.match(sid):
        raise fail(400, "store: expected the 10-hex id from /api/meta")
    store = request.app[STORES].get(sid)
    if store is None:
        raise fail(404, f"no store {sid!r}")
    return store


def db_of(request: web.Request, store: Store):
    return request.app[STORES].db(store)


async def read_body(request: web.Request) -> dict:
    try:
        body = await request.json()
    except ValueError:
        raise fail(400, "body: invalid JSON") from None
    if not isinstance(body, dict):
        raise fail(400, "body: expected a JSON object")
    return body


def allowed_hosts(host: str, extra: list[str] | tuple[str, ...] = ()) -> frozenset[str]:
    """The Host names the dashboard answers: loopback names, the bind address and any --allow-host names. A
    wildcard bind (0.0.0.0, ::) is no Host anyone types, so it adds nothing: LAN names come from --allow-host."""
    names = {"127.0.0.1", "localhost", "::1", *(n.strip().lower().strip("[]") for n in extra if n.strip())}
    if host not in ("0.0.0.0", "::", ""):
        names.add(host.lower().strip("[]"))
    return frozenset(names)
