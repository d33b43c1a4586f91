"""Dashboard API for after the run: proposals (list, detail, accept/reject), the watch's ticks, health checks,
spend.

Read-only like the rest of the server: accept and reject start `run.py --accept/--reject` as separate
processes through the same token-guarded, same-origin POSTs as a launch, and only ever deploy into the
folder recorded on the proposal (a request never passes a path).
"""

from __future__ import annotations

import sys
from pathlib import Path

from aiohttp import web

from mutator.after import health_view, proposals, spend
from mutator.config import ROOT
from mutator.server import common as s
from mutator.server import queries as Q
from mutator.store.queries import testruns, watch
from mutator.store.queries.rows import has_table, loads

NOTE_MAX = 500


def latest_tests(db, found: list[dict]) -> list[dict]:
    """A proposal's `test` was copied when it was made; a test run since then (the usual order: the run ends,
    proposes, then you test it) must show, so each proposal gets its champion's newest finished test run."""
    for proposal in found:
        newest = testruns.newest_done(db, proposal["run_id"], proposal["genome_hash"])
        if newest and (proposal.get("test") or {}).get("test_run") != newest["id"]:
            proposal["test"] = {"suite": newest["suite"], "composite": newest["composite"],
                                "eval": newest["eval"], "cost": newest["cost"], "steps": newest["steps"],
                                "test_run": newest["id"],
                                "report": loads(newest["report"], {}) or {}}
    return found


def demo_seed(target_dir: str | None) -> bool:
    """A folder under the project's suites/ is a demo seed (e.g. suites/csv-clean, the default --skill-dir): a
    deploy there would overwrite the project's own demo, so the dashboard never offers it as a target."""
    if not target_dir:
        return False
    try:
        return Path(target_dir).resolve().is_relative_to((ROOT / "suites").resolve())
    except (OSError, ValueError):
        return False


def offered_targets(found: list[dict]) -> list[dict]:
    """`target_offered`: the folder Accept deploys into, or None when the page must not offer one."""
    for proposal in found:
        target = proposal.get("target_dir")
        proposal["target_offered"] = None if demo_seed(target) else target
    return found


async def list_proposals(request: web.Request) -> web.Response:
    store = s.store_of(request)
    key, cached = s.hit(request, store)
    if cached:
        return cached
    db = s.db_of(request, store)
    found = offered_targets(latest_tests(db, proposals.listing(db))) if has_table(db, "proposals") else []
    return s.remember(request, key, found)


def _proposal(request: web.Request, store) -> dict:
    db = s.db_of(request, store)
    if not has_table(db, "proposals"):
        raise s.fail(404, "no proposals in this store yet")
    try:
        return offered_targets(latest_tests(db, [proposals.detail(db, int(request.match_info["id"]))]))[0]
    except proposals.ProposalError as err:
        raise s.fail(404, str(err)) from None


async def proposal(request: web.Request) -> web.Response:
    store = s.store_of(request)
    key, cached = s.hit(request, store)
    return cached or s.remember(request, key, _proposal(request, store))


async def _decide(request: web.Request, action: str) -> web.Response:
    body = await s.read_body(request)
    store = s.store_in(request, body)
    data_dir = store.data_dir
    found = _proposal(request, store)
    if found["status"] != "proposed":
        conflict = f"proposal {found['id']} is {found['status']}; only a proposed proposal can be {action}ed"
        raise web.HTTPConflict(text=f'{{"error": "{conflict}"}}', content_type="application/json")
    text = body.get("note" if action == "accept" else "reason") or ""
    if not isinstance(text, str) or len(text) > NOTE_MAX:
        raise s.fail(400, f"note/reason: text of at most {NOTE_MAX} characters")
    argv = [sys.executable, str(ROOT / "run.py"), "--data-dir", str(data_dir)]
    if action == "accept":
        if not found["target_dir"]:
            raise s.fail(400, f"proposal {found['id']} has no recorded skill folder; accept it with run.py "
                              f"--accept {found['id']} --to SKILL_DIR")
        if demo_seed(found["target_dir"]):
            raise s.fail(400, f"proposal {found['id']} would deploy into the demo's own seed folder "
                              f"({found['target_dir']}); deploy it elsewhere with run.py --accept "
                              f"{found['id']} --to SKILL_DIR")
        argv += ["--accept", str(found["id"]), "--to", found["target_dir"]]
        argv += ["--note", text] if text else []
    else:
        argv += ["--reject", str(found["id"])] + (["--reason", text] if text else [])
    child = request.app[s.CHILDREN].spawn(action, argv)
    return s.ok({"process": child.to_json()})


async def accept(request: web.Request) -> web.Response:
    return await _decide(request, "accept")


async def reject(request: web.Request) -> web.Response:
    return await _decide(request, "reject")


TRIGGERS_SHOWN = 50


async def triggers(request: web.Request) -> web.Response:
    """The watch's ticks (run.py --watch), newest first, with counts per outcome; [] for a store without
    them."""
    store = s.store_of(request)
    key, cached = s.hit(request, store)
    if cached:
        return cached
    db = s.db_of(request, store)
    found: dict = {"ticks": [], "counts": {}}
    if has_table(db, "triggers"):
        found["ticks"] = watch.ticks(db, TRIGGERS_SHOWN)
        found["counts"] = watch.outcome_counts(db)
        for tick in found["ticks"]:
            tick["suites_name"] = Path(tick["suites"]).name
    return s.remember(request, key, found)


async def health_checks(request: web.Request) -> web.Response:
    store = s.store_of(request)
    days = s.number(request, "days", 30, 1, health_view.MAX_DAYS, "days of checks shown")
    key, cached = s.hit(request, store)
    if cached:
        return cached
    found = health_view.summary(s.db_of(request, store), skill_dir=request.query.get("skill_dir") or None,
                                fingerprint=request.query.get("fingerprint") or None, days=days)
    return s.remember(request, key, found, volatile=True)  # "today" moves with the clock, not only the store


async def spend_view(request: web.Request) -> web.Response:
    store = s.store_of(request)
    key, cached = s.hit(request, store)
    if cached:
        return cached
    db = s.db_of(request, store)
    return s.remember(request, key, Q.shown_statuses(db, spend.view(db), "runs", "run"), volatile=True)


def register(app: web.Application) -> None:
    app.router.add_routes([
        web.get("/api/proposals", list_proposals), web.get(r"/api/proposals/{id:[0-9]{1,9}}", proposal),
        web.post(r"/api/proposals/{id:[0-9]{1,9}}/accept", accept),
        web.post(r"/api/proposals/{id:[0-9]{1,9}}/reject", reject),
        web.get("/api/health-checks", health_checks), web.get("/api/spend", spend_view),
        web.get("/api/triggers", triggers),
    ])
