"""Cell throughput of the harness against raw spawning of the same agent + grader processes.

Usage: python bench/overhead.py [--sandbox none|bwrap] [--suite clean-train] [--replicates 4]
       [--concurrency 4] [--repeats 3] [--rounds 60] [--caching-model claude-sonnet-4-5]
       python bench/overhead.py --executor ray [--nodes 1,2,4] [--node-cpus 1]
The harness side runs `eval.evaluate.evaluate` (staging, launcher, watchdog, stream metrics, grading,
cell.json) with the fake build agent; the raw side stages the same inputs and runs the same two
processes per cell from a plain thread pool. With --sandbox bwrap the harness also runs under none,
so bwrap's cost is measured side by side. Prints cells/s (median of the repeats) and the ratios; with
bwrap also the launch cost alone (median wall ms of `true` bare vs through the launcher, run serially),
which a busy machine's noise blurs far less than whole-cell throughput does. Beside cells/s, the spawning
process's own CPU per cell (the harness parent against the raw thread pool),
which a busy machine blurs little.

The per-round line (--rounds N, 0 skips it): one dry greedy run of N rounds through bench/rounds.py: the CPU
of staging the mutator's evidence and of the tamper snapshots per round at rounds 1-5 and the last 6, the
bytes each round adds to workspaces/ and evidence/, and the harness's own CPU in rounds that ran no cell.

The start-up line (--startup-cells N, 0 skips it; --agent-startup prints only it): CPU seconds of our SDK
agent from its spawn until the local Messages-API server receives its first request: the agent process's, read
from /proc as the request arrives, plus the harness thread's that spawned it, for the warm path (the loop in
the harness, the tools in a spawned tool server) and for the whole agent in one process (anthropic_agent.py),
beside a bare `python -c pass` and `python -c 'import anthropic'`.

With --executor ray: the Ray executor (a private local instance, each cell a Ray task with its bundle)
against local at the same concurrency, interleaved, and against local before Ray was started (no daemons);
then a simulated multi-node cluster (ray.cluster_utils.Cluster: a head that runs no cell and N worker nodes of
--node-cpus CPUs, all on this machine, so their CPUs are this machine's) with cells/s per node count at
concurrency N x node CPUs.

The real-backend line runs our SDK agent (eval/agents/anthropic_agent.py) on the suite's cells against
the local Messages-API test server, which bills like the API with prompt caching (the model's minimum
cacheable length applied), once with cache_control breakpoints and once without (SM_ANTHROPIC_CACHE=0):
billed input tokens per cell, how many were cache reads, and USD per cell at config.json prices.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from startup import print_startup, startup  # noqa: E402  (bench/startup.py)

from eval import agent_call  # noqa: E402
from eval.cells import Contract, enumerate_cells  # noqa: E402
from eval.cost import Price  # noqa: E402
from eval.evaluate import EvalRequest, evaluate  # noqa: E402
from eval.jobs import CellSettings  # noqa: E402
from eval.suite import Suite, load_suite  # noqa: E402
from sandbox import get_launcher  # noqa: E402

SKILL = ROOT / "suites" / "csv-clean"
AGENT = [sys.executable, str(ROOT / "fakes" / "fake_agent.py")]
PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.10)
KEY = "bench-overhead"


def contract(replicates: int) -> Contract:
    return Contract(model="claude-haiku-4-5", replicates=replicates, max_turns=30, agent="fake-bench",
                    silence_ms=600_000, heartbeat_ms=300_000)


def harness(suite: Suite, sandbox: str, replicates: int, concurrency: int, scratch: Path,
            executor=None) -> float:
    """Cells per second through the real evaluation core (on `executor`, local by default)."""
    request = EvalRequest(skill_dir=SKILL, skill_name="csv-clean", suite=suite, contract=contract(replicates),
                          key=KEY, cells_root=scratch / f"harness-{sandbox}", price=PRICE,
                          concurrency=concurrency,
                          settings=CellSettings(agent_argv=AGENT, launcher=get_launcher(sandbox),
                                                grader_timeout_s=60))
    started = time.perf_counter()
    cells = evaluate(request, executor=executor)
    elapsed = time.perf_counter() - started
    bad = [c for c in cells if not c.ok]
    if bad:
        raise SystemExit(f"harness ({sandbox}, {getattr(executor, 'id', 'local')}): {len(bad)} cells failed, "
                         f"e.g. {bad[0].error}")
    return len(cells) / elapsed


def raw(suite: Suite, replicates: int, concurrency: int, scratch: Path) -> float:
    """Cells per second spawning the same agent and grader from a thread pool: no harness, no sandbox."""
    tasks = {task.id: task for task in suite.tasks}

    def one(spec) -> None:
        cell = scratch / "raw" / spec.name
        work = cell / "work"
        work.mkdir(parents=True)
        for rel in tasks[spec.task_id].inputs:
            shutil.copyfile(suite.fixture_dir(spec.task_id) / rel, work / rel)
        skill = work / ".claude" / "skills" / "csv-clean"
        shutil.copytree(SKILL, skill)
        env = {**os.environ, agent_call.STREAM: str(cell / "stream.jsonl"), agent_call.SKILL_DIR: str(skill),
               agent_call.CELL_SEED: str(spec.seed), agent_call.MAX_TURNS: "30"}
        # New sessions like the harness's: with the kernel's autogroup scheduling a session is its own
        # CPU share, so spawning in the bench's session would starve the raw side on a busy machine.
        subprocess.run(AGENT, cwd=work, env=env, input=tasks[spec.task_id].prompt.encode(), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        subprocess.run([*suite.grader_argv(), str(work), spec.task_id], cwd=suite.path, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)

    specs = enumerate_cells(suite, contract(replicates), KEY)
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, specs))
    return len(specs) / (time.perf_counter() - started)


def _children_cpu() -> float:
    found = resource.getrusage(resource.RUSAGE_CHILDREN)
    return found.ru_utime + found.ru_stime


def create_ms(files: int = 500) -> float:
    """CPU ms per empty file created in the scratch dir. On ext4 it rises many-fold after heavy create/delete
    churn (as a test suite leaves), which weighs on the harness's side more than on raw spawning's."""
    with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
        started = time.thread_time()
        for n in range(files):
            os.close(os.open(f"{scratch}/{n}", os.O_CREAT | os.O_WRONLY, 0o644))
        return (time.thread_time() - started) * 1000 / files


def launch_ms(sandbox: str, runs: int = 30) -> float:
    """Median wall ms to run `true` through the launcher, with a cell-like writable dir."""
    launcher = get_launcher(sandbox)
    times = []
    with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
        argv = launcher.wrap(["/bin/true"], cwd=Path(scratch), writable=[Path(scratch)], readable=[],
                             network=False)
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(argv, cwd=scratch, check=True, start_new_session=True)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def caching(suite: Suite, model: str, scratch: Path) -> dict[bool, dict]:
    """Per-cell billed input tokens and USD of the SDK agent, with and without prompt caching."""
    import json

    from tests.agents.messages_server import MessagesServer, demo_agent

    from eval.agents import AnthropicBackend
    from eval.agents.caching import min_cacheable
    from eval.cost import parse_pricing, price_for
    price = price_for(parse_pricing(json.loads((ROOT / "config.json").read_text())["pricing"]), model)
    found: dict[bool, dict] = {}
    server = MessagesServer()
    server.responder, server.cache_min_tokens = demo_agent, min_cacheable(model)
    saved = {k: os.environ.get(k) for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "SM_ANTHROPIC_CACHE")}
    try:
        for cache in (False, True):
            server.cache.clear()
            os.environ.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="bench",
                              SM_ANTHROPIC_CACHE="1" if cache else "0")
            request = EvalRequest(
                skill_dir=SKILL, skill_name="csv-clean", suite=suite,
                contract=Contract(model=model, replicates=1, max_turns=30, agent=f"bench-cache-{cache}",
                                  silence_ms=600_000, heartbeat_ms=300_000),
                key=f"bench-cache-{cache}", cells_root=scratch / f"cache-{cache}", price=price, concurrency=2,
                settings=CellSettings(agent_argv=list(AnthropicBackend().argv("build")),
                                      launcher=get_launcher("none"), grader_timeout_s=60, network=True))
            cells = evaluate(request)
            n = len(cells)
            found[cache] = {"cells": n, "ok": sum(c.ok for c in cells),
                            "usd": sum(c.cost_usd for c in cells) / n,
                            "input": sum(c.input_tokens for c in cells) / n,
                            "write": sum(c.cache_write_tokens for c in cells) / n,
                            "read": sum(c.cache_read_tokens for c in cells) / n,
                            "steps": sum(c.steps for c in cells) / n}
    finally:
        server.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return found


def ray_versus_local(suite: Suite, args: argparse.Namespace) -> None:
    """The Ray executor on a private local instance against local, same concurrency, interleaved repeats."""
    import ray

    from eval.executors.ray import RayExecutor
    cells = len(suite.tasks) * args.replicates
    # local before Ray starts: its daemons (raylet, GCS, workers) compete for the CPUs
    bare: list[float] = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
            bare.append(harness(suite, "none", args.replicates, args.concurrency, Path(scratch)))
    executor = RayExecutor(concurrency=args.concurrency)
    executor.connect()
    rates: dict[str, list[float]] = {"local": [], "ray": []}
    try:
        with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:   # untimed: Ray starts its workers
            harness(suite, "none", 1, args.concurrency, Path(scratch), executor)
        for _ in range(args.repeats):
            for side in rates:
                with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
                    rates[side].append(harness(suite, "none", args.replicates, args.concurrency,
                                               Path(scratch), executor if side == "ray" else None))
    finally:
        ray.shutdown()
    median = {side: statistics.median(values) for side, values in rates.items()}
    print(f"{args.suite}: {cells} cells per measurement, concurrency {args.concurrency}, median of "
          f"{args.repeats} interleaved repeats, this machine ({os.cpu_count()} CPUs)")
    for side, values in rates.items():
        label = "--executor local" if side == "local" else "--executor ray (private)"
        print(f"  {label:<26} {median[side]:7.2f} cells/s   runs: " + ", ".join(f"{r:.2f}" for r in values))
    alone = statistics.median(bare)
    print(f"  local, Ray not started     {alone:7.2f} cells/s   runs: " + ", ".join(f"{r:.2f}" for r in bare))
    print(f"  ray/local                  {median['ray'] / median['local']:7.3f}   (local "
          "with Ray's daemons up)")
    print(f"  ray/local without daemons  {median['ray'] / alone:7.3f}   (what "
          "choosing Ray costs on this machine)")


def ray_scaling(suite: Suite, args: argparse.Namespace) -> None:
    """Cells/s per node count on a simulated cluster (all nodes on this machine)."""
    import ray
    from ray.cluster_utils import Cluster

    from eval.executors.ray import RayExecutor
    cells = len(suite.tasks) * args.replicates
    print(f"simulated cluster (ray.cluster_utils.Cluster on this machine's {os.cpu_count()} CPUs): {cells} "
          f"cells, {args.node_cpus} CPU(s) per node, "
          f"concurrency = nodes x node CPUs, median of {args.repeats}")
    print(f"  {'nodes':>5} {'concurrency':>11} {'cells/s':>8}  {'cells per node (all runs)':<24} runs")
    for nodes in args.nodes:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        try:
            for _ in range(nodes):
                cluster.add_node(num_cpus=args.node_cpus)
            cluster.wait_for_nodes()
            concurrency = nodes * args.node_cpus
            executor = RayExecutor(address=cluster.address, concurrency=concurrency)
            executor.connect()
            with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:   # untimed warm-up
                harness(suite, "none", 1, concurrency, Path(scratch), executor)
            rates, spread = [], {}
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
                    placed: list = []
                    request = EvalRequest(
                        skill_dir=SKILL, skill_name="csv-clean", suite=suite,
                        contract=contract(args.replicates),
                        key=KEY, cells_root=Path(scratch), price=PRICE, concurrency=concurrency,
                        settings=CellSettings(agent_argv=AGENT, launcher=get_launcher("none"),
                                              grader_timeout_s=60))
                    started = time.perf_counter()
                    done = evaluate(request, executor=executor, on_cell=placed.append)
                    rates.append(len(done) / (time.perf_counter() - started))
                    for cell in placed:
                        spread[cell.extra["node"]] = spread.get(cell.extra["node"], 0) + 1
            per_node = "/".join(str(n) for n in sorted(spread.values(), reverse=True))   # over all repeats
            print(f"  {nodes:>5} {concurrency:>11} {statistics.median(rates):8.2f}  {per_node:<24} "
                  + ", ".join(f"{r:.2f}" for r in rates))
        finally:
            ray.shutdown()
            cluster.shutdown()


def per_round(rounds: int) -> None:
    """The harness's own cost per round early and late in one long dry run (bench/rounds.py's child)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import rounds as bench_rounds
    records = bench_rounds.measure(ROOT, argparse.Namespace(rounds=rounds, replicates=1))
    found = bench_rounds.summary(records)
    late = f"{max(rounds - 5, 1)}-{rounds}"
    print(f"per round, dry greedy run of {rounds} rounds "
          f"(bench/rounds.py --repeats 1 for more): rounds 1-5 -> {late}")
    for key, unit, scale in (("staging", "ms staging + tamper CPU (self + children)", 1000),
                             ("added", "KB added to workspaces/ + evidence/ (a hard link adds none)",
                              1 / 1024),
                             ("self", "ms harness CPU in cell-free rounds", 1000)):
        a, b = (value * scale for value in found[key])
        print(f"  {a:9.1f} -> {b:9.1f}  x{b / a if a else float('nan'):.2f}  {unit}")
    print(f"  {found['slope'] * 1000:+9.3f} ms per round: "
          "staging + tamper CPU's growth (least squares, every round)")


def paired(rates: dict[str, list[float]], side: str) -> str:
    """Each repeat's harness/raw (the two measured back to back, so a load that drifts between repeats hits
    both), their median and range: the figure to read when whole measurements spread as
    much as the gap between sides."""
    ratios = sorted(h / r for h, r in zip(rates[side], rates["raw"]))
    return (f"(paired by repeat: median {statistics.median(ratios):.3f}, {ratios[0]:.3f}–{ratios[-1]:.3f}, "
            f"{sum(r >= 0.95 for r in ratios)} of {len(ratios)} ≥ 0.95)")


def throughput(suite: Suite, args: argparse.Namespace) -> None:
    """Cells/s of raw spawning and of the harness (and bwrap), interleaved
    repeats; the parent's CPU per cell."""
    probe = [create_ms()]
    sides = ["raw", "none"] + (["bwrap"] if args.sandbox == "bwrap" else [])
    rates: dict[str, list[float]] = {side: [] for side in sides}
    parent: dict[str, list[float]] = {side: [] for side in sides}   # this process's own CPU per cell
    # and with its reaped children's (agent, grader)
    total: dict[str, list[float]] = {side: [] for side in sides}
    cells = len(suite.tasks) * args.replicates
    # the harness's evaluations share one folder across repeats, as a run's share its data dir's evals/ (and
    # the graders' suite templates kept beside them, eval/graders/script.py); each repeat's cells are its own
    evals = Path(tempfile.mkdtemp(prefix="sm-bench-evals-"))
    for repeat in range(args.repeats):  # interleaved, so load drift hits every side alike
        for side in (sides if repeat % 2 == 0 else sides[::-1]):   # and in turn first and last (ABBA)
            with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
                before, kids = time.process_time(), _children_cpu()
                rate = (raw(suite, args.replicates, args.concurrency, Path(scratch)) if side == "raw" else
                        harness(suite, side, args.replicates, args.concurrency, evals))
                parent[side].append((time.process_time() - before) / cells)
                total[side].append(parent[side][-1] + (_children_cpu() - kids) / cells)
                shutil.rmtree(evals / f"harness-{side}", ignore_errors=True)
            rates[side].append(rate)
    shutil.rmtree(evals, ignore_errors=True)
    probe.append(create_ms())
    median = {side: statistics.median(values) for side, values in rates.items()}
    print(f"{args.suite}: {cells} cells per measurement, concurrency {args.concurrency}, "
          f"median of {args.repeats} interleaved repeats")
    print(f"  scratch {tempfile.gettempdir()}: {probe[0]:.3f} ms CPU per file created before, {probe[1]:.3f} "
          "ms after (the harness creates ~4x the files of raw "
          "spawning per cell; set TMPDIR to move the scratch)")
    for side in sides:
        label = "raw spawn (no harness)" if side == "raw" else f"harness, --sandbox {side}"
        print(f"  {label:<24} {median[side]:7.2f} cells/s   runs: "
              + ", ".join(f"{r:.2f}" for r in rates[side]))
    print(f"  harness/raw (none)       {median['none'] / median['raw']:7.3f}   {paired(rates, 'none')}")
    own = {side: statistics.median(values) * 1000 for side, values in parent.items()}
    print("  parent CPU per cell (the spawning process's own work; a busy machine blurs it far less than "
          "cells/s): " + ", ".join(f"{side} {own[side]:.2f} ms" for side in sides))
    every = {side: statistics.median(values) * 1000 for side, values in total.items()}
    print("  all CPU per cell (the spawning process and every process it reaped: agents, graders, the "
          "sandbox; what bounds cells/s on a "
          "machine the cells keep busy): " + ", ".join(f"{side} {every[side]:.1f} ms"
                                                                            for side in sides)
          + " -> raw/harness " + ", ".join(f"{side} {every['raw'] / every[side]:.3f}" for side in sides[1:])
          + (" (bwrap's sandboxed processes are reaped inside its pid namespace: their CPU is not counted)"
             if "bwrap" in sides else ""))
    if "bwrap" in median:
        print(f"  harness/raw (bwrap)      {median['bwrap'] / median['raw']:7.3f}   {paired(rates, 'bwrap')}")
        print(f"  bwrap/none               {median['bwrap'] / median['none']:7.3f}   "
              f"(bwrap costs {100 * (1 - median['bwrap'] / median['none']):.1f}% of cell throughput)")
        bare, boxed = launch_ms("none"), launch_ms("bwrap")
        print(f"  launch `true`: bare {bare:.1f} ms, bwrap {boxed:.1f} ms -> bwrap adds {boxed - bare:.1f} "
              "ms per agent process (median of 30, serial)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sandbox", default="none", choices=("none", "bwrap"))
    p.add_argument("--suite", default="clean-train")
    p.add_argument("--replicates", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--caching-model", default="claude-sonnet-4-5",
                   help="the model of the real-backend caching line ('' skips it)")
    p.add_argument("--startup-cells", type=int, default=4,
                   help="cells of the SDK agent start-up line (0 skips it)")
    p.add_argument("--agent-startup", action="store_true", help="print only the SDK agent start-up line")
    p.add_argument("--executor", default="local", choices=("local", "ray"),
                   help="ray: the Ray executor against local, then a simulated multi-node scaling table")
    p.add_argument("--nodes", default="1,2,4", type=lambda v: [int(n) for n in v.split(",")],
                   help="--executor ray: node counts of the simulated cluster (default 1,2,4)")
    p.add_argument("--node-cpus", type=int, default=1, help="--executor ray: CPUs of each simulated node")
    p.add_argument("--rounds", type=int, default=60,
                   help="the per-round line: a dry greedy run of this "
                        "many rounds (bench/rounds.py, 0 skips it)")
    args = p.parse_args(argv)
    suite = load_suite(ROOT / "suites" / args.suite)
    if args.agent_startup:
        with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
            print_startup(startup(suite, Path(scratch), args.startup_cells or 4, SKILL, PRICE))
        return 0
    if args.executor == "ray":
        ray_versus_local(suite, args)
        ray_scaling(suite, args)
        return 0
    throughput(suite, args)
    if args.rounds:
        per_round(args.rounds)
    if args.startup_cells:
        with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
            print_startup(startup(suite, Path(scratch), args.startup_cells, SKILL, PRICE))
    if args.caching_model:
        with tempfile.TemporaryDirectory(prefix="sm-bench-") as scratch:
            found = caching(suite, args.caching_model, Path(scratch))
        print(f"real backend (SDK agent, {args.caching_model}, local Messages-API server billing like the "
              f"API), per cell over {found[True]['cells']} cells:")
        for cache in (False, True):
            f = found[cache]
            billed = f["input"] + f["write"] + f["read"]
            print(f"  {'with caching' if cache else 'no caching':<14} billed input {billed:8.0f} tokens "
                  f"(input {f['input']:.0f}, cache write {f['write']:.0f}, cache read {f['read']:.0f} = "
                  f"{f['read'] / billed:.0%}) · {f['steps']:.1f} turns · ${f['usd']:.5f}/cell · {f['ok']} ok")
        print(f"  caching/no caching: USD per cell x{found[True]['usd'] / found[False]['usd']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
