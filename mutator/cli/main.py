"""run.py's body: parse the flags, run the first command of the registry that wants them, and map the
errors every command may raise to their exit codes in one place: each error carries its own (eval/errors.py).

Exit codes: 0 done, 2 bad input (the message names the flag or file), 3 a budget or disk stop, 4 the solve
phase found the model not capable, 5+ an evaluation stop (its own code), 130 Ctrl-C (resume by re-running).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eval.environment import PASS_ENV
from eval.errors import SkillMutatorError
from mutator.after.cli import decide, wants_decision
from mutator.cli import commands, harbor, scaffold
from mutator.cli.agents import (
    DRY_RUN,
    NOISY,
    check_prices,
    fake_agents,
    named_suites,
    preflight_agents,
    real_agents,
)
from mutator.cli.commands import HELD, Context, import_evals_command, reap_orphans
from mutator.cli.flags import FLAG_ATTRS, absolute_paths, parser
from mutator.cli.parse import parse
from mutator.config import ROOT, ConfigError, load_settings
from mutator.round.preflight import check_agent_flags, check_executor, check_finite
from mutator.store.db import store_problem
from sandbox import get_launcher


@dataclass(frozen=True)
class Command:
    """One mode of run.py: it runs when `wants(args)` is true and no earlier command wanted them."""
    name: str
    wants: Callable[[argparse.Namespace], bool]
    run: Callable[[Context], int]


# commands that need no agents, in the order their flags are tested
OFFLINE = (
    Command("mine", lambda a: bool(a.mine_traces or a.watch),
            lambda c: commands.mine(c, parser()._actions, ROOT / "run.py")),
    Command("lint", lambda a: bool(a.lint), commands.lint),
    Command("export", lambda a: bool(a.export), commands.export),
    Command("export-report", lambda a: bool(a.export_report), commands.export_report),
    Command("annotate", lambda a: bool(a.annotate), commands.annotate),
    Command("decide", wants_decision, lambda c: decide(c.args, c.settings)),
    Command("validate-suite", lambda a: bool(a.validate_suite), harbor.validate_command),
)
# commands that run agents; the loop itself is the default
AGENTS = (
    Command("check", lambda a: bool(a.check), commands.check),
    Command("test-run", lambda a: bool(a.test_run), commands.test_run),
    Command("compare", lambda a: bool(a.compare), commands.compare),
    Command("plan", lambda a: bool(a.plan), commands.plan),
    Command("aa", lambda a: a.aa is not None, commands.aa),
    Command("loop", lambda a: True, commands.evolve),
)


def first(registry: tuple[Command, ...], args: argparse.Namespace) -> Command | None:
    return next((command for command in registry if command.wants(args)), None)


def check_flags(args: argparse.Namespace) -> None:
    if args.budget_usd is not None and not args.budget_usd > 0:
        raise ConfigError(f"--budget-usd must be a positive number of USD, got {args.budget_usd}")
    check_finite(budget_usd=args.budget_usd, daily_budget_usd=args.daily_budget_usd,
                 max_seconds=args.max_seconds)
    check_agent_flags(real=args.real, agent=args.agent, agent_cmd=args.agent_cmd,
                      mutator_agent=args.mutator_agent)
    if args.against and not args.lint:
        raise ConfigError("--against PARENT_DIR goes with --lint SKILL_DIR (review SKILL_DIR as a candidate "
                          "made from PARENT_DIR)")


def apply_run_defaults(c: Context) -> int | None:
    """--compare and --test-run take RUN's holdout and agent flags unless typed (an unknown run: exit 2)."""
    if not (c.args.compare or c.args.test_run):
        return None
    if c.args.compare:
        from mutator.validity.comparerun import apply_compare_defaults
        apply_compare_defaults(c.settings, c.args)
    if c.args.test_run:
        from mutator.validity.testrun import apply_run_defaults as apply_test_defaults
        apply_test_defaults(c.settings, c.args)
    if c.args.fake_noise and c.args.fake_noise != c.settings.fake_noise:   # the run's own, as recorded
        c.settings = dataclasses.replace(c.settings, fake_noise=c.args.fake_noise)
    return None


def no_sandbox(sandbox: str, *, refuse: bool) -> Callable[[str], None]:
    """What a real command does when --sandbox could not use bwrap: refused (exit 2, before any cell)
    unless it runs no agent (--plan), which only warns. Real agents never run bare unless `--sandbox none`
    says so."""
    where = "" if sandbox == "auto" else " outside Harbor tasks"

    def fallback(why: str) -> None:
        if refuse:
            raise ConfigError(f"--sandbox {sandbox}: no sandbox works here, and real agents never run as "
                              f"bare processes unless asked ({why}). Install bubblewrap (Debian/Ubuntu: "
                              "`apt-get install bubblewrap`), or pass --sandbox none to accept the risk: the "
                              f"agents{where} then run with your user's rights (docs/guides/sandbox.md)")
        print(f"warning: no sandbox: agents{where} would run as bare processes (--sandbox {sandbox} could "
              f"not use bwrap: {why})", file=sys.stderr)
    return fallback


NO_SANDBOX = ("warning: --sandbox none: the agents run as bare processes with your user's rights (nothing "
              "they start outlives its cell, but they can read and write what you can)")


def with_launcher(c: Context) -> Context:
    """The launcher (a sandbox that cannot start is refused here, before any cell), orphans reaped. Real
    agents never fall back to bare processes: only `--sandbox none`, said outright, runs them so (with a
    warning)."""
    from mutator.cli.logs import route_library_logs
    route_library_logs(c.settings.data_dir)   # a key proxy's dropped connections: the log, not the terminal
    real = bool(c.args.real)
    fallback = no_sandbox(c.settings.sandbox, refuse=not c.args.plan) if real else None
    c.launcher = get_launcher(c.settings.sandbox, on_fallback=fallback)
    if real and c.settings.sandbox == "none":
        print(NO_SANDBOX, file=sys.stderr)
    reap_orphans(c.settings.data_dir)
    return c


def with_agents(c: Context) -> Context:
    """The agents (real or fake) and the daily budget, for a command that runs agents."""
    from mutator.after.spend import daily_guard
    args = c.args
    agent_flags = (("--agent", args.agent), ("--agent-cmd", args.agent_cmd),
                   ("--mutator-agent", args.mutator_agent), ("--mutator-cmd", args.mutator_cmd))
    typed = [flag for flag, value in agent_flags if value]
    if args.real and args.fake_noise == "realistic":
        raise ConfigError("--fake-noise realistic makes the dry run's fake build agent noisy; real agents "
                          "bring their own noise: drop --fake-noise or --real")
    if typed and not args.real:
        raise ConfigError(f"{', '.join(typed)} choose(s) real agents, which only run with --real; add --real "
                          f"(without it the zero-spend fakes run)")
    build_only = bool(args.test_run or args.compare or args.check or args.aa is not None)   # no mutator runs
    check_prices(c.settings, args)   # every model, dry run or real, before any cell of one of them
    c.agents = real_agents(c.settings, args, check=not args.plan,   # --plan runs no agent, spends nothing
                           build_only=build_only) if args.real else \
        fake_agents(c.settings.skill_dir, c.settings.fake_noise)
    if args.real and not args.plan:
        preflight_agents(c.agents, c.launcher, build_only=build_only, suites=named_suites(c.settings, args))
    if c.settings.executor == "ray" and not args.plan:
        join_ray(c.settings)
    # every command that runs agents (the loop, --check, --test-run, --compare, --plan, --aa)
    if not args.real:   # said before its first progress line, never before an input error
        c.progress.announce(DRY_RUN + (NOISY if c.settings.fake_noise == "realistic" else ""))
    c.daily = daily_guard(c.settings, args.daily_budget_usd)  # warns at 80 %, BudgetStop at 100 %
    return c


def join_ray(settings) -> None:
    """--executor ray: start the private instance or join the cluster now, within --ray-timeout-s, and check
    that one cell fits a node, before the run is opened; then say where cells go."""
    from mutator.round.evaluations import executor_for
    executor = executor_for(settings, None)
    executor.connect()
    print(executor.describe(), file=sys.stderr)


def dispatch(args: argparse.Namespace) -> int:
    from mutator.round.progress import Progress
    if args.import_evals:
        return import_evals_command(args)
    if args.import_harbor:
        return harbor.import_command(args)
    if args.new_suite:
        return scaffold.new_suite_command(args)
    check_flags(args)
    settings = load_settings({attr: getattr(args, attr) for attr in FLAG_ATTRS}, config_file=args.config)
    # every child's allow-list reads it (eval/environment.py)
    os.environ[PASS_ENV] = ",".join(settings.pass_env)
    check_executor(settings.executor, ray_address=settings.ray_address,
                   ray_timeout_typed=args.ray_timeout_s is not None)
    c = Context(args, settings, Progress())
    if command := first(OFFLINE, args):
        return command.run(c)
    if args.serve:
        from mutator.server.cli import dashboard
        code = dashboard(settings, host=args.host, port=args.port, config=args.config,
                         foreground=not (args.suite or args.val or args.test_run or args.compare),
                         allow_hosts=args.allow_host)
        if code is not None:
            return code
    if (code := apply_run_defaults(with_launcher(c))) is not None:
        return code
    return first(AGENTS, args).run(with_agents(c))


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    absolute_paths(args)
    if args.solve is not None:
        args.solve = "on" if args.solve else "off"
    try:
        return dispatch(args)
    except SkillMutatorError as err:   # every error we raise on purpose: eval/errors.py draws the tree
        print(f"{err.label}: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("\nstopped; re-run the same command to resume (finished cells are kept)", file=sys.stderr)
        return 130
    except sqlite3.DatabaseError as err:
        if isinstance(err, sqlite3.OperationalError) and "locked" in str(err):
            raise
        problem = store_problem((args.data_dir or Path("data").absolute()) / "mutator.db", err)
        if problem is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        return 2
    finally:
        while HELD:
            HELD.pop()()
