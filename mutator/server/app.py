"""The aiohttp dashboard server: a JSON API over the stores (read-only), webpages/ fresh from disk, live
updates.

It never writes a store and never talks to the loop: runs and test runs are started as separate `run.py`
processes by token-guarded, same-origin POSTs. No request reads outside a store's data dir.
"""

from __future__ import annotations

import asyncio
import hmac
import re
import secrets
import sqlite3
from dataclasses import replace
from pathlib import Path

from aiohttp import web

from eval.errors import SkillMutatorError
from mutator.config import ROOT
from mutator.server import compare
from mutator.server import queries as Q
from mutator.server.cache import ResponseCache
from mutator.server.codewatch import CodeWatch
from mutator.server.common import (
    ALLOWED_HOSTS,
    CACHE,
    CHILDREN,
    RUN_ID,
    SETTINGS,
    SKILL,
    STOP,
    STORE_ID,
    STORES,
    TOKEN,
    allowed_hosts,
    db_of,
    fail,
    hit,
    number,
    ok,
    read_body,
    remember,
    run_in_store,
    running,
    store_of,
)
from mutator.server.files import cell_files, genome_diff
from mutator.server.launch import (
    Children,
    LaunchError,
    argv_for_test,
    launch_argv,
    options,
    plan_estimate,
    settings,
)
from mutator.server.live import CODE, STREAMS, events
from mutator.server.stores import Stores, inside

APP_NAME = "skill-mutator-dashboard"
WEB_ROOT = ROOT / "webpages"
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css",
                 ".svg": "image/svg+xml", ".json": "application/json", ".png": "image/png",
                 ".ico": "image/x-icon", ".txt": "text/plain"}


# ---- middleware --------------------------------------------------------------------------------------
# Only the page's own files run: no inline script, no eval, no other origin. Styles come from the page's own
# CSS
# files (the SPA and uPlot colour things through the CSSOM, which a CSP does not block); `data:` images are
# the
# favicon placeholder.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def host_name(host: str | None) -> str:
    """The name part of a Host header, lower-cased: `[::1]:5210` -> `::1`, `Example.org:80` ->
    `example.org`."""
    host = (host or "").strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host

@web.middleware
async def guard(request: web.Request, handler):
    if host_name(request.host) not in request.app[ALLOWED_HOSTS]:  # refuse DNS-rebinding and unknown names
        raise fail(403, f"host {host_name(request.host)!r} not allowed; start the dashboard with "
                        "--allow-host NAME")
    if request.method == "POST":
        token = request.headers.get("X-SM-Token", "")
        if not hmac.compare_digest(token, request.app[TOKEN]):
            raise fail(403, "missing or wrong dashboard token; reload the page")
        site = request.headers.get("Sec-Fetch-Site")
        if site and site not in ("same-origin", "none"):
            raise fail(403, f"cross-site request refused (Sec-Fetch-Site: {site})")
        origin = request.headers.get("Origin")
        if origin and origin != f"{request.scheme}://{request.host}":
            raise fail(403, f"cross-origin request refused (Origin: {origin})")
        if request.content_type != "application/json":
            raise fail(415, "send application/json")
    try:
        response = await handler(request)
    except sqlite3.Error as err:
        return web.json_response({"error": f"store error: {err}"}, status=503)
    return response


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every response, errors and refusals included (on_response_prepare sees them all)."""
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "DENY")


# ---- pages -------------------------------------------------------------------------------------------
async def index(request: web.Request) -> web.Response:
    html = (WEB_ROOT / "index.html").read_text(encoding="utf-8")
    html = html.replace("__SM_TOKEN__", request.app[TOKEN])
    return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


async def static(request: web.Request) -> web.StreamResponse:
    parts = request.match_info["path"].split("/")
    if not all(SEGMENT.match(p) for p in parts):
        raise fail(404, "not found")
    path = inside(WEB_ROOT, WEB_ROOT.joinpath(*parts))
    if path is None or not path.is_file():
        raise fail(404, "not found")
    kind = CONTENT_TYPES.get(path.suffix, "application/octet-stream")
    return web.Response(body=path.read_bytes(), content_type=kind, headers={"Cache-Control": "no-store"})


# ---- API ---------------------------------------------------------------------------------------------
async def health(request: web.Request) -> web.Response:
    return ok({"app": APP_NAME, "code": request.app[CODE].started, "stale": request.app[CODE].stale,
               "cache": request.app[CACHE].stats(), "live_streams": request.app[STREAMS][0]})


async def meta(request: web.Request) -> web.Response:
    stores = request.app[STORES]
    found = stores.refresh()
    running = stores.running_store()
    return ok({"app": APP_NAME, "code_stale": request.app[CODE].stale,
               "stores": [{"id": s.id, "label": s.label, "path": str(s.data_dir)} for s in found],
               "running_store": running.id if running else None,
               "options": options(request.app[SETTINGS])})


async def skills(request: web.Request) -> web.Response:
    store = store_of(request)
    key, cached = hit(request, store)
    return cached or remember(request, key, Q.skills(db_of(request, store)))


def skill_param(request: web.Request) -> str | None:
    skill = request.query.get("skill") or None
    if skill is not None and not SKILL.match(skill):
        raise fail(400, "skill: expected a skill name")
    return skill


def run_param(request: web.Request) -> str:
    run_id = request.match_info["run_id"]
    if not RUN_ID.match(run_id):
        raise fail(400, "run id: expected run-<hex> or aa-<hex> (an A/A run)")
    return run_id


async def runs(request: web.Request) -> web.Response:
    store = store_of(request)
    skill = skill_param(request)
    key, cached = hit(request, store)
    if cached:
        return cached
    found = Q.runs(db_of(request, store), skill)
    return remember(request, key, found, volatile=running(*found))


async def run(request: web.Request) -> web.Response:
    store = store_of(request)
    window = number(request, "window", 60, 0, 100_000, "rounds shown (0 = all)")
    run_id = run_param(request)
    key, cached = hit(request, store)
    if cached:
        return cached
    found = Q.run_detail(db_of(request, store), run_id, store.data_dir, window=window,
                         val_query_warn=request.app[SETTINGS].val_query_warn)
    if found is None:
        raise fail(404, "no such run")
    return remember(request, key, found, volatile=running(found["run"], *found["tests"]))


async def lineage(request: web.Request) -> web.Response:
    store = store_of(request)
    run_id = run_param(request)
    key, cached = hit(request, store)
    if cached:
        return cached
    found = Q.lineage(db_of(request, store), run_id)
    if found is None:
        raise fail(404, "no such run")
    return remember(request, key, found)


async def history(request: web.Request) -> web.Response:
    store = store_of(request)
    skill = skill_param(request)
    if skill is None:
        raise fail(400, "skill: required")
    key, cached = hit(request, store)
    if cached:
        return cached
    found = Q.history(db_of(request, store), skill)
    return remember(request, key, found, volatile=running(*(regime["run"] for regime in found)))


async def compare_runs(request: web.Request) -> web.Response:
    store = store_of(request)
    run_ids = [r for r in request.query.get("runs", "").split(",") if r]
    if not 2 <= len(run_ids) <= compare.MAX_RUNS or len(set(run_ids)) != len(run_ids):
        raise fail(400, f"runs: 2 to {compare.MAX_RUNS} different run ids, comma-separated")
    if not all(RUN_ID.match(r) for r in run_ids):
        raise fail(400, "runs: expected run-<hex> or aa-<hex> ids")
    key, cached = hit(request, store)
    if cached:
        return cached
    found = compare.compare(db_of(request, store), run_ids)
    if found is None:
        raise fail(404, "no such run")
    return remember(request, key, found, volatile=running(*(v["run"] for v in found["runs"])))


async def attempt(request: web.Request) -> web.Response:
    store = store_of(request)
    split = request.query.get("split", "val")
    if split not in ("val", "train"):
        raise fail(400, "split: val or train")
    key, cached = hit(request, store)
    if cached:
        return cached
    found = Q.attempt_detail(db_of(request, store), int(request.match_info["id"]), split, store.data_dir)
    if found is None:
        raise fail(404, "no such attempt")
    return remember(request, key, found, volatile=running(found["run"]))


async def attempt_diff(request: web.Request) -> web.Response:
    store = store_of(request)
    key, cached = hit(request, store)
    if cached:
        return cached
    found = await asyncio.to_thread(genome_diff, store, db_of(request, store), int(request.match_info["id"]))
    if found is None:
        raise fail(404, "no such attempt")
    return remember(request, key, found)


async def cell(request: web.Request) -> web.Response:
    store = store_of(request)
    key, cached = hit(request, store)
    if cached:
        return cached
    found = Q.cell_row(db_of(request, store), int(request.match_info["id"]))
    if found is None:
        raise fail(404, "no such cell")
    return remember(request, key, cell_files(store, found))  # a cell row is written once its files are final


async def unknown_api(request: web.Request) -> web.Response:
    """Any /api/ path no route matched (an attempt id of 20 digits, a typo): a JSON 404 like every other."""
    raise fail(404, f"no such API path: {request.path[:200]}")


async def processes(request: web.Request) -> web.Response:
    return ok(request.app[CHILDREN].to_json())


def target_dir(request: web.Request, body: dict) -> Path:
    sid = body.get("store")
    if sid in (None, ""):
        return request.app[SETTINGS].data_dir
    if not isinstance(sid, str) or not STORE_ID.match(sid):
        raise fail(400, "store: expected the 10-hex id from /api/meta")
    store = request.app[STORES].get(sid)
    if store is None:
        raise fail(404, f"no store {sid!r}")
    return store.data_dir


async def _spawn(request: web.Request, kind: str, build_argv, *, check=None) -> tuple[dict, Path]:
    """Validate the POST body into a run.py argv (400 when it does not fit, `check`: 404) and start it as a
    child."""
    body = await read_body(request)
    data_dir = target_dir(request, body)
    try:
        argv = build_argv(body, request.app[SETTINGS], data_dir)
    except LaunchError as err:
        raise fail(400, str(err)) from None
    (check or (lambda body, data_dir: None))(body, data_dir)
    return request.app[CHILDREN].spawn(kind, argv).to_json(), data_dir


async def launch(request: web.Request) -> web.Response:
    process, data_dir = await _spawn(request, "run", launch_argv)
    return ok({"process": process, "data_dir": str(data_dir)})


async def launch_plan(request: web.Request) -> web.Response:
    """The launch drawer's cost estimate (what `run.py --plan` says for the same request): shown in the
    confirmation a real run needs. Spends nothing; a POST only to share the launch body and its checks."""
    body = await read_body(request)
    data_dir = target_dir(request, body)
    try:
        estimate = await asyncio.to_thread(plan_estimate, body, request.app[SETTINGS], data_dir)
    # LaunchError, and a suite that does not load (SuiteError names its file)
    except SkillMutatorError as err:
        raise fail(400, str(err)) from None
    return ok(estimate)


async def test_run(request: web.Request) -> web.Response:
    process, _ = await _spawn(request, "test", argv_for_test, check=run_in_store)
    return ok({"process": process})


# ---- the app -----------------------------------------------------------------------------------------
async def _startup(app: web.Application) -> None:
    app[STOP] = asyncio.Event()


async def _shutdown(app: web.Application) -> None:
    app[STOP].set()  # live streams end their loops; the graceful-shutdown period lets them finish


async def _cleanup(app: web.Application) -> None:
    app[STORES].close()


def create_app(*, data_dir: Path | None = None, config_file: Path | None = None, project_root: Path = ROOT,
               host: str = "127.0.0.1", token: str | None = None,
               allow_hosts: list[str] | tuple[str, ...] = ()) -> web.Application:
    s = settings(config_file)
    # an explicit data dir replaces the configured one
    extra = [Path(data_dir)] if data_dir else [s.data_dir]
    app = web.Application(middlewares=[guard])
    app[SETTINGS] = s if data_dir is None else replace(s, data_dir=Path(data_dir).resolve())
    app[STORES] = Stores(project_root, extra)
    app[TOKEN] = token or secrets.token_urlsafe(24)
    app[CHILDREN] = Children()
    app[CACHE] = ResponseCache()
    app[STREAMS] = [0]
    app[ALLOWED_HOSTS] = allowed_hosts(host, allow_hosts)   # never empty: a Host check is always on
    app.on_response_prepare.append(security_headers)
    app.on_startup.append(_startup)
    app.on_shutdown.append(_shutdown)
    app.on_cleanup.append(_cleanup)
    app.add_routes([
        web.get("/", index), web.get("/index.html", index),
        web.get("/api/health", health), web.get("/api/meta", meta), web.get("/api/skills", skills),
        web.get("/api/runs", runs), web.get("/api/runs/{run_id}", run),
        web.get("/api/runs/{run_id}/lineage", lineage), web.get("/api/history", history),
        web.get("/api/compare", compare_runs),
        web.get(r"/api/attempts/{id:[0-9]{1,12}}", attempt),
        web.get(r"/api/attempts/{id:[0-9]{1,12}}/diff", attempt_diff),
        web.get(r"/api/cells/{id:[0-9]{1,12}}", cell), web.get("/api/processes", processes),
        web.get("/api/events", events), web.post("/api/launch", launch),
        web.post("/api/launch/plan", launch_plan), web.post("/api/test-run", test_run),
        web.get("/{path:(?!api/).+}", static),
    ])
    from mutator.server import after, researcher  # proposals, checks, spend; the researcher's views
    after.register(app)
    researcher.register(app)
    app.router.add_get("/api/{tail:.*}", unknown_api)   # last: an API path no route took
    app[CODE] = CodeWatch()  # last: it fingerprints every module imported so far
    return app


def serve(*, host: str, port: int, data_dir: Path | None, config_file: Path | None = None,
          allow_hosts: list[str] | tuple[str, ...] = ()) -> None:
    app = create_app(data_dir=data_dir, config_file=config_file, host=host, allow_hosts=allow_hosts)
    web.run_app(app, host=host, port=port, shutdown_timeout=3,
                print=lambda _: print(f"Dashboard: http://{host}:{port}/  (Ctrl+C to stop)", flush=True))
