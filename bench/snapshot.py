"""A canonical dump of a store and of every dashboard JSON answer over it, for
before/after proofs of a refactor.

    python bench/snapshot.py DATA_DIR OUT.json

Ids, times, pids and paths are left out (they differ between two runs of the same code); every other column of
every table, and every GET endpoint's JSON (the run, lineage, history, compare, each attempt, diff and cell,
the after-room pages), is written sorted, so `diff` of two dumps shows what a change altered.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VOLATILE = re.compile(r"(^|_)(id|ids|at|pid|path|dir|time|times|ms|seconds|elapsed|started|finished|created|"
                      r"updated|host|node|wall|duration|token|mtime|ts)($|_)|(_s$)|"
                      r"workspace|ended|begun|commit")
SKIP_TABLES = {"sqlite_sequence", "_migrations", "schema_migrations", "schema_version", "heartbeats",
               "processes"}


def volatile(key: str) -> bool:
    return bool(VOLATILE.search(key.lower()))


def scrub(value):
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in sorted(value.items()) if not volatile(k)}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        value = re.sub(r"/(tmp|work|root)/[^\s\"']*", "<path>", value)
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "<time>", value)
    if isinstance(value, float):
        return round(value, 12)
    return value


def tables(db: Path) -> dict:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out = {}
    for (name,) in con.execute("select name from sqlite_master where type='table' order by name"):
        if name in SKIP_TABLES or name.startswith("_"):
            continue
        rows = [scrub(dict(r)) for r in con.execute(f'select * from "{name}"')]
        out[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


async def api(data_dir: Path) -> dict:
    from aiohttp.test_utils import TestClient, TestServer

    from mutator.server.app import create_app

    con = sqlite3.connect(data_dir / "mutator.db")
    run_ids = [r for (r,) in con.execute("select id from runs order by id")]
    attempts = [a for (a,) in con.execute("select id from attempts order by id")]
    # cell ids follow completion order (concurrent cells): name each by what it is instead
    cells = {c: f"{key}/{task}/{rep}" for c, key, task, rep in con.execute(
        "select c.id, e.key, c.task_id, c.replicate from cells c "
        "join evaluations e on e.id = c.evaluation_id")}
    skills = sorted({s for (s,) in con.execute("select skill_name from runs")})
    urls = ["/api/meta", "/api/skills", "/api/runs", "/api/proposals", "/api/health-checks", "/api/spend",
            "/api/triggers"]
    for rid in run_ids:
        urls += [f"/api/runs/{rid}", f"/api/runs/{rid}/lineage", f"/api/spend?run={rid}"]
    urls += [f"/api/history?skill={s}" for s in skills]
    if len(run_ids) >= 2:
        urls += [f"/api/compare?runs={','.join(run_ids[:2])}&split={split}" for split in ("val", "train")]
    for a in attempts:
        urls += [f"/api/attempts/{a}", f"/api/attempts/{a}/diff"]
    out = {}
    client = TestClient(TestServer(create_app(data_dir=data_dir)))
    await client.start_server()
    try:
        for url in urls:
            response = await client.get(url)
            body = await response.text()
            try:
                out[url] = {"status": response.status, "json": scrub(json.loads(body))}
            except ValueError:
                out[url] = {"status": response.status, "text": body[:200]}
        named = {}
        for c, name in cells.items():
            response = await client.get(f"/api/cells/{c}")
            named[f"/api/cells/{name}"] = {"status": response.status, "json": scrub(await response.json())}
    finally:
        await client.close()
    # the url itself holds ids: key by position so two stores with other ids still line up
    keyed = {re.sub(r"\d+", "N", url) + f" #{i}": v for i, (url, v) in enumerate(out.items())}
    return {**keyed, **dict(sorted(named.items()))}


def main() -> None:
    data_dir, target = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    dump = {"tables": tables(data_dir / "mutator.db"), "api": asyncio.run(api(data_dir))}
    target.write_text(json.dumps(dump, indent=1, sort_keys=True, default=str))
    print(f"{target}: {len(dump['tables'])} tables, {len(dump['api'])} responses")


if __name__ == "__main__":
    main()
