"""The opt-in watch: every tick, count the eligible requests newer than the last run; past --min-traces,
re-mine the suites (the test split frozen: the holdout stays a holdout), run the loop, and leave its
proposal. Every tick is a row in `triggers` (proposed | skipped-trigger | skipped-delta | failed).

The loop runs as a `run.py` child process, exactly the command a user would type, so the loop stays the
only writer of runs, attempts and proposals; the watch writes only its `triggers` rows. Never deploys.
Time and the child go through seams (`clock`, `run_child`) so tests control them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eval.cost import Price
from mutator.after.spend import DailyBudget
from mutator.mining import secrets
from mutator.mining.judging import charge_pass
from mutator.mining.mine import MineOptions, MiningError, collect, mine, render
from mutator.mining.split import SplitError
from mutator.round.budget import BudgetStop
from mutator.store import watch_ticks
from mutator.store.db import connect
from mutator.store.lock import RunLock
from mutator.store.proposals import latest_of_run
from mutator.store.run_lookup import newest_run_of_suite
from mutator.store.spending import daily_limit

RAN = ("proposed", "skipped-delta")   # ticks after which the next one counts new requests afresh
LOG_TAIL = 400
TAIL_LINES = 200


@dataclass(frozen=True)
class WatchOptions:
    mining: MineOptions               # rebuild=True
    db_path: Path
    min_traces: int = 20
    every_s: float = 6 * 3600
    # `python run.py <the user's run flags>`, suites and skill added per tick
    run_argv: tuple[str, ...] = ()
    # a model's price, for the judge's meters (judging.charge_pass)
    price_of: Callable[[str], Price] | None = None


def suites_key(out: Path) -> str:
    return str(out.resolve())


def last_watermark(db, out: Path) -> float | None:
    return watch_ticks.last_watermark(db, suites_key(out), RAN)


def loop_argv(opts: WatchOptions) -> list[str]:
    out = opts.mining.out
    argv = [*opts.run_argv, "--suite", str(out / f"{out.name}-train"), "--val", str(out / f"{out.name}-val"),
            "--skill-dir", str(opts.mining.skill_dir)]
    if (out / f"{out.name}-test" / "tasks.jsonl").is_file():
        argv += ["--holdout", str(out / f"{out.name}-test")]
    return argv


def run_subprocess(argv: list[str]) -> tuple[int, str]:
    """Run the loop, passing its output through as it comes (a real run takes a while); returns the exit code
    and the output's last lines."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
        for line in child.stdout or ():
            sys.stdout.write(line)
            tail.append(line)
    sys.stdout.flush()
    return child.returncode, "".join(tail)


def tick(opts: WatchOptions, *, clock: Callable[[], float] = time.time,
         run_child: Callable[[list[str]], tuple[int, str]] = run_subprocess,
         say: Callable[[str], None] = print) -> dict:
    """One tick; returns its triggers row."""
    db = connect(opts.db_path)
    out = opts.mining.out
    row = {"at": clock(), "skill_dir": str(opts.mining.skill_dir), "suites": suites_key(out),
           "min_traces": opts.min_traces, "traces_seen": 0, "eligible": 0, "new_eligible": 0}
    since = last_watermark(db, out)
    try:
        found = collect(opts.mining)
    except MiningError as err:
        return record(db, row, "failed", reason=str(err), clock=clock, say=say)
    newest = max((t.at for t in found.tasks), default=None)
    new = [t for t in found.tasks if since is None or t.at > since]
    row.update(traces_seen=found.read["requests"], eligible=len(found.tasks), new_eligible=len(new))
    if len(new) < opts.min_traces:
        return record(db, row, "skipped-trigger", clock=clock, say=say,
                      reason=f"{len(new)} new eligible request(s) since the last run; the trigger needs "
                             f"{opts.min_traces} (--min-traces)")
    row["watermark"] = newest
    limit = daily_limit(db) if opts.mining.judge else None
    # the store's daily cap, the rule every spending step follows (mutator/after/spend.py)
    if limit is not None:
        try:
            DailyBudget(limit, clock=clock).check(db, next_usd=0.0, what="this tick's judge pass")
        except BudgetStop as stop:
            return record(db, row, "failed", reason=str(stop), clock=clock, say=say)
    mined = None
    try:
        mined = mine(opts.mining)
    except (MiningError, SplitError) as err:
        return record(db, row, "failed", reason=f"mining: {err}", clock=clock, say=say)
    finally:   # charged now, before the loop runs for hours: what the judge was served is never lost
        charge_pass(opts.db_path, (mined or {}).get("judge"), opts.mining.judge_meters, opts.price_of,
                    at=clock())
    # the judge pass's spend is also shown on the tick (the ledger holds it once, charged above)
    row["judge_cost_usd"] = (mined.get("judge") or {}).get("cost_usd") or None
    say(render(mined, out))
    argv = loop_argv(opts)
    code, text = run_child(argv)
    run_id = find_run(db, out)
    if code != 0:
        tail = text.strip()[-LOG_TAIL:]
        return record(db, row, "failed", run_id=run_id, clock=clock, say=say,
                      reason=f"the loop exited {code}: {tail}")
    proposal = latest_of_run(db, run_id) if run_id else None
    if proposal and proposal["status"] == "proposed":
        return record(db, row, "proposed", run_id=run_id, proposal_id=proposal["id"], clock=clock, say=say,
                      reason=f"proposal {proposal['id']} awaits review (run.py --accept/--reject); never "
                             f"deployed by the watch")
    why = next((line for line in text.splitlines() if line.startswith("No proposal:")),
               "no proposal was made")
    return record(db, row, "skipped-delta", run_id=run_id, clock=clock, say=say, reason=why)


def find_run(db, out: Path) -> str | None:
    train = str((out / f"{out.name}-train").resolve())
    return newest_run_of_suite(db, train)


def record(db, row: dict, outcome: str, *, clock: Callable[[], float], say: Callable[[str], None],
           reason: str = "", run_id: str | None = None, proposal_id: int | None = None) -> dict:
    row = {**row, "outcome": outcome, "reason": secrets.redact(reason), "run_id": run_id,
           "proposal_id": proposal_id, "finished_at": clock()}
    row["id"] = watch_ticks.insert_tick(db, row)
    say(f"watch tick {row['id']}: {outcome}: {row['new_eligible']} new of {row['eligible']} eligible "
        f"request(s) ({row['traces_seen']} read)" + (f"; run {run_id}" if run_id else "")
        + (f"; {reason}" if reason else ""))
    return row


def watch_lock(out: Path) -> Path:
    """Beside the --out folder, not in a data dir: two watches of one folder with two --data-dir still meet
    here (inside the folder it would make a new --out look not empty)."""
    out = out.resolve()
    return out.parent / f".{out.name}.watch.lock"


def watch(opts: WatchOptions, *, once: bool, clock: Callable[[], float] = time.time,
          sleep: Callable[[float], None] = time.sleep) -> int:
    """Tick now, then every `every_s` seconds until interrupted (or once). Exit 1 when the last tick failed.

    One watch per suites folder (an OS lock, LockHeld otherwise): a cron tick overlapping a long one would
    rebuild the suites under the running loop, which stops a run whose suite changed on disk."""
    lock = RunLock.acquire_file(watch_lock(opts.mining.out), what=f"the watch of {opts.mining.out}")
    try:
        while True:
            row = tick(opts, clock=clock)
            if once:
                return 1 if row["outcome"] == "failed" else 0
            sys.stdout.flush()
            sleep(opts.every_s)
    finally:
        lock.release()
