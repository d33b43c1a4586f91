"""What each command of run.py does, one function a mode, and the helpers they share (the run locks this
command holds, printed next steps, loading a suite for a role).

Each mode is a `Command` in `mutator/cli/main.py`'s registry: the first whose `wants(args)` is true runs.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eval.suite import Suite, SuiteError, load_suite
from mutator.after.cli import where_flags
from mutator.after.newsuite import refuse_placeholders
from mutator.config import ConfigError, Settings, load_settings, resolve_suite_path, run_py
from mutator.round.preflight import (
    check_other_skills,
    check_out_folder,
    check_seed_skill,
    check_skill_dir_given,
    check_split,
)
from mutator.store.db import store_problem
from mutator.store.lock import KEY, RunLock
from strategies import make_strategy

if TYPE_CHECKING:
    from mutator.store.liveness import Heartbeat

HELD: list = []  # release/stop callables of the run locks and heartbeats this command holds (mutator/store/)


def hold(settings: Settings, key: str, *, what: str, beat: Callable[[Path, str], Heartbeat],
         subject: str) -> None:
    """One writer per run: take its lock (LockHeld names the holder), then beat the record's heartbeat
    (`beat(db_path, subject)`, a mutator/store/lookups.py heartbeat)."""
    HELD.append(RunLock.acquire(settings.data_dir, key, what=what).release)
    HELD.append(beat(settings.db_path, subject).stop)


def next_step(args: argparse.Namespace, *words: str) -> str:
    """A command to print as the next step that works when pasted in the same shell: run.py by a runnable
    path, with the --config and --data-dir this command was given (the run remembers its suites and agent
    flags)."""
    import shlex
    return " ".join([run_py(), *(shlex.quote(word) for word in words)]) + where_flags(args)


def reap_orphans(data_dir: Path) -> None:
    """Kill agent process groups and remove agent containers a killed harness left behind, then record this
    one's."""
    from eval import reaper
    killed = reaper.reap(data_dir / "pids")
    if killed:
        print(f"reaped {len(killed)} agent process(es) left running by a harness that died: pids "
              f"{', '.join(map(str, killed[:10]))}", file=sys.stderr)
    if removed := reaper.reap_containers(data_dir / "pids"):
        print(f"removed {len(removed)} agent container(s) left by a harness that died: "
              f"{', '.join(removed[:10])}", file=sys.stderr)
    reaper.use(data_dir / "pids")


def load(settings: Settings, name: str | None, flag: str, *, allow_mismatch: bool = False) -> Suite:
    """Load a suite for one role; its suite.md `split:` must name that role unless --allow-split-mismatch."""
    if not name:
        raise SuiteError(f"{flag} is required; name a suite from config.json 'suites' "
                         f"({', '.join(settings.suites)}) or a path to a suite folder")
    suite = load_suite(resolve_suite_path(settings, name))
    check_split(suite, flag, allow_mismatch=allow_mismatch)
    refuse_placeholders(suite)   # a task `run.py new-suite` left for the user to write
    return suite


def import_evals_command(args: argparse.Namespace) -> int:
    from mutator.after.importer import evals_skill, few_task_warnings, import_evals
    if not args.out:
        print("error: --import-evals needs --out suites/NAME (the folder the imported suites go in)",
              file=sys.stderr)
        return 2
    # as --mine-traces --out: never into a suite, the skill whose evals these are, or the data dir
    data_dir = load_settings({"data_dir": args.data_dir}, config_file=args.config).data_dir
    # a skill only when it has a SKILL.md (a trigger set may lie anywhere)
    skill = evals_skill(args.import_evals)
    check_out_folder("--out", args.out, skill_dir=skill if (skill / "SKILL.md").is_file() else None,
                     data_dir=data_dir)
    made = import_evals(args.import_evals, args.out, seed=args.seed or 0)   # errors: exit 2 in cli/main.py
    return report_import(made, few_task_warnings(made, args.import_evals),
                         args.import_evals.resolve().parent.parent)


def report_import(made: list, warnings: list[str], skill_dir: object, first: str = "") -> int:
    """What an import wrote, its warnings, and the commands to run next (`first`, then a dry run)."""
    for suite in made:
        print(f"{suite.split:5} {suite.path}  ({len(suite.task_ids)} tasks: {', '.join(suite.task_ids)})")
    for warning in warnings:
        print(warning, file=sys.stderr)
    by_split = {suite.split: suite.path for suite in made}
    print(f"\n{first}Dry run: {run_py()} --suite {by_split['train']} --val {by_split['val']} "
          f"--skill-dir {skill_dir}")
    return 0

@dataclass
class Context:
    """What a command gets: its flags and settings, and (for the commands that run agents) the launcher, the
    agents, the daily budget and the progress display."""
    args: argparse.Namespace
    settings: Settings
    progress: object
    launcher: object = None
    agents: object = None
    daily: object = None

    @property
    def split_ok(self) -> bool:
        return self.args.allow_split_mismatch

    def load(self, name: str | None, flag: str, *, allow_mismatch: bool | None = None) -> Suite:
        return load(self.settings, name, flag,
                    allow_mismatch=self.split_ok if allow_mismatch is None else allow_mismatch)


def mine(c: Context, actions, run_py: Path) -> int:
    from mutator.mining.cli import mine_command, watch_command
    if c.args.watch:
        return watch_command(c.args, c.settings, actions, run_py)
    return mine_command(c.args, c.settings)


def lint(c: Context) -> int:
    from mutator.critic.guards import limits_from
    from mutator.critic.lint import lint_command
    code, text = lint_command(c.args.lint, c.args.against, limits_from(c.settings))
    print(text, file=sys.stderr if code == 2 else sys.stdout)
    return code


def export(c: Context) -> int:
    from mutator.after.export import export as write_export
    out = c.args.out or c.settings.data_dir / "exports"
    try:
        written = write_export(c.settings.db_path, c.args.export, c.args.format, out)
    except sqlite3.DatabaseError as err:
        raise (store_problem(c.settings.db_path, err) or err) from None
    except OSError as err:
        raise ConfigError(f"{out}: not writable ({err.strerror}); pass --out DIR, a writable folder for "
                          f"the export") from None
    print("\n".join(str(path) for path in written))
    return 0


def export_report(c: Context) -> int:
    """export-report RUN [--out FILE]: the run's self-contained HTML report (mutator/after/report_html.py)."""
    from mutator.after.report_html import write
    try:
        written = write(c.settings.data_dir, c.args.export_report, c.args.out)
    except sqlite3.DatabaseError as err:
        raise (store_problem(c.settings.db_path, err) or err) from None
    print(written)
    return 0


def annotate(c: Context) -> int:
    """--annotate RUN_OR_ATTEMPT [--name] [--tags] [--note]: the researcher's notes (the dashboard edits
    through this)."""
    from mutator.store.db import connect
    from mutator.store.notes import annotate as write
    row = write(connect(c.settings.data_dir / "mutator.db"), c.args.annotate, name=c.args.name,
                tags=c.args.tags, note=c.args.note)
    print(f"{row['target']}: name {row.get('name') or '—'} · tags {row.get('tags') or '—'} · "
          f"note {len(row.get('note') or '')} characters")
    return 0


def check(c: Context) -> int:
    from mutator.after.cli import check_command
    from mutator.store.liveness import check_key
    from mutator.store.lookups import check_heartbeat
    skill = c.args.check.resolve()
    hold(c.settings, check_key(skill), what=f"the health check of {skill}", beat=check_heartbeat,
         subject=str(skill))
    return check_command(c.args, c.settings, c.agents, c.launcher, c.progress, c.daily)


def hold_champion(settings: Settings, run_id: str) -> None:
    """A fixed champion: never tested while its loop runs."""
    from mutator.store.lookups import test_run_heartbeat
    if settings.db_path.is_file() and KEY.match(run_id):
        hold(settings, run_id, what=f"run {run_id}", beat=test_run_heartbeat, subject=run_id)


def test_run(c: Context) -> int:
    from mutator.validity.report import render
    from mutator.validity.testrun import test_run as measure
    args, agents = c.args, c.agents
    suite = c.load(args.suite, "--test-run --suite")
    hold_champion(c.settings, args.test_run)
    result = measure(c.settings, args.test_run, suite, agent_argv=list(agents.build_argv),
                     launcher=c.launcher, progress=c.progress, network=agents.network,
                     build_id=agents.build_id, control=not args.no_control, budget=budgets(c),
                     api_check=api_check_for(c, [suite]))
    train = result["train_composite"]
    train_text = "—" if train is None else format(train, ".4f")
    print(f"Test of {args.test_run} on {suite.name}: champion {result['champion'][:12]} composite "
          f"{result['composite']:.4f} (eval {result['eval']:.3f}) vs seed {result['seed_composite']:.4f} "
          f"(eval {result['seed_eval']:.3f}); train composite {train_text}; "
          f"{result['cells_run']} cells run" + (" (all cached)" if not result["cells_run"] else "")
          + f"; ${result['spent_usd'] or 0.0:.4f} spent (added to {args.test_run}'s spend)")
    print(render(result["report"]))
    if result.get("control_failed"):
        from eval.errors import ControlFailed
        failed = result["control_failed"]
        raise ControlFailed(f"the champion-vs-seed report above is complete and stored (test run "
                            f"#{result['test_run']}); the no-skill control is not: {failed['cause']} "
                            "Pass --no-control to test without it; a re-run of the same command redoes only "
                            "its cells that are not results (infra_error, grader_error)")
    return 0


def compare(c: Context) -> int:
    from mutator.validity.comparerun import compare_runs, render
    args, agents = c.args, c.agents
    suite = c.load(args.suite, "--compare --suite")
    for run_id in args.compare:   # fixed champions: never while either loop runs
        hold_champion(c.settings, run_id)
    pair = compare_runs(c.settings, *args.compare, suite, agent_argv=list(agents.build_argv),
                        launcher=c.launcher, progress=c.progress, network=agents.network,
                        build_id=agents.build_id, budget=budgets(c))
    print(render(pair))
    return 0


def api_check_for(c: Context, suites: list[Suite]):
    """A real command's API check of a stored run (mutator/round/api_check.py), as (db, run_id, contract) ->
    None; nothing for a dry run."""
    if not c.args.real:
        return lambda *_: None
    from mutator.round import api_check

    def run_check(db, run_id: str, contract) -> None:
        found = api_check.targets(launch=c.agents.launch, build_models=contract.model.split(","),
                                  mutator_model=None, suites=suites)
        api_check.check(found, db=db, run_id=run_id, pricing=c.settings.pricing, budget=budgets(c),
                        say=c.progress.say)
    return run_check


def budgets(c: Context):
    """--budget-usd (on the run's spend) and the store's daily budget, as every spending command asks them."""
    from mutator.after.spend import combine
    from mutator.round.budget import Budget
    return combine(Budget(c.args.budget_usd, c.settings.pricing) if c.args.budget_usd is not None else None,
                   c.daily)


def plan(c: Context) -> int:
    from mutator.validity.plan import plan as estimate
    from mutator.validity.plan import render_plan
    args = c.args
    train, val = c.load(args.suite, "--suite"), c.load(args.val, "--val")
    check_skill_dir_given(args.skill_dir, c.settings.skill_dir, [train, val])
    c.progress.say_banner()   # the dry-run line, if any: --plan has no progress of its own
    print(render_plan(estimate(c.settings, train=train, val=val,
                               holdout=c.load(args.holdout, "--holdout") if args.holdout else None,
                               build_id=c.agents.build_id, mutator_id=c.agents.mutator_id)))
    return 0


def aa(c: Context) -> int:
    from mutator.validity.aa import AARun
    from mutator.validity.aa import summary as aa_summary
    s, args = c.settings, c.args
    if len(s.models) > 1:
        raise ConfigError(f"--aa measures the gate on one eval model; --model lists {len(s.models)} "
                          f"({', '.join(s.models)}): run one --aa per model")
    val, train = c.load(args.val, "--val"), c.load(args.suite, "--suite") if args.suite else None
    check_skill_dir_given(args.skill_dir, s.skill_dir, [suite for suite in (train, val) if suite])
    check_seed_skill(s.skill_dir)
    check_other_skills(s)
    run = AARun(s, val, train=train,
                build_argv=c.agents.build_argv, build_id=c.agents.build_id, launcher=c.launcher,
                progress=c.progress, budget=budgets(c))
    aa_id = run.execute(args.aa)
    print(aa_summary(run.session.db, aa_id))
    print(f"\n{run.session.tally.cells_run} cells run by this command. Record: {s.db_path}")
    return 0


def evolve(c: Context) -> int:
    """The loop itself: the default command."""
    from mutator.after.cli import propose_finished
    from mutator.after.spend import run_spend
    from mutator.round.loop import Loop
    from mutator.round.session import Suites, check_roles
    from mutator.round.summary_table import print_summary
    s, args = c.settings, c.args
    suites = Suites(train=c.load(args.suite, "--suite", allow_mismatch=True),
                    val=c.load(args.val, "--val", allow_mismatch=True),
                    holdout=c.load(args.holdout, "--holdout", allow_mismatch=True) if args.holdout else None)
    check_roles(suites)  # one suite in two roles is the worse mistake: name it first
    check_skill_dir_given(args.skill_dir, s.skill_dir, [suites.train, suites.val])
    for suite, flag in ((suites.train, "--suite"), (suites.val, "--val"), (suites.holdout, "--holdout")):
        if suite:
            check_split(suite, flag, allow_mismatch=c.split_ok)
    check_seed_skill(s.skill_dir)
    check_other_skills(s)
    strategy = make_strategy(s.strategy, s.strategy_opts)
    loop = Loop(s, suites, c.agents, c.launcher, strategy, progress=c.progress,
                budget=budgets(c),
                retry_failed=args.retry_failed)
    run_id = loop.execute()
    db, tally = loop.session.db, loop.session.tally
    print_summary(db, run_id, val_query_warn=s.val_query_warn, data_dir=s.data_dir,
                  spend=run_spend(db, run_id))
    regraded = ""
    if tally.cells_regraded:
        regraded = f" ({tally.cells_regraded} graded again from their agents' kept work)"
    print(f"\n{tally.cells_run} cells run by this command{regraded}" + (
        " — nothing new: the run resumed complete" if tally.cells_run == 0 and not regraded else "")
          + f". Record: {s.db_path}")
    if suites.holdout:
        # the run's own
        beside = ("--with-skills", args.with_skills) if getattr(args, "with_skills", None) else ()
        print(f"Test the champion: {next_step(args, '--test-run', run_id, *beside)}")
    print(propose_finished(s, run_id, where_flags(args).strip()))
    return 0
