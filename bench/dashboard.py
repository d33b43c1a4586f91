#!/usr/bin/env python3
"""Dashboard latency on a synthetic store of 1,000 attempts / 100,000 cells.

Per endpoint, side by side on one read-only connection: the bare SQL it runs, the query function
(SQL + Python assembly, no HTTP), and HTTP (in-process aiohttp server, real loopback sockets) both
COLD (a writer commits before every request, so the response cache misses, as on the first request
after the loop writes) and WARM (nothing changed: a cache hit). CPU ms beside wall ms separates our
work from scheduling delay on a loaded machine. Goal: p95 <= 50 ms and <= 3x bare SQL.
Usage: python bench/dashboard.py [--attempts 1000] [--cells-per-eval 100] [--repeat 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from mutator.server import queries as Q  # noqa: E402
from mutator.server.app import create_app  # noqa: E402
from mutator.store.db import connect, connect_readonly, dumps  # noqa: E402

TESTS = ("parses", "headers", "rows", "amounts", "dates", "emails", "flags", "text")


def build(data_dir: Path, n_attempts: int, cells_per_eval: int, n_runs: int = 2) -> list[str]:
    """n_runs greedy runs of one skill; every attempt has a finished val evaluation of cells_per_eval cells."""
    rng = random.Random(0)
    db = connect(data_dir / "mutator.db")
    conn = db.conn
    tasks = [f"task-{i:02d}" for i in range(cells_per_eval // 4)]
    run_ids, cell_id = [], 0
    per_run = n_attempts // n_runs
    with conn:
        for r in range(n_runs):
            run_id = f"run-{r:012x}"
            run_ids.append(run_id)
            conn.execute("insert into runs (id, kind, status, strategy, skill_name, suite, val, model, replicates, "
                         "rounds_target, rounds_done, w_cost, w_steps, seed_cost, seed_steps, seed_val_cost, "
                         "seed_val_steps, incumbent_hash, seed_hash, config, created_at, updated_at) values "
                         "(?, 'evolve', 'finished', 'greedy', 'bench-skill', 'train', 'val', 'm', 4, ?, ?, 0.1, 0.02, "
                         "0.01, 5, 0.01, 5, ?, ?, '{}', ?, ?)",
                         [run_id, per_run - 1, per_run - 1, f"g{r}-{per_run - 1}", f"g{r}-0", time.time(), time.time()])
            parent = None
            for i in range(per_run):
                genome = f"g{r}-{i}"
                conn.execute("insert into genomes (hash, parent_hash, skill_name, created_at) values (?, ?, ?, ?)",
                             [genome, parent, "bench-skill", time.time()])
                ev_id = conn.execute(
                    "insert into evaluations (key, genome_hash, suite, split, status, n_cells, n_done, eval, cost, "
                    "steps, replicates) values (?, ?, 'val', 'val', 'done', ?, ?, ?, 0.01, 5, 4)",
                    [f"{r:04x}{i:020x}", genome, cells_per_eval, cells_per_eval, rng.random()]).lastrowid
                cells, tests = [], []
                for c in range(cells_per_eval):
                    cell_id += 1
                    cells.append((cell_id, ev_id, tasks[c // 4 % len(tasks)], c % 4, "ok", rng.random(), 0.01, 5,
                                  1000, 100, 1200))
                    tests += [(cell_id, name, rng.random()) for name in TESTS]
                conn.executemany("insert into cells (id, evaluation_id, task_id, replicate, status, score, cost_usd, "
                                 "steps, input_tokens, output_tokens, duration_ms) values (?,?,?,?,?,?,?,?,?,?,?)", cells)
                conn.executemany("insert into tests (cell_id, name, score) values (?, ?, ?)", tests)
                verdict = "SEED" if i == 0 else rng.choice(("KEEP", "REJECT", "REJECT", "CRITIC"))
                conn.execute(
                    "insert into attempts (run_id, round, sibling, parent_hash, genome_hash, status, verdict, summary, "
                    "reasoning, critic, gate, val_evaluation_id, composite, eval, cost, steps, delta, gate_threshold) "
                    "values (?, ?, 0, ?, ?, 'kept', ?, 'a change', 'because', '[]', ?, ?, ?, 0.5, 0.01, 5, 0.01, -0.02)",
                    [run_id, i, parent, genome, verdict, dumps({"s_r": 0.1, "n": 8}), ev_id, rng.random()])
                if verdict in ("SEED", "KEEP"):
                    parent = genome
    db.conn.close()
    return run_ids


def timed(fn, repeat: int, *, before=None) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for _ in range(repeat):
        if before:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - t0) * 1000)
    return wall, cpu


async def http_times(client: TestClient, path: str, repeat: int, *, before=None,
                     expect: str | None = None) -> tuple[list[float], list[float]]:
    """Wall and CPU ms of `repeat` GETs; `before()` runs untimed ahead of each (e.g. a writer's commit)."""
    wall, cpu = [], []
    for _ in range(repeat):
        if before:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        response = await client.get(path)
        await response.read()
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - t0) * 1000)
        assert response.status == 200, (path, response.status)
        if expect:
            assert response.headers.get("X-SM-Cache") == expect, (path, response.headers.get("X-SM-Cache"), expect)
    return wall, cpu


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1] if len(values) > 1 else values[0]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attempts", type=int, default=1000)
    ap.add_argument("--cells-per-eval", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        t0 = time.perf_counter()
        run_ids = build(data_dir, args.attempts, args.cells_per_eval)
        ro = connect_readonly(data_dir / "mutator.db")
        counts = {t: ro.execute(f"select count(*) from {t}").fetchone()[0] for t in ("attempts", "cells", "tests")}
        print(f"synthetic store: {counts['attempts']:,} attempts, {counts['cells']:,} cells, {counts['tests']:,} "
              f"tests (built in {time.perf_counter() - t0:.1f} s)")
        load = os.getloadavg()
        print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
              f"(1 / 5 / 15 min)\n")
        run = run_ids[0]
        attempt = Q.one(ro, "select id, val_evaluation_id from attempts where run_id = ? and round = ?",
                        [run, args.attempts // len(run_ids) // 2])
        ev = attempt["val_evaluation_id"]
        cell = Q.one(ro, "select id from cells where evaluation_id = ? limit 1", [ev])["id"]
        writer = connect(data_dir / "mutator.db").conn

        def change() -> None:  # what the loop does between requests: commit something
            with writer:
                writer.execute("update runs set updated_at = ? where id = ?", [time.time(), run_ids[-1]])

        app = create_app(data_dir=data_dir, project_root=Path(tmp), token="bench")
        low = args.attempts // len(run_ids) - 60
        bare = {
            "/api/runs": lambda: Q.q(ro, f"select {Q.RUN_LIST} from runs where skill_name = ?", ["bench-skill"]),
            f"/api/runs/{run}": lambda: (
                Q.q(ro, "select * from runs where id = ?", [run]),
                Q.q(ro, "select a.round, a.sibling, a.verdict, a.composite, t.eval, t.cost, t.steps from attempts a "
                        "left join evaluations t on t.id = a.train_evaluation_id where a.run_id = ? "
                        "order by a.round, a.sibling", [run]),
                Q.q(ro, f"select {Q.ATTEMPT_LIST} from attempts where run_id = ? and round >= ? order by round, "
                        "sibling", [run, low]),
                Q.q(ro, f"select {Q.EVAL_COLS} from evaluations where id in (select val_evaluation_id from attempts "
                        "where run_id = ? and round >= ?)", [run, low]),
                Q.q(ro, "select * from test_runs where run_id = ? order by id", [run])),
            f"/api/runs/{run}/lineage": lambda: (
                Q.q(ro, "select * from runs where id = ?", [run]),
                Q.q(ro, "select id, round, sibling, parent_hash, genome_hash, verdict, status, summary, composite, "
                        "delta from attempts where run_id = ? order by round, sibling", [run])),
            "/api/history": lambda: [
                Q.q(ro, "select a.id, a.round, a.sibling, a.verdict, a.composite, a.eval, a.cost, a.steps, t.eval, "
                        "t.cost, t.steps from attempts a left join evaluations t on t.id = a.train_evaluation_id "
                        "where a.run_id = ? order by a.round, a.sibling", [r]) for r in run_ids],
            f"/api/attempts/{attempt['id']}": lambda: (
                Q.q(ro, "select * from attempts where id = ?", [attempt["id"]]),
                Q.q(ro, "select * from cells where evaluation_id = ? order by task_id, replicate", [ev]),
                Q.q(ro, "select c.task_id, t.name, avg(t.score) from tests t join cells c on c.id = t.cell_id "
                        "where c.evaluation_id = ? group by c.task_id, t.name", [ev])),
            f"/api/cells/{cell}": lambda: (Q.q(ro, "select * from cells where id = ?", [cell]),
                                           Q.q(ro, "select name, score from tests where cell_id = ?", [cell])),
        }
        functions = {
            "/api/runs": lambda: Q.runs(ro, "bench-skill"),
            f"/api/runs/{run}": lambda: Q.run_detail(ro, run, data_dir),
            f"/api/runs/{run}/lineage": lambda: Q.lineage(ro, run),
            "/api/history": lambda: Q.history(ro, "bench-skill"),
            f"/api/attempts/{attempt['id']}": lambda: Q.attempt_detail(ro, attempt["id"], "val"),
            f"/api/cells/{cell}": lambda: Q.cell_row(ro, cell),
        }
        params = {"/api/runs": "&skill=bench-skill", "/api/history": "&skill=bench-skill"}
        async with TestClient(TestServer(app)) as client:
            store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
            await http_times(client, "/api/health", 5)
            floor = (await http_times(client, "/api/health", args.repeat))[0]
            rows = []
            for path, sql in bare.items():
                url = f"{path}?store={store}{params.get(path, '')}"
                await http_times(client, url, 3, before=change)  # warm the page cache and the connection
                cold, cold_cpu = await http_times(client, url, args.repeat, before=change, expect="miss")
                warm, _ = await http_times(client, url, args.repeat, expect="hit")
                raw = timed(sql, args.repeat, before=change)[0]  # after a commit too: SQLite's page cache is
                fn = timed(functions[path], args.repeat, before=change)[0]  # reset as on a cold request
                rows.append((path, raw, fn, cold, cold_cpu, warm))
            stats = (await (await client.get("/api/health")).json())["cache"]
        writer.close()
    f = "{:8.2f}"
    print(f"{'':34} {'bare SQL':>17} │ {'query fn':>8} │ {'HTTP cold (cache miss)':>32} │ {'HTTP warm (hit)':>17} │")
    print(f"{'endpoint':34} {'p50':>8} {'p95':>8} │ {'p50':>8} │ {'p50':>8} {'p95':>8} {'cpu p95':>8} "
          f"{'×SQL':>5} │ {'p50':>8} {'p95':>8} │ goal (cold)")
    print(f"{'/api/health (HTTP floor)':34} {'':>17} │ {'':>8} │ {f.format(pct(floor, 50))} "
          f"{f.format(pct(floor, 95))} {'':>8} {'':>5} │ {'':>17} │")
    for path, raw, fn, cold, cold_cpu, warm in rows:
        ratio = pct(cold, 95) / pct(raw, 95) if pct(raw, 95) else float("inf")
        fast, near = pct(cold, 95) <= 50, ratio <= 3
        verdict = ("ok" if fast and near else "≤50 ms, >3× SQL" if fast else "SLOW")
        if fast and not near and pct(raw, 95) < pct(floor, 95) and pct(cold, 95) <= 3 * pct(floor, 95):
            verdict += " (SQL under the HTTP floor)"
        print(f"{path:34} {f.format(pct(raw, 50))} {f.format(pct(raw, 95))} │ {f.format(pct(fn, 50))} │ "
              f"{f.format(pct(cold, 50))} {f.format(pct(cold, 95))} {f.format(pct(cold_cpu, 95))} {ratio:4.1f}× │ "
              f"{f.format(pct(warm, 50))} {f.format(pct(warm, 95))} │ {verdict}")
    print(f"\nms over {args.repeat} requests each. Cold: a writer commits before every request (excluded from the "
          "time), so PRAGMA data_version moves and the cache misses; bare SQL and the query function are timed the same way "
          "(a commit resets the reader's page cache); warm: unchanged store, cache hit. HTTP times "
          "include aiohttp (server and client, one process), JSON encoding and a loopback socket; cpu = process CPU "
          "time of the request (wall − cpu is time spent waiting for a CPU). ×SQL = cold p95 / bare-SQL p95 on the "
          f"same read-only connection. Cache after the run: {stats}.")


if __name__ == "__main__":
    asyncio.run(main())
