"""What every dashboard handler shares: the app's keys, JSON responses and errors, the response cache
hooks, the store a request names, and the POST body.

Imports nothing of the handlers (app.py, after.py), so both build on it without a circle.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from aiohttp import web

from mutator.config import Settings
from mutator.server.cache import ResponseCache
from mutator.server.launch import Children
from mutator.server.stores import Store, Stores
from mutator.store.db import connect_readonly
from mutator.store.queries.runs import holds_run

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
    cls = {400: web.HTTPBadRequest, 403: web.HTTPForbidden, 404: web.HTTPNotFound,
           415: web.HTTPUnsupportedMediaType}
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
    return web.json_response(data, dumps=lambda v: json.dumps(v, default=str),
                             headers={"Cache-Control": "no-store"})


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


def remember(request: web.Request, key: tuple[str, str, int], data: Any, *,
             volatile: bool = False) -> web.Response:
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


BODY_MAX = 1024**2      # aiohttp's client_max_size, which create_app keeps
BODY_DEPTH = 8          # a launch body is two levels deep; deeper is no request the page sends
UTF8 = {None, "utf-8", "utf8"}


async def read_body(request: web.Request) -> dict:
    """Every POST's JSON object, read defensively: a client's body is answered with a JSON 4xx naming what is
    wrong (its charset, size, encoding, nesting, a NUL in a field), never a 500."""
    charset = (request.charset or "").lower() or None
    if charset not in UTF8:
        raise fail(415, f"body: charset {charset!r} is not supported; send application/json in UTF-8")
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        too_large = "body: larger than aiohttp's 1 MiB limit; a dashboard request is a few hundred bytes"
        raise web.HTTPRequestEntityTooLarge(BODY_MAX, text=json.dumps({"error": too_large}),
                                            content_type="application/json") from None
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise fail(400, "body: not UTF-8 text; send application/json in UTF-8") from None
    except RecursionError:
        raise fail(400, f"body: nested deeper than {BODY_DEPTH} levels") from None
    except ValueError:
        raise fail(400, "body: invalid JSON") from None
    if not isinstance(body, dict):
        raise fail(400, "body: expected a JSON object")
    _check_fields(body, "body", 1)
    return body


def _check_fields(value: Any, where: str, depth: int) -> None:
    if depth > BODY_DEPTH:
        raise fail(400, f"{where}: nested deeper than {BODY_DEPTH} levels")
    if isinstance(value, str) and "\x00" in value:
        raise fail(400, f"{where}: contains a NUL byte; send text without it")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for name, inner in items:
        _check_fields(inner, str(name) if where == "body" else f"{where}.{name}", depth + 1)


def run_in_store(body: dict, data_dir: Path) -> None:
    """A test of a run the store does not hold would start a process only to fail: 404, nothing started."""
    path = data_dir / "mutator.db"
    found = False
    if path.is_file():
        db = connect_readonly(path)
        try:
            found = holds_run(db, body["run_id"])
        finally:
            db.conn.close()
    if not found:
        raise fail(404, f"run_id: no run {body['run_id']!r} in {path}")


def allowed_hosts(host: str, extra: list[str] | tuple[str, ...] = ()) -> frozenset[str]:
    """The Host names the dashboard answers: loopback names, the bind address and any --allow-host names. A
    wildcard bind (0.0.0.0, ::) is no Host anyone types, so it adds nothing: LAN names come from
    --allow-host."""
    names = {"127.0.0.1", "localhost", "::1", *(n.strip().lower().strip("[]") for n in extra if n.strip())}
    if host not in ("0.0.0.0", "::", ""):
        names.add(host.lower().strip("[]"))
    return frozenset(names)
