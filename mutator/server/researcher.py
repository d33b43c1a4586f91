"""Dashboard API for the researcher's views: the attempts table (JSON and CSV) of a run or of every run of a
skill, a run's per-task gate deltas (task x attempt), what the mutator saw, and a run's or an attempt's name,
tags and note.

Read-only like the rest of the server: notes are written by `run.py --annotate`, started as a separate process
by a token-guarded, same-origin POST (the server never writes the store itself).
"""

from __future__ import annotations

import asyncio
import re
import sys

from aiohttp import web

from mutator.config import ROOT
from mutator.server import attempts_view, gate_view, mutator_view
from mutator.server import common as s
from mutator.store.notes import LIMITS
from mutator.store.queries import runs as stored_runs

TARGET = re.compile(r"^((run|aa)-[0-9a-f]{6,64}|[0-9]{1,12})$")


def _scope(request: web.Request) -> dict:
    run_id, skill = request.query.get("run") or None, request.query.get("skill") or None
    if (run_id is None) == (skill is None):
        raise s.fail(400, "give one of run=<run id> or skill=<skill name>")
    if run_id is not None and not s.RUN_ID.match(run_id):
        raise s.fail(400, "run: expected run-<hex> or aa-<hex> (an A/A run)")
    if skill is not None and not s.SKILL.match(skill):
        raise s.fail(400, "skill: expected a skill name")
    return {"run_id": run_id, "skill": skill}


async def attempts(request: web.Request) -> web.Response:
    """Every attempt of `run` (or of every run of `skill`) as the table's rows; `format=csv` downloads
    them."""
    store = s.store_of(request)
    scope = _scope(request)
    kind = request.query.get("format", "json")
    if kind not in ("json", "csv"):
        raise s.fail(400, "format: json or csv")
    key, cached = s.hit(request, store)
    if kind == "json" and cached:
        return cached
    if scope["run_id"] and not stored_runs.exists(s.db_of(request, store), scope["run_id"]):
        raise s.fail(404, f"no such run: {scope['run_id']}")   # as /api/runs/<id>, never an empty table
    rows = attempts_view.attempts(s.db_of(request, store), **scope)
    if kind == "csv":
        name = scope["run_id"] or scope["skill"]
        disposition = f'attachment; filename="attempts-{name}.csv"'
        return web.Response(text=attempts_view.to_csv(rows), content_type="text/csv", headers={
            "Cache-Control": "no-store", "Content-Disposition": disposition})
    return s.remember(request, key, {"columns": attempts_view.COLUMNS, "rows": rows})


async def annotate(request: web.Request) -> web.Response:
    """{store, target (a run id or an attempt id), name?, tags?, note?} -> `run.py --annotate` as a child
    process; the page sees the new notes when the store changes."""
    body = await s.read_body(request)
    store = s.store_in(request, body)
    target = str(body.get("target", ""))
    if not TARGET.match(target):
        raise s.fail(400, "target: a run id (run-<hex> or aa-<hex>) or an attempt id (a number)")
    argv = [sys.executable, str(ROOT / "run.py"), "--data-dir", str(store.data_dir), "--annotate", target]
    for field, limit in LIMITS.items():
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, str) or len(value) > limit or "\x00" in value:
            raise s.fail(400, f"{field}: text of at most {limit} characters")
        argv.append(f"--{field}={value}")   # one token: a value starting with '-' is never read as a flag
    return s.ok({"process": request.app[s.CHILDREN].spawn("annotate", argv).to_json()})


async def mutator(request: web.Request) -> web.Response:
    """What the mutator saw for an attempt (mutator/server/mutator_view.py); `file=` one staged file's
    text."""
    store = s.store_of(request)
    key, cached = s.hit(request, store)
    if cached:
        return cached
    found = await asyncio.to_thread(mutator_view.view, store, s.db_of(request, store),
                                    int(request.match_info["id"]), request.query.get("file") or None)
    if found is None:
        raise s.fail(404, "no such attempt")
    return s.remember(request, key, found, volatile=True)   # a mutation in progress still writes its stream


async def heatmap(request: web.Request) -> web.Response:
    """A run's per-task gate deltas, task x attempt (History's heatmap)."""
    store = s.store_of(request)
    run_id = request.match_info["run_id"]
    if not s.RUN_ID.match(run_id):
        raise s.fail(400, "run id: expected run-<hex> or aa-<hex> (an A/A run)")
    key, cached = s.hit(request, store)
    return cached or s.remember(request, key, gate_view.heatmap(s.db_of(request, store), run_id))


def register(app: web.Application) -> None:
    app.router.add_routes([web.get("/api/attempts", attempts), web.post("/api/notes", annotate),
                           web.get(r"/api/attempts/{id:[0-9]{1,12}}/mutator", mutator),
                           web.get("/api/runs/{run_id}/task-deltas", heatmap)])
