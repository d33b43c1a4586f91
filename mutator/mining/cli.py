"""run.py's --mine-traces and --watch: flags in, exit code out; the work is in mine.py and watch.py.

The watch hands the loop every run flag the user typed (rounds, budget, --real, agents, --data-dir,
--config, ...) by re-emitting them from argparse's own record, so a tick's run is the command a user
would type by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from eval.cost import price_for
from mutator.config import run_py as run_py_command
from mutator.mining.judging import charge_pass, judge_meters
from mutator.mining.mine import MineOptions, MiningError, mine, parse_since, render
from mutator.mining.split import SplitError
from mutator.round.preflight import check_out_folder

# flags the watch itself owns, or that name what to run: never handed to the loop
WATCH_ONLY = {"watch", "mine_traces", "once", "every", "min_traces", "redact", "judge", "since", "out",
              "suite", "val", "holdout", "skill_dir", "serve", "port", "host", "allow_host", "help"}
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# commands that are not a run: given with --watch or --mine-traces they would be ignored or hijack the tick's
# run
OTHER_COMMANDS = ("import_evals", "test_run", "export", "aa", "lint", "plan", "propose", "accept", "reject",
                  "rollback", "check", "audit")


def mine_options(args: argparse.Namespace, settings, traces: Path, *, rebuild: bool) -> MineOptions:
    if not args.out:
        raise MiningError("--mine-traces and --watch need --out suites/NAME (the folder the mined suites go "
                          "in)")
    if args.mine_traces and args.watch:
        raise MiningError("--mine-traces and --watch are two commands; give one (--watch mines on every "
                          "tick)")
    check_out_folder("--out", args.out, skill_dir=settings.skill_dir, data_dir=settings.data_dir)
    clash = [f"--{name.replace('_', '-')}" for name in OTHER_COMMANDS
             if getattr(args, name, None) not in (None, False)]
    if clash:
        raise MiningError(f"{', '.join(clash)} cannot go with --mine-traces or --watch; run it as its own "
                          "command")
    judge = None
    if args.judge:
        judge = os.environ.get("SM_JUDGE") or ("anthropic" if args.real else "fake")
    model = os.environ.get("SM_JUDGE_MODEL") or settings.model
    price = None
    if judge:
        price = price_for(settings.pricing, model)   # PricingError names the model and the config key
    return MineOptions(traces=traces.expanduser(), skill_dir=settings.skill_dir, out=args.out,
                       seed=settings.seed, since=parse_since(args.since), redact=args.redact, judge=judge,
                       judge_model=model, judge_price=price,
                       judge_budget_usd=getattr(args, "budget_usd", None), rebuild=rebuild,
                       judge_meters=judge_meters(settings.data_dir))


def mine_command(args: argparse.Namespace, settings) -> int:
    try:
        opts = mine_options(args, settings, args.mine_traces, rebuild=False)
        record = None
        try:
            record = mine(opts)
        finally:   # this pass's judge calls (and any a crashed pass left) are charged even when mining fails
            charge_judge(settings, record)
    except (MiningError, SplitError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(render(record, opts.out))
    out = opts.out
    holdout = f" --holdout {out / (out.name + '-test')}" if record["splits"]["test"]["tasks"] else ""
    print(f"\nRecord: {out / 'mining.json'}\nDry run: {run_py_command()} --suite "
          f"{out / (out.name + '-train')} --val {out / (out.name + '-val')}{holdout} --skill-dir "
          f"{settings.skill_dir}")
    return 0


def charge_judge(settings, record: dict | None) -> float:
    """The judge pass's spend on the store's ledger (no run pays it), so the Cost page and the daily budget
    count it like every other model call; a crashed pass's meters left in the data dir are charged here
    too."""
    return charge_pass(settings.db_path, (record or {}).get("judge"), judge_meters(settings.data_dir),
                       lambda model: price_for(settings.pricing, model))


def every_seconds(text: str) -> float:
    """'6h', '30m', '90s', '1d' or plain seconds."""
    text = str(text).strip().lower()
    unit = UNITS.get(text[-1:], None)
    try:
        value = float(text[:-1]) if unit else float(text)
    except ValueError:
        raise MiningError(f"--every {text!r}: expected a duration like 6h, 30m, 90s or 1d") from None
    if not value > 0:
        raise MiningError(f"--every {text!r}: must be longer than 0")
    return value * (unit or 1)


def run_flags(args: argparse.Namespace, actions: list[argparse.Action]) -> list[str]:
    """The run flags the user typed, as run.py arguments again."""
    argv: list[str] = []
    for action in actions:
        if not action.option_strings or action.dest in WATCH_ONLY:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is False or value == action.default:
            continue
        flag = next(o for o in action.option_strings if o.startswith("--") and not o.startswith("--no-"))
        if isinstance(action, argparse.BooleanOptionalAction):
            argv.append(flag if value in (True, "on") else "--no-" + flag[2:])
        elif action.nargs == 0:
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        elif isinstance(value, dict):
            import json
            argv += [flag, json.dumps(value)]
        else:
            argv += [flag, str(value)]
    return argv


def watch_command(args: argparse.Namespace, settings, actions: list[argparse.Action], run_py: Path) -> int:
    from mutator.mining.watch import WatchOptions, watch
    try:
        opts = WatchOptions(mining=mine_options(args, settings, args.watch, rebuild=True),
                            db_path=settings.db_path, min_traces=args.min_traces,
                            every_s=every_seconds(args.every),
                            run_argv=(sys.executable, str(run_py), *run_flags(args, actions)),
                            price_of=lambda model: price_for(settings.pricing, model))
        if opts.min_traces < 1:
            raise MiningError(f"--min-traces {opts.min_traces}: must be at least 1")
    except MiningError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"watching {args.watch} for skill {settings.skill_dir}: "
          + ("one tick (--once)" if args.once else f"a tick every {args.every}; Ctrl-C stops"))
    return watch(opts, once=args.once)
