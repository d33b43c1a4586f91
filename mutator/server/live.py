"""The live stream (Server-Sent Events): what moved in the watched stores, for one page (`store=`, `run=`) or
for every tab of a browser at once (`watch=`, through webpages/lib/liveworker.js, a SharedWorker): one
connection per browser, however many tabs."""

from __future__ import annotations

import asyncio
import json
import time

from aiohttp import web

from mutator.server import queries as Q
from mutator.server.cache import ResponseCache
from mutator.server.codewatch import CodeWatch
from mutator.server.common import CACHE, CHILDREN, RUN_ID, STOP, STORE_ID, STORES, fail, store_of

POLL_S = 1.0
LIVENESS_S = 2.0   # how often an open page's live stream re-reads which running runs are stale
MAX_WATCHED = 64   # store:run pairs one shared live stream follows (every tab of a browser)
STREAMS = web.AppKey("streams", list)   # [open live streams]: one per browser when its tabs share a worker
CODE = web.AppKey("code", CodeWatch)


def watch_param(request: web.Request) -> dict[str, list[str]]:
    """The live stream's subject: `watch=STORE:RUN,STORE:,...` (every tab of a browser, through its shared
    worker), else `store=` and `run=` (one page). {store id: [run ids]}; malformed: 400."""
    raw = request.query.get("watch")
    if raw is None:
        store = store_of(request)
        run_id = request.query.get("run") or None
        if run_id is not None and not RUN_ID.match(run_id):
            raise fail(400, "run: expected run-<hex> or aa-<hex>")
        return {store.id: [run_id] if run_id else []}
    pairs = [p for p in raw.split(",") if p]
    if not 1 <= len(pairs) <= MAX_WATCHED:
        raise fail(400, f"watch: 1 to {MAX_WATCHED} STORE:RUN pairs, comma-separated")
    out: dict[str, list[str]] = {}
    for pair in pairs:
        sid, _, run_id = pair.partition(":")
        if not STORE_ID.match(sid) or (run_id and not RUN_ID.match(run_id)):
            raise fail(400, "watch: expected STORE:RUN pairs (a 10-hex store id, run-<hex> or aa-<hex> or "
                            "nothing)")
        runs = out.setdefault(sid, [])
        if run_id and run_id not in runs:
            runs.append(run_id)
    return out


def forget_the_living(cache: ResponseCache, before: dict, after: dict) -> None:
    """Before the pages hear that a store moved, drop its volatile cached responses: when only liveness moved
    (a writer died, no write), an entry read a moment before the death would otherwise say RUNNING for up to
    its time to live, to every tab refetching on this very event, and no later event would correct it. The
    handlers and this loop share one thread, so nothing read before the death can be stored after the drop."""
    for sid, now in after.items():
        if sid in before and before[sid] != now:
            cache.drop_volatile(sid)


async def events(request: web.Request) -> web.StreamResponse:
    """Server-Sent Events: one `change` event whenever a watched store's data_version, the code fingerprint
    or the dashboard's children move (checked every second; one PRAGMA per store per tick), a comment line as
    heartbeat. Each event carries signatures of the store's run list and of the runs the pages show, read
    when the store changed and every LIVENESS_S (they hold which running runs are stale: a dead writer of
    this machine is stale at once, mutator/store/liveness.py), so a page refetches only what moved.
    `store=`/`run=` (one page): {version, runs, run, ...}; `watch=` (every tab of a browser, one stream):
    {stores: {id: {version, runs, run: {id: digest}}}, ...}, an unknown store left out."""
    shared = "watch" in request.query
    watch = watch_param(request)
    stores, stop, code = request.app[STORES], request.app[STOP], request.app[CODE]
    found = {sid: store for sid in watch if (store := stores.get(sid)) is not None}
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
    await response.prepare(request)
    request.app[STREAMS][0] += 1
    last: tuple | None = None
    versions: dict = {}
    signatures: dict = {}
    beat = checked = time.monotonic()
    try:
        while not stop.is_set():
            now_versions = {sid: stores.data_version(store) for sid, store in found.items()}
            if now_versions != versions or time.monotonic() - checked >= LIVENESS_S:
                fresh = {sid: Q.watched(stores.db(store), watch[sid]) for sid, store in found.items()}
                forget_the_living(request.app[CACHE], signatures, fresh)
                signatures, checked = fresh, time.monotonic()
            versions = now_versions
            now = (code.stale, len(request.app[CHILDREN].items), json.dumps([versions, signatures]))
            if now != last:
                if shared:
                    body = {"stores": {sid: {"version": versions[sid], **signatures[sid]} for sid in found}}
                else:
                    sid, run_ids = next(iter(watch.items()))
                    body = {"version": versions[sid], "runs": signatures[sid]["runs"],
                            **({"run": signatures[sid]["run"][run_ids[0]]} if run_ids else {})}
                data = json.dumps({**body, "code_stale": now[0], "children": now[1], "at": time.time()})
                await response.write(f"event: change\ndata: {data}\n\n".encode())
                last = now
            elif time.monotonic() - beat > 15:
                await response.write(b": keep-alive\n\n")
                beat = time.monotonic()
            try:
                await asyncio.wait_for(stop.wait(), POLL_S)
            except TimeoutError:
                pass
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        request.app[STREAMS][0] -= 1
    return response


