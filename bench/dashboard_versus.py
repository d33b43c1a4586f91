"""Old against new dashboard, interleaved in one run (python bench/dashboard.py --versus REV).

The code at REV (`git archive` of this checkout's repository, into a temporary folder) and this checkout each
serve the same store from their own process. Round after round, each API request and each page load is made
once to one and once to the other, the order swapped every round, so a machine loaded by other work weighs on
both alike and the ratio new / old is the figure to read (absolute times move with the load; both are printed
with the load average before and after).

Per API endpoint: the server process's CPU time of one cold request (a writer commits before each, so the
response cache misses), read from /proc/PID/task/*/schedstat (nanoseconds, every thread of the server).
Per page: the first render in Chromium (a fresh browser context each load: navigation start to the page's
main content drawn) and the server CPU that load cost.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVE = """
import asyncio, sys
from pathlib import Path
from aiohttp import web
from mutator.server.app import create_app

async def main():
    app = create_app(data_dir=Path(sys.argv[1]), project_root=Path(sys.argv[2]), token="bench")
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]


def checkout(rev: str, into: Path) -> Path:
    """The files of `rev` (this checkout's repository) under `into`, as `git archive` gives them."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


class Served:
    """One version's dashboard in its own process (its tree first on the path)."""

    def __init__(self, name: str, tree: Path, data_dir: Path) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen([sys.executable, "-c", SERVE, str(data_dir), str(tree)], cwd=tree,
                                     env=env, stdout=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"
        self.store = self.get("/api/meta")["stores"][0]["id"]

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=60) as response:
            return json.loads(response.read())

    def cpu_ns(self) -> int:
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass   # a thread that ended between the listing and the read
        return total

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def endpoints(ids: dict, attempt: int, cell: int) -> list[str]:
    run, aa = ids["population"], ids["aa"]
    runs = f"{ids['greedy']},{ids['branching']},{ids['population']}"
    return ["/api/runs?skill=bench-skill", f"/api/runs/{run}", f"/api/runs/{aa}", f"/api/runs/{run}/lineage",
            "/api/history?skill=bench-skill", f"/api/compare?runs={runs}", f"/api/attempts/{attempt}",
            f"/api/attempts?run={run}", "/api/attempts?skill=bench-skill", f"/api/cells/{cell}", "/api/spend"]


def pages(ids: dict, attempt: int) -> dict[str, tuple[str, str]]:
    """{page: (hash route, what shows it drawn: a selector, or a JS function)}."""
    run = ids["population"]
    runs = f"{ids['greedy']},{ids['branching']},{ids['population']}"
    return {"home": (f"#/home?run={run}", "#run-head"),
            # no attempt in the link: 050b7df's code opened the run's newest attempt whatever the link named,
            # so both versions are asked for that one (an evaluated attempt's own cost: the API rows)
            "round": (f"#/round?run={run}", "#round-verdict"),
            "lineage": (f"#/lineage?run={run}", "#chain"),
            "attempts": (f"#/attempts?run={run}", "#attempts-table tbody tr"),
            "history": (f"#/history?run={run}",
                        f"() => document.querySelectorAll('.regime .uplot').length >= {len(ids)}"),
            "compare": (f"#/compare?run={run}&runs={runs}", "#compare-curve .uplot"),
            "cost": ("#/cost", "#cost-daily .uplot"),
            "proposals": ("#/proposals", "#proposals, #proposals-empty")}


def with_store(path: str, store: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}store={store}"


def p50(values: list[float]) -> float:
    return statistics.median(values)


def versus(rev: str, data_dir: Path, ids: dict, *, rounds: int, repeat: int) -> None:
    from playwright.sync_api import sync_playwright

    from mutator.store.db import connect, connect_readonly
    writer = connect(data_dir / "mutator.db").conn

    def change() -> None:   # what the loop does between requests: a commit, so both response caches miss
        with writer:
            writer.execute("update runs set updated_at = ? where id = ?", [time.time(), ids["greedy"]])

    ro = connect_readonly(data_dir / "mutator.db")
    run = ids["population"]
    top = ro.execute("select max(round) from attempts where run_id = ?", [run]).fetchone()[0]
    attempt, ev = ro.execute("select id, val_evaluation_id from attempts where run_id = ? and round = ? "
                             "and val_evaluation_id is not null order by sibling limit 1",
                             [run, top // 2]).fetchone()
    cell = ro.execute("select id from cells where evaluation_id = ? limit 1", [ev]).fetchone()[0]
    ro.close()
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = checkout(rev, Path(tmp) / "old")
        served = [Served(f"old ({rev})", old_tree, data_dir), Served("new (this checkout)", ROOT, data_dir)]
        try:
            api = {p: ([], []) for p in endpoints(ids, attempt, cell)}
            shown = {k: ([], []) for k in pages(ids, attempt)}
            shown_cpu = {k: ([], []) for k in pages(ids, attempt)}
            for path in api:   # warm both: imports, SQLite's page cache, the first connection
                for s in served:
                    s.get(with_store(path, s.store))
            load_before = os.getloadavg()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                for rnd in range(rounds):
                    order = [0, 1] if rnd % 2 == 0 else [1, 0]
                    for path, figures in api.items():
                        for i in order:
                            s = served[i]
                            for _ in range(repeat):
                                change()
                                c0 = s.cpu_ns()
                                s.get(with_store(path, s.store))
                                figures[i].append((s.cpu_ns() - c0) / 1e6)
                    for name, (route, drawn) in pages(ids, attempt).items():
                        for i in order:
                            s = served[i]
                            context = browser.new_context(viewport={"width": 1400, "height": 1000})
                            page = context.new_page()
                            change()
                            c0, t0 = s.cpu_ns(), time.perf_counter()
                            page.goto(f"{s.url}/{route}")
                            if drawn.startswith("()"):
                                page.wait_for_function(drawn, timeout=60_000)
                            else:
                                page.wait_for_selector(drawn, timeout=60_000)
                            shown[name][i].append((time.perf_counter() - t0) * 1000)
                            shown_cpu[name][i].append((s.cpu_ns() - c0) / 1e6)
                            context.close()
                browser.close()
            load_after = os.getloadavg()
        finally:
            for s in served:
                s.stop()
            writer.close()
    print(f"old = {rev} (git archive), new = this checkout; {rounds} rounds, order swapped each round; "
          f"{repeat} cold requests per endpoint per round and version, 1 page load per page per round and "
          f"version.\nmachine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} / "
          f"{load_before[1]:.1f} / {load_before[2]:.1f} before, {load_after[0]:.1f} / {load_after[1]:.1f} / "
          f"{load_after[2]:.1f} after (1 / 5 / 15 min)\n")
    print(f"{'API endpoint (server CPU ms, cold)':44} {'old p50':>9} {'new p50':>9} {'new/old':>8}")
    for path, (old, new) in api.items():
        print(f"{path.split('?')[0] + ('?' + path.split('?')[1][:12] if '?' in path else ''):44} "
              f"{p50(old):9.2f} {p50(new):9.2f} {p50(new) / p50(old):8.2f}")
    print(f"\n{'page':12} {'first render ms':>26} {'new/old':>8} │ {'server CPU ms per load':>26} "
          f"{'new/old':>8}")
    print(f"{'':12} {'old p50':>12} {'new p50':>13} {'':>8} │ {'old p50':>12} {'new p50':>13}")
    for name, (old, new) in shown.items():
        cold, cnew = shown_cpu[name]
        print(f"{name:12} {p50(old):12.1f} {p50(new):13.1f} {p50(new) / p50(old):8.2f} │ "
              f"{p50(cold):12.1f} {p50(cnew):13.1f} {p50(cnew) / p50(cold):8.2f}")
