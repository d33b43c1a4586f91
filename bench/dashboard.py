#!/usr/bin/env python3
"""Dashboard latency on a synthetic store of 1,000 attempts / 100,000 cells.

Prints each endpoint's p50/p95 over HTTP (in-process aiohttp server, real sockets) next to the bare
SQL it runs on the same read-only connection, and the ratio. Goal: p95 <= 50 ms and <= 3x bare SQL.
Usage: python bench/dashboard.py [--attempts 1000] [--cells-per-eval 100] [--repeat 40]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from mutator import server_queries as Q  # noqa: E402
from mutator.db import connect, connect_readonly, dumps  # noqa: E402
from mutator.server import create_app  # noqa: E402

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


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def http_times(client: TestClient, path: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        response = await client.get(path)
        await response.read()
        assert response.status == 200, (path, response.status)
        out.append((time.perf_counter() - t0) * 1000)
    return out


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
              f"tests (built in {time.perf_counter() - t0:.1f} s)\n")
        run = run_ids[0]
        attempt = Q.one(ro, "select id, val_evaluation_id from attempts where run_id = ? and round = 250", [run])
        ev = attempt["val_evaluation_id"]
        cell = Q.one(ro, "select id from cells where evaluation_id = ? limit 1", [ev])["id"]
        app = create_app(data_dir=data_dir, project_root=Path(tmp), token="bench")
        bare = {
            "/api/runs": lambda: Q.q(ro, f"select {Q.RUN_LIST} from runs where skill_name = ?", ["bench-skill"]),
            f"/api/runs/{run}": lambda: (
                Q.q(ro, "select a.round, a.sibling, a.verdict, a.composite, t.eval, t.cost, t.steps from attempts a "
                        "left join evaluations t on t.id = a.train_evaluation_id where a.run_id = ? "
                        "order by a.round, a.sibling", [run]),
                Q.q(ro, f"select {Q.ATTEMPT_LIST} from attempts where run_id = ? and round >= ? order by round, "
                        "sibling", [run, args.attempts // 2 - 60]),
                Q.q(ro, f"select {Q.EVAL_COLS} from evaluations where id in (select val_evaluation_id from attempts "
                        "where run_id = ? and round >= ?)", [run, args.attempts // 2 - 60])),
            f"/api/runs/{run}/lineage": lambda: Q.q(
                ro, "select id, round, sibling, parent_hash, genome_hash, verdict, status, summary, composite, delta "
                    "from attempts where run_id = ? order by round, sibling", [run]),
            "/api/history": lambda: [Q.q(ro, "select a.id, a.round, a.composite, t.eval from attempts a left join "
                                             "evaluations t on t.id = a.train_evaluation_id where a.run_id = ?", [r])
                                     for r in run_ids],
            f"/api/attempts/{attempt['id']}": lambda: (
                Q.q(ro, "select * from cells where evaluation_id = ?", [ev]),
                Q.q(ro, "select c.task_id, t.name, avg(t.score) from tests t join cells c on c.id = t.cell_id "
                        "where c.evaluation_id = ? group by c.task_id, t.name", [ev])),
            f"/api/cells/{cell}": lambda: (Q.q(ro, "select * from cells where id = ?", [cell]),
                                           Q.q(ro, "select name, score from tests where cell_id = ?", [cell])),
        }
        params = {"/api/runs": "&skill=bench-skill", "/api/history": "&skill=bench-skill"}
        async with TestClient(TestServer(app)) as client:
            store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
            rows = []
            for path, sql in bare.items():
                url = f"{path}?store={store}{params.get(path, '')}"
                await http_times(client, url, 3)  # warm the page cache and the connection
                http = await http_times(client, url, args.repeat)
                raw = timed(sql, args.repeat)
                rows.append((path.split("?")[0], pct(http, 50), pct(http, 95), pct(raw, 50), pct(raw, 95)))
        print(f"{'endpoint':34} {'p50 ms':>8} {'p95 ms':>8} │ {'SQL p50':>8} {'SQL p95':>8} │ {'p95 ratio':>9}  goal")
        for path, p50, p95, s50, s95 in rows:
            ratio = p95 / s95 if s95 else float("inf")
            verdict = "ok" if p95 <= 50 and ratio <= 3 else ("ok (≤50 ms)" if p95 <= 50 else "SLOW")
            print(f"{path:34} {p50:8.2f} {p95:8.2f} │ {s50:8.2f} {s95:8.2f} │ {ratio:8.1f}×  {verdict}")
        print("\nHTTP times include aiohttp, JSON encoding and a loopback socket; the ratio is against the SQL "
              "statements the endpoint runs, on the same read-only connection.")


if __name__ == "__main__":
    asyncio.run(main())
