"""The harness's own cost per round of a long dry run: does it stay flat as rounds accumulate?

Usage: python bench/rounds.py [--rounds 60] [--replicates 1] [--repeats 3] [--sandbox auto] [--count]
                             [--before DIR]
Runs the dry greedy demo (fake agents) for --rounds rounds in a child process and records, per round: the
harness process's own CPU, its children's CPU (agents, graders, git), the CPU of staging the mutator's
evidence and of the tamper snapshots around the mutator call (self + children), and the bytes the round
added to workspaces/ and the evidence store (each inode counted once: a hard link adds no bytes).
Prints rounds 1-5 against the last 6 (per-round means) and their ratio, and the staging CPU's least-squares
growth per round over every round (on a loaded machine a window's mean moves with one spike; the slope less).
With --count, the harness's Python calls and SQLite VM steps per cell-free round instead: the work itself,
which load cannot move (the median of the first 50 such rounds against the last 50). With --before DIR (a
checkout of other code, e.g. `git archive main | tar -x -C DIR`), the same run on that code too, interleaved
per repeat, so the two are measured side by side under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from scipy.stats import theilslopes

ROOT = Path(__file__).resolve().parents[1]


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def _bytes(*roots: Path) -> int:
    seen: set[tuple[int, int]] = set()
    total = 0
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in files:
                st = os.lstat(os.path.join(folder, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
    return total


def child(code: Path, rounds: int, replicates: int, data_dir: Path, sandbox: str = "auto",
          count: bool = False) -> list[dict]:
    """One dry run on `code`, in this process; a record per round (with `count`, its Python calls and SQLite
    steps too)."""
    sys.path.insert(0, str(code))
    sys.modules["pandas"] = None  # type: ignore[assignment]   as run.py does: sqlite_utils's pandas probe
    import sqlite_utils  # noqa: F401
    del sys.modules["pandas"]
    from mutator.briefing import evidence
    from mutator.cli.main import main
    from mutator.round import loop, tamper
    assert Path(loop.__file__).is_relative_to(code), f"{loop.__file__} is not under {code}"
    staging = [0.0]

    def timed(function):
        def wrapper(*args, **kwargs):
            before = sum(_cpu())
            try:
                return function(*args, **kwargs)
            finally:
                staging[0] += sum(_cpu()) - before
        return wrapper

    evidence.Evidence.stage = timed(evidence.Evidence.stage)
    tamper.snapshot = timed(tamper.snapshot)
    records: list[dict] = []
    original = loop.Loop.round

    def round_(self, round_no, val_norm):
        staging[0] = 0.0
        cells = self.session.db.execute("select count(*) from cells").fetchone()[0]
        calls, steps = [0], [0]
        if count:
            # every Python function entered (ours, libraries', builtins) in any thread; SQLite's VM steps
            self.session.db.conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 100)
            def tally(frame, event: str, arg) -> None:
                if event in ("call", "c_call"):
                    calls[0] += 1
            threading.setprofile(tally)
            sys.setprofile(tally)
        own, kids = _cpu()
        try:
            original(self, round_no, val_norm)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)   # type: ignore[arg-type]
            self.session.db.conn.set_progress_handler(None, 0)
        own2, kids2 = _cpu()
        records.append({"round": round_no, "self": own2 - own, "children": kids2 - kids,
                        "staging": staging[0], "calls": calls[0], "steps": steps[0] * 100,
                        "cells": self.session.db.execute("select count(*) from cells").fetchone()[0] - cells,
                        # only where summary() reads it: a walk of the whole data dir each round is the
                        # bench's own work growing with the rounds, and its pass over every
                        # inode weighs on the next round
                        "bytes": _bytes(data_dir / "workspaces", data_dir / "evidence")
                        if round_no <= 5 or round_no >= rounds - 6 else None})

    loop.Loop.round = round_
    code_ = main(["--suite", "clean-train", "--val", "clean-val", "--rounds", str(rounds), "--replicates",
                  str(replicates), "--data-dir", str(data_dir), "--sandbox", sandbox])
    if code_:
        raise SystemExit(f"the dry run exited {code_}")
    return records


def measure(code: Path, args: argparse.Namespace) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="sm-bench-rounds-", ignore_cleanup_errors=True) as scratch:
        out = Path(scratch) / "records.json"
        subprocess.run([sys.executable, __file__, "--child", str(code), "--rounds", str(args.rounds),
                        "--replicates",
                        str(args.replicates), "--out", str(out), "--data-dir", str(Path(scratch) / "data"),
                        "--sandbox", args.sandbox, *(["--count"] if args.count else [])],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=code)
        return json.loads(out.read_text())


def summary(records: list[dict], tail: int = 6) -> dict:
    """Per-round means early against late: staging and bytes over rounds 1-5 and the last `tail`; the
    harness's own CPU over rounds that ran no cell (a critic's reject: no agent, no grading), the first 3 and
    the last `tail`, so what is compared is the harness's own work and not how
    many cells a verdict asked for."""
    first, last = records[:5], records[-tail:]
    previous = {r["round"]: r["bytes"] for r in records}
    for r in records:
        before = previous.get(r["round"] - 1, 0)
        r["added"] = None if r["bytes"] is None or before is None else r["bytes"] - before
    quiet = [r for r in records if r["cells"] == 0]

    def mean(rows, key):
        return statistics.mean(r[key] for r in rows) if rows else float("nan")
    # least squares over every round: the growth per round, which one load spike in a window of 5 cannot fake
    slope = statistics.linear_regression([r["round"] for r in records], [r["staging"] for r in records]).slope
    # the same over the cell-free rounds' own CPU: the early window is three rounds, so one spike moves it
    own = (statistics.linear_regression([r["round"] for r in quiet], [r["self"] for r in quiet])
           if len(quiet) > 2 else None)
    # and the Theil-Sen line (the median of the slopes between every two rounds): a busy machine's spikes only
    # ever add CPU, so a few of them tilt the least-squares line where they fall; the
    # median slope is not moved by them
    robust = (theilslopes([r["self"] for r in quiet],
                          [r["round"] for r in quiet]) if len(quiet) > 2 else None)
    # the medians of the first and the last 50 cell-free rounds (fewer in a short run): a spike moves neither
    bucket = max(min(50, len(quiet) // 4), 1)

    def medians_of(key: str) -> tuple[float, float]:
        return ((statistics.median(r[key] for r in quiet[:bucket]),
                 statistics.median(r[key] for r in quiet[-bucket:]))
                if quiet else (float("nan"), float("nan")))
    return {"staging": (mean(first, "staging"), mean(last, "staging")), "slope": slope, "bucket": bucket,
            "medians": medians_of("self"), "calls": medians_of("calls"), "steps": medians_of("steps"),
            "robust_fit": (float(robust.intercept + robust.slope),
                           float(robust.intercept + robust.slope * records[-1]["round"]))
            if robust else (float("nan"), float("nan")),
            "own_fit": (own.intercept + own.slope, own.intercept + own.slope * records[-1]["round"]) if own
            else (float("nan"), float("nan")),
            "added": (mean(records[1:5], "added"), mean(last, "added")),
            "self": (mean(quiet[:3], "self"), mean(quiet[-tail:], "self")),
            "children": (mean(quiet[:3], "children"), mean(quiet[-tail:], "children")),
            "rounds": ([r["round"] for r in quiet[:3]], [r["round"] for r in quiet[-tail:]])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--replicates", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sandbox", default="auto", help="the runs' --sandbox (default auto: bwrap where it "
                   "works, whose mutator sees the run's shared history bound in; "
                   "none: every earlier file linked in)")
    p.add_argument("--before", type=Path, help="a checkout of other code, measured side by side")
    p.add_argument("--count", action="store_true", help="count the harness's Python calls and SQLite steps "
                   "per round instead of timing it: the same count on a busy machine as on an idle one (the "
                   "run is about 2x slower, so the CPU figures are not printed)")
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        args.out.write_text(json.dumps(child(args.child, args.rounds, args.replicates, args.data_dir,
                                             args.sandbox, args.count)))
        return 0
    sides = {"this code": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    found: dict[str, list[dict]] = {side: [] for side in sides}
    started = time.time()
    for _ in range(args.repeats):   # interleaved, so load drift hits both alike
        for side, code in sides.items():
            found[side].append(summary(measure(code, args)))
    print(f"dry greedy run, {args.rounds} rounds, {args.replicates} replicate(s), --sandbox {args.sandbox}, "
          f"{args.repeats} repeats ({time.time() - started:.0f} s, load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs); per round, early -> late, median over repeats of the per-round means")
    for side, runs in found.items():
        early, late = runs[0]["rounds"]
        print(f"  {side}:")
        if args.count:
            for key, unit in (("calls", "Python calls"), ("steps", "SQLite VM steps")):
                a, b = (statistics.median(r[key][i] for r in runs) for i in (0, 1))
                print(f"    {a:9.0f} -> {b:9.0f}  x{b / a if a else float('nan'):.4f}  {unit} of the harness "
                      f"per cell-free round, the median of the first {runs[0]['bucket']} -> of the last "
                      f"{runs[0]['bucket']}")
            continue
        for key, unit, scale in (("staging", "ms staging + tamper CPU, rounds 1-5 -> last 6", 1000),
                                 ("added", "KB added to disk, rounds 2-5 -> last 6", 1 / 1024),
                                 ("self", f"ms harness CPU, cell-free rounds {early} -> {late}", 1000),
                                 ("children", "ms children CPU, the same rounds", 1000)):
            a = statistics.median(r[key][0] for r in runs) * scale
            b = statistics.median(r[key][1] for r in runs) * scale
            print(f"    {a:9.1f} -> {b:9.1f}  x{b / a if a else float('nan'):.2f}  {unit}")
        slope = statistics.median(r["slope"] for r in runs) * 1000
        print(f"    {slope:+9.3f} ms per round: staging + tamper "
              "CPU's growth (least squares over every round)")
        a, b = (statistics.median(r["own_fit"][i] for r in runs) * 1000 for i in (0, 1))
        print(f"    {a:9.1f} -> {b:9.1f}  x{b / a if a else float('nan'):.2f}  ms harness CPU of cell-free "
              "rounds, least-squares line at round 1 -> the last")
        a, b = (statistics.median(r["medians"][i] for r in runs) * 1000 for i in (0, 1))
        print(f"    {a:9.1f} -> {b:9.1f}  x{b / a if a else float('nan'):.2f}  ms harness CPU of cell-free "
              f"rounds, the median of the first {runs[0]['bucket']} -> of the last {runs[0]['bucket']}")
        a, b = (statistics.median(r["robust_fit"][i] for r in runs) * 1000 for i in (0, 1))
        print(f"    {a:9.1f} -> {b:9.1f}  x{b / a if a else float('nan'):.2f}  ms harness CPU of cell-free "
              "rounds, Theil-Sen line (the median slope: load spikes do not tilt it) at round 1 -> the last")
    return 0


if __name__ == "__main__":
    sys.exit(main())
