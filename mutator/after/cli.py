"""run.py's after-the-run commands: --propose, --accept/--reject, --rollback, --check, --audit.

Each returns the process exit code; run.py only parses flags and dispatches here. Exit codes of
--check: 0 = a score with any band but REGRESSED, 6 = REGRESSED (so a cron job can alert), 5 = stopped
by --max-seconds (partial), 3 = daily budget stop, 130 = Ctrl-C (partial result kept in every case).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from mutator.config import run_py

EXIT_REGRESSED = 6
EXIT_PARTIAL = 5
EXIT_BUDGET = 3
EXIT_INTERRUPTED = 130


class SuiteAction(argparse.Action):
    """`--suite` as before (the last value wins for a run) that also keeps every value for --check."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)
        namespace.suite_list = [*(getattr(namespace, "suite_list", None) or []), values]


def wants_decision(args: argparse.Namespace) -> bool:
    named = ("propose", "accept", "reject", "rollback", "audit")
    return any(getattr(args, name, None) is not None for name in named) or only_daily_budget(args)


def only_daily_budget(args: argparse.Namespace) -> bool:
    """`run.py --daily-budget-usd USD` alone records the cap and says where today's spend stands."""
    return args.daily_budget_usd is not None and not any(
        getattr(args, name, None) for name in ("suite", "val", "test_run", "aa", "check", "plan", "serve"))


def decide(args: argparse.Namespace, settings) -> int:
    """--propose / --accept / --reject / --rollback / --audit: no agent runs, nothing is spent."""
    from mutator.after.audit import AuditError, write
    from mutator.after.deploy import DeployError, deploy, rollback
    from mutator.after.proposals import ProposalError, get, propose, refuse_if_tested_out, reject
    from mutator.store.db import connect
    from mutator.store.genome import GenomeStore
    try:
        if only_daily_budget(args):
            from mutator.after.spend import budget_state, day_start, record_daily, spent_since
            db = connect(settings.db_path)
            state = budget_state(spent_since(db, day_start(time.time())),
                                 record_daily(db, args.daily_budget_usd))
            cap = "none" if state["daily_usd"] is None else f"${state['daily_usd']:g}"
            print(f"daily budget: {cap}; spent today (UTC) ${state['spent_today']:.4f} ({state['state']})")
            return 0
        if args.audit is not None:
            if not args.out:
                print("error: --audit needs --out FILE.json or FILE.csv", file=sys.stderr)
                return 2
            print(write(settings.db_path, args.audit, args.out))
            return 0
        db = connect(settings.db_path)
        if args.propose is not None:
            proposal, created = propose(db, GenomeStore(settings.data_dir, db), args.propose,
                                        target_dir=args.to or args.skill_dir,   # else the run's own folder
                                        min_delta=settings.propose_min_delta,
                                        max_failed_share=settings.max_failed_share,
                                        no_harm=settings.propose_no_harm)
            print(describe(proposal, created, where_flags(args).strip()))
            return 0
        if args.accept is not None:
            if not args.to:
                print("error: --accept needs --to SKILL_DIR (the folder to deploy the champion into)",
                      file=sys.stderr)
                return 2
            if settings.propose_no_harm:   # a proposal made before its test is held to it
                refuse_if_tested_out(db, get(db, args.accept), no_harm=True, action="deployed")
            row = deploy(db, GenomeStore(settings.data_dir, db), args.accept, args.to, note=args.note,
                         force=args.force)
            print(f"proposal {args.accept} deployed into {row['target_dir']}"
                  + (f"; previous version kept at {row['backup_dir']} (undo: {run_py()} --rollback "
                     f"{shlex.quote(row['target_dir'])}{where_flags(args)})" if row["backup_dir"] else
                     "; there was nothing there before")
                  + (f"\n  {row['merge'].words()}" if row["merge"].words() else ""))
            return 0
        if args.reject is not None:
            reject(db, args.reject, args.reason)
            print(f"proposal {args.reject} rejected" + (f": {args.reason}" if args.reason else ""))
            return 0
        row = rollback(db, GenomeStore(settings.data_dir, db), args.rollback)
        print(f"{row['target_dir']} rolled back: deploy {row['id']} undone"
              + (f", previous version restored from {row['backup_dir']}" if row["backup_dir"] else
                 " (the folder did not exist before it, so it was moved aside)"))
        return 0
    except (ProposalError, DeployError, AuditError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def where_flags(args: argparse.Namespace) -> str:
    """" --config X --data-dir Y" as this command was given them (absolute), for a printed command to
    carry."""
    return "".join(f" {flag} {shlex.quote(str(getattr(args, attr)))}"
                   for flag, attr in (("--config", "config"), ("--data-dir", "data_dir"))
                   if getattr(args, attr, None) is not None)


def describe(proposal: dict, created: bool, where: str = "") -> str:
    """The proposal and the commands that decide it, ready to paste (`where`: the --config/--data-dir flags
    of the command that printed it)."""
    from mutator.store.db import loads
    val = loads(proposal["val"], {}) or {}
    test = loads(proposal["test"])
    head = (f"{'New proposal' if created else 'Proposal'} {proposal['id']} ({proposal['status']}): champion "
            f"{proposal['genome_hash'][:12]} of {proposal['run_id']}")
    figures = (f"val {val.get('suite')}: composite {_f(val.get('composite'))} vs seed "
               f"{_f(val.get('seed_composite'))}"
               + (f"; test {test['suite']}: composite {_f(test['composite'])}" if test
                  else "; not tested yet"))
    target = shlex.quote(str(proposal["target_dir"])) if proposal["target_dir"] else "SKILL_DIR"
    tail = f" {where}" if where else ""
    return (f"{head}\n  {figures}\n  accept: {run_py()} --accept {proposal['id']} --to {target}{tail}"
            f"   # optional: --note TEXT\n"
            f"  reject: {run_py()} --reject {proposal['id']}{tail}   # optional: --reason TEXT")


def _f(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def propose_finished(settings, run_id: str, where: str = "") -> str:
    """After a finished run: its champion becomes a proposal (once); the line to print."""
    from mutator.after.proposals import ProposalError, propose
    from mutator.store.db import connect
    from mutator.store.genome import GenomeStore
    db = connect(settings.db_path)
    try:
        proposal, created = propose(db, GenomeStore(settings.data_dir, db), run_id,
                                    target_dir=settings.skill_dir, auto=True,
                                    min_delta=settings.propose_min_delta,
                                    max_failed_share=settings.max_failed_share,
                                    no_harm=settings.propose_no_harm)
    except ProposalError as err:
        return f"No proposal: {err}"
    return describe(proposal, created, where)


def check_command(args: argparse.Namespace, settings, agents, launcher, progress, daily) -> int:
    from eval.suite import SuiteError, load_suite
    from mutator.after.health import HealthCheck
    from mutator.config import resolve_suite_path
    names = getattr(args, "suite_list", None) or ([args.suite] if args.suite else [])
    if not names:
        raise SuiteError(f"--check needs --suite NAME (repeatable); suites in config.json: "
                         f"{', '.join(settings.suites)}")
    suites = [load_suite(resolve_suite_path(settings, name)) for name in names]
    check = HealthCheck(settings, agents.build_argv, agents.build_id, launcher,
                        parallel=args.parallel or settings.concurrency, progress=progress,
                        max_seconds=args.max_seconds, daily=daily,
                        budget_usd=getattr(args, "budget_usd", None))
    result = check.run(Path(args.check).resolve(), suites)  # the path its lock (run.py) was taken on
    print(render(result))
    if result["band"] == "REGRESSED":
        return EXIT_REGRESSED
    if result["status"] == "stopped":
        return EXIT_BUDGET
    if result["status"] == "cancelled":
        deadline = result["reason"] and result["reason"].startswith("--max-seconds")
        return EXIT_PARTIAL if deadline else EXIT_INTERRUPTED
    return 0


def render(check: dict) -> str:
    from mutator.store.db import loads
    dry = str((loads(check.get("contract"), {}) or {}).get("agent", "")).startswith("fake")
    lines = [f"Health check {check['id']} of {check['skill_dir']} ({check['skill_name']}, genome "
             f"{check['genome_hash'][:12]}) on {', '.join(_names(check))}: {check['status']}"
             + (" (PARTIAL)" if check["partial"] else "") + (" — dry run (fake agents)" if dry else ""),
             f"  {check['summary']}",
             f"  {check['n_done']}/{check['n_cells']} cells, cost ${check['cost_usd']:.4f}, fingerprint "
             f"{check['fingerprint']}"
             + (f", compared with check {check['previous_id']}" if check["previous_id"]
                                          else "")]
    if check["tasks"]:
        lines.append("  tasks, worst first:")
        for t in check["tasks"]:
            moved = "" if t["delta"] is None else f"  ({t['delta']:+.1f} vs {t['previous']:.1f})"
            lines.append(f"    {t['score']:6.1f}  {t['task']}{moved}")
    return "\n".join(lines)


def _names(check: dict) -> list[str]:
    from mutator.store.db import loads
    return loads(check["suites"], []) or []
