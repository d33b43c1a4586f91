#!/usr/bin/env python3
"""The one launcher: merge config + flags, pick fake or real agents, run the loop or a test run.

Default is a zero-spend dry run with the fakes. Re-running the same command resumes the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

# sqlite_utils imports pandas, when installed, only to map pd.Timestamp to TEXT; that probe costs every CLI call
# ~0.5 s. Nothing inserts pandas values (pandas is used, and imported normally, by the export alone), so the probe
# is answered "not installed" while sqlite_utils loads.
if "pandas" not in sys.modules:
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        import sqlite_utils  # noqa: E402, F401
    finally:
        del sys.modules["pandas"]

from eval.cost import PricingError  # noqa: E402
from eval.environment import PASS_ENV  # noqa: E402
from eval.suite import Suite, SuiteError, load_suite  # noqa: E402
from mutator.after.cli import SuiteAction, decide, wants_decision  # noqa: E402
from mutator.budget import BudgetStop  # noqa: E402
from mutator.config import ConfigError, Settings, load_settings, resolve_suite_path  # noqa: E402
from mutator.failures import EvaluationStop  # noqa: E402
from mutator.preflight import (  # noqa: E402
    check_agent_flags,
    check_executor,
    check_finite,
    check_seed_skill,
    check_split,
)
from mutator.solve import SolveAbort  # noqa: E402
from mutator.store.db import DiskFull, StoreError, store_problem  # noqa: E402
from mutator.store.lock import KEY, LockHeld, RunLock  # noqa: E402
from sandbox import SandboxError, get_launcher  # noqa: E402
from strategies import StrategyError, make_strategy  # noqa: E402

NOT_YET = "not available yet"
HELD: list = []  # release/stop callables of the run locks and heartbeats this command holds (mutator/store/)


def hold(settings: Settings, key: str, *, what: str, beat_sql: str, beat_params: list) -> None:
    """One writer per run: take its lock (LockHeld names the holder) and beat the record's heartbeat."""
    from mutator.store.liveness import Heartbeat
    HELD.append(RunLock.acquire(settings.data_dir, key, what=what).release)
    HELD.append(Heartbeat(settings.db_path, beat_sql, beat_params).stop)


def user_path(text: str) -> Path:
    return Path(os.path.expanduser(text))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Evolve an agent skill against task suites. Without --real this is a zero-spend dry run "
                    "with fake agents. Re-running the same command resumes the same run.",
        epilog="examples:\n"
               "  python run.py --suite clean-train --val clean-val --holdout clean-test --rounds 6 --replicates 4\n"
               "  python run.py --test-run RUN_ID          (on the run's --holdout, with its own agents)\n"
               "  python run.py --compare RUN_A RUN_B --suite clean-test   (both champions, paired by task)\n"
               "  python run.py --lint SKILL_DIR [--against PARENT_DIR]\n"
               "Every setting defaults from config.json, then SKILL_MUTATOR_<KEY> environment variables.")
    run = p.add_argument_group("what to run")
    run.add_argument("--suite", action=SuiteAction, help="train suite: a name from config.json 'suites' or a path "
                                                         "(with --test-run or --compare: the suite to test on; with --check: "
                                                         "repeat it to check on several suites)")
    run.add_argument("--val", help="validation suite (required for a run; must differ from --suite)")
    run.add_argument("--holdout", help="the run's default test suite; the loop never evaluates it")
    run.add_argument("--skill-dir", type=Path, help="the seed skill folder (default: config skillDir)")
    run.add_argument("--test-run", metavar="RUN", help="measure RUN's current champion (and its seed) on --suite; "
                                                       "cached and appended to the run's test timeline; also "
                                                       "measures the suite with no skill installed (the control)")
    run.add_argument("--no-control", action="store_true",
                     help="with --test-run: skip the no-skill control (seed vs none, champion vs none)")
    run.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"),
                     help="measure both runs' champions on --suite (default: RUN_A's --holdout) through the cached "
                          "test run, and print the paired Δ (B − A) ± SE, 95%% CI, sign test and McNemar: the "
                          "dashboard's Compare figures")
    run.add_argument("--export", metavar="RUN", help="write RUN's attempts, evaluations, cells, tests and test runs "
                                                     "as tables for notebooks (--format, --out); spends nothing")
    run.add_argument("--format", choices=("csv", "parquet"), default="csv",
                     help="--export file format (default csv; parquet needs pyarrow)")
    run.add_argument("--out", type=Path, help="--export output folder (default: <data-dir>/exports); with "
                                              "--import-evals, the folder to write the imported suites into")
    run.add_argument("--import-evals", type=Path, metavar="EVALS_JSON",
                     help="turn a skill-creator eval set (SKILL_DIR/evals/evals.json) into judge-graded suites "
                          "<out>/<name>-train, -val and -test, split by --seed; needs --out suites/NAME")
    run.add_argument("--aa", type=int, metavar="N", help="A/A run: N byte-identical copies of the seed on --val, each "
                                                         "gated against its own fresh re-evaluation of the seed; "
                                                         "prints the false-reject and beat +t·SE rates with exact "
                                                         "binomial 95%% CIs beside the design")
    run.add_argument("--allow-split-mismatch", action="store_true",
                     help="use a suite in a role its suite.md 'split:' does not name (e.g. a val suite as train)")
    run.add_argument("--lint", type=Path, metavar="SKILL_DIR", help="print the critic's rows for a skill and exit 0 "
                                                                    "when all pass (alone: the Agent Skills spec; "
                                                                    "with --against: the full review); spends nothing")
    run.add_argument("--against", type=Path, metavar="PARENT_DIR", help="--lint: review SKILL_DIR as a candidate "
                                                                       "made from PARENT_DIR")
    run.add_argument("--plan", action="store_true", help="print the minimum detectable effect and estimated cost "
                                                         "of a run on --suite/--val/--holdout; spends nothing")
    mining = p.add_argument_group("from real use: mine transcripts into suites (see README 'Mining traces')")
    mining.add_argument("--mine-traces", type=user_path, metavar="DIR",
                        help="mine agent transcripts (~/.claude/projects, a project folder, or plain trace JSONL) "
                             "for requests where --skill-dir was used into judge-graded suites <out>-train/-val/-test "
                             "plus <out>/mining.json; needs --out suites/NAME; split by --seed")
    mining.add_argument("--since", metavar="DATE", help="--mine-traces/--watch: only requests at or after DATE "
                                                       "(2026-11-01 or 2026-11-01T12:00, UTC unless given)")
    mining.add_argument("--redact", action="store_true", help="--mine-traces/--watch: keep a request holding a "
                                                              "secret-looking value with the value replaced by "
                                                              "[REDACTED] (default: drop it)")
    mining.add_argument("--judge", action="store_true", help="--mine-traces/--watch: keep only requests the judge can "
                                                             "grade (the fake judge; the real one with --real, which "
                                                             "spends)")
    mining.add_argument("--watch", type=user_path, metavar="DIR",
                        help="opt-in trigger: every --every, mine DIR; when --min-traces new eligible requests exist, "
                             "rebuild the --out suites (test split frozen), run the loop with the other run flags "
                             "given, and leave a proposal (never deploys); each tick is a row in 'triggers'")
    mining.add_argument("--once", action="store_true", help="--watch: one tick, then exit (for cron)")
    mining.add_argument("--every", default="6h", metavar="DURATION", help="--watch: time between ticks "
                                                                          "(default 6h; 30m, 90s, 1d)")
    mining.add_argument("--min-traces", type=int, default=20, metavar="N",
                        help="--watch: new eligible requests needed to run (default 20)")
    loop = p.add_argument_group("the loop")
    loop.add_argument("--rounds", type=int, help="total rounds (a finished run with fewer is extended)")
    loop.add_argument("--replicates", type=int, help="cells per task per evaluation")
    loop.add_argument("--strategy", help="search strategy id (greedy)")
    loop.add_argument("--strategy-opts", type=json.loads, metavar="JSON", help="strategy options as a JSON object")
    loop.add_argument("--min-improvement", type=float, help="centre of the keep gate (score.minImprovement)")
    loop.add_argument("--gate-z", type=float, help="noise calibration of the gate; 0 = raw minImprovement gate")
    loop.add_argument("--gate-method", choices=("signflip", "t"), help="how the gate's critical value t is made: "
                      "signflip (default; sign flips of the candidate's own deltas, a false-reject rate of "
                      "1 − Φ(gateZ) for any symmetric noise) or t (the Student-t quantile, exact for normal deltas)")
    loop.add_argument("--seed", type=int, help="seed of the run's random choices")
    loop.add_argument("--model", help="build model id (priced from config.json 'pricing'); several, comma-separated "
                                      "(a,b), measure every cell on each model: each model's composite against the "
                                      "seed on that model, the run's the mean over models, the gate paired per "
                                      "(task, model)")
    loop.add_argument("--mutator-model", help="mutator model id")
    loop.add_argument("--max-turns", type=int, help="turn cap for each agent")
    loop.add_argument("--concurrency", type=int, help="cells run at once")
    loop.add_argument("--build-timeout-ms", type=int, help="watchdog silence budget before an agent's stream grows")
    loop.add_argument("--build-heartbeat-ms", type=int, help="watchdog budget between stream growths")
    loop.add_argument("--grader-timeout-ms", type=int, help="a grader running longer is killed; the cell is a "
                                                            "grader_error, re-graded when the run resumes")
    loop.add_argument("--cell-timeout-ms", type=int, help="wall-clock cap per cell on top of the watchdog "
                                                          "(default 30 min); the cell is a timeout")
    loop.add_argument("--max-output-mb", type=float, help="cap on each agent output file (stream, stdout, stderr; "
                                                          "default 20); past it the agent is killed, agent_error")
    loop.add_argument("--infra-retries", type=int, help="times an infra_error cell (API outage, rate limit, network, "
                                                        "harness fault) is retried in place (default 1)")
    loop.add_argument("--max-failed-share", type=float, help="an evaluation with more failed cells than this share "
                                                             "is unhealthy: no verdict (default 0.25)")
    loop.add_argument("--propose-min-delta", type=float, help="propose a champion only when its val composite beats "
                                                              "the seed's by this much (default 0.02)")
    loop.add_argument("--retry-failed", action="store_true",
                      help="on resume, run again the failed cells (agent errors and timeouts too) of the evaluations "
                           "no verdict rests on yet: the seed's before round 1, and the unfinished round's")
    view = p.add_argument_group("the mutator's view and validity")
    view.add_argument("--solve", action=argparse.BooleanOptionalAction, default=None,
                      help="solve phase before round 0: the mutator model solves each train task bare; its graded "
                           "transcripts go to solve/ (default: on with --real, off for fakes)")
    view.add_argument("--solve-attempts", type=int, help="solve passes per task; imperfect tasks retry (default 3)")
    view.add_argument("--solve-min-score", type=float, help="abort before any seed spend if a task's best solve "
                                                            "score stays below this (default 0.7)")
    view.add_argument("--meta-skill-every", type=int, help="every N rounds distil the attempt log into lessons "
                                                           "shown in later briefings (0 = off)")
    view.add_argument("--confirm", action="store_true", default=None,
                      help="winner's-curse guard: re-evaluate a keep and the incumbent on fresh val replicates; "
                           "the keep stands only if the confirmed delta still passes the gate")
    where = p.add_argument_group("where")
    where.add_argument("--data-dir", type=Path, help="holds mutator.db, genomes, cells (default ./data)")
    where.add_argument("--config", type=Path, help="config file (default ./config.json)")
    where.add_argument("--pass-env", action="append", metavar="NAME",
                       help="pass the environment variable NAME to agents and graders (repeatable); they get only "
                            "an allow-list otherwise (PATH, locale, HOME in the cell, SM_*)")
    where.add_argument("--executor", choices=("local", "ray"),
                       help="where cells run: local (default: subprocesses of this machine) | ray (each cell a Ray "
                            "task with its own bundle of inputs; see README 'Past one machine'); the run id and "
                            "the cells are the same either way")
    where.add_argument("--ray-address", metavar="ADDRESS",
                       help="--executor ray: '' (default) starts a private local Ray instance; 'auto' or HOST:PORT "
                            "joins a running cluster (`ray start --head`)")
    where.add_argument("--sandbox", help="how agents are launched: auto (default: bwrap when it is installed and "
                                          "works, else none) | bwrap (bubblewrap: each agent sees only its cell) | "
                                          "none (bare processes)")
    real = p.add_argument_group("real agents (they spend money: see README 'Real runs')")
    real.add_argument("--real", action="store_true", help="use real model agents instead of the zero-spend fakes")
    real.add_argument("--agent", choices=AGENT_IDS,
                      help="build-agent backend: our SDK tool loop, the claude CLI, or --agent-cmd (default anthropic, "
                           "or command when --agent-cmd is given)")
    real.add_argument("--agent-cmd", metavar="CMD", help="your own build agent: a program following the agent "
                                                         "process contract, e.g. 'python my_agent.py' (implies "
                                                         "--agent command)")
    real.add_argument("--mutator-agent", choices=AGENT_IDS, help="mutator backend (default: command with "
                                                                 "--mutator-cmd, else --agent; anthropic when "
                                                                 "--agent is command)")
    real.add_argument("--mutator-cmd", metavar="CMD", help="your own mutator (config mutatorCmd): a program that "
                                                           "edits ./skill/ and writes ./result.json; independent of "
                                                           "--agent-cmd")
    real.add_argument("--budget-usd", type=float, metavar="USD", help="stop cleanly before the run's committed "
                                                                      "spend would pass USD; resume with a higher cap")
    after = p.add_argument_group("after the run: proposals, deploy, health checks, spend (see README)")
    after.add_argument("--propose", metavar="RUN", help="make RUN's champion a proposal (a finished run does this "
                                                        "itself); never deploys")
    after.add_argument("--accept", type=int, metavar="PROPOSAL", help="deploy a proposed champion into --to "
                                                                      "SKILL_DIR (atomic; the previous version kept)")
    after.add_argument("--reject", type=int, metavar="PROPOSAL", help="reject a proposed champion")
    after.add_argument("--note", help="--accept: a note kept with the decision")
    after.add_argument("--reason", help="--reject: the reason kept with the decision")
    after.add_argument("--to", type=Path, metavar="SKILL_DIR", help="--accept: the skill folder to deploy into")
    after.add_argument("--rollback", type=Path, metavar="SKILL_DIR", help="restore the version the last deploy into "
                                                                          "SKILL_DIR replaced, byte for byte")
    after.add_argument("--check", type=Path, metavar="SKILL_DIR", help="health check: evaluate SKILL_DIR as it is on "
                                                                       "each --suite; exits 6 on REGRESSED")
    after.add_argument("--parallel", type=int, metavar="N", help="--check: cells run at once (default: concurrency)")
    after.add_argument("--max-seconds", type=float, metavar="S", help="--check: stop after S seconds, keeping "
                                                                      "what was scored (exit 5)")
    after.add_argument("--audit", metavar="RUN", help="write RUN's attempts, verdicts, gate figures, decisions and "
                                                      "costs to --out FILE.json or FILE.csv")
    after.add_argument("--daily-budget-usd", type=float, metavar="USD",
                       help="record the store's daily spend cap (0 clears it): warn at 80 %%, stop new spending at "
                            "100 %% (UTC days)")
    dash = p.add_argument_group("dashboard")
    dash.add_argument("--serve", action="store_true", help="start the dashboard (alone: serve in the foreground; "
                                                           "with a run: in the background, then run the loop); "
                                                           "a healthy dashboard already on the port is reused")
    dash.add_argument("--port", type=int, default=5210, help="dashboard port (default 5210)")
    dash.add_argument("--host", default="127.0.0.1", help="dashboard address (default 127.0.0.1, loopback only)")
    dash.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                      help="with a non-loopback --host: a Host name the dashboard answers besides the bind address "
                           "and localhost (repeat it); any other Host is refused")
    return p


FLAG_ATTRS = ("rounds", "replicates", "strategy", "strategy_opts", "min_improvement", "gate_z", "gate_method", "seed", "model",
              "mutator_model", "max_turns", "concurrency", "build_timeout_ms", "build_heartbeat_ms",
              "grader_timeout_ms", "data_dir", "skill_dir", "sandbox", "solve", "solve_attempts", "solve_min_score",
              "meta_skill_every", "confirm", "cell_timeout_ms", "max_output_mb", "infra_retries", "max_failed_share",
              "propose_min_delta", "pass_env", "executor", "ray_address")


AGENT_IDS = ("anthropic", "claude-cli", "command")


def real_agents(settings: Settings, args: argparse.Namespace, *, build_only: bool = False):
    """The real backends, checked before any spend: prices for every model, API key / CLI / command present."""
    import os

    from eval.agents import AgentSetupError
    from eval.agents.choice import backend_for, choose
    from eval.cost import price_for
    from mutator.loop import Agents
    for model, attr, key in (*((m, "model", "model") for m in settings.models),   # every eval model is priced
                             (settings.mutator_model, "mutator_model", "mutatorModel")):
        flag = "--" + attr.replace("_", "-")
        try:
            price_for(settings.pricing, model)  # PricingError names the model and the config key to add
        except PricingError as err:
            how = (f"{flag} {model}" if getattr(args, attr) else
                   f"the {key} {model!r} from {settings.config_file} or SKILL_MUTATOR_{attr.upper()} (pass {flag} "
                   f"to choose another)")
            raise PricingError(f"{how}: {err}") from None
    try:
        # a typed --mutator-agent other than command outranks config mutatorCmd (flags win over config)
        configured = settings.mutator_cmd if args.mutator_agent in (None, "command") else ""
        build_choice, mutator_choice = choose(
            agent=args.agent, agent_cmd=args.agent_cmd, mutator_agent=args.mutator_agent,
            mutator_cmd=args.mutator_cmd or configured or None,
            mutator_cmd_source="--mutator-cmd" if args.mutator_cmd else f"config mutatorCmd ({settings.config_file})")
        build = backend_for(build_choice, config_file=settings.config_file, environ=os.environ)
        mutator = build if build_only else backend_for(mutator_choice, config_file=settings.config_file,
                                                       environ=os.environ)
    except AgentSetupError as err:
        raise ConfigError(str(err)) from None
    # the solve phase runs the mutator's backend as a build agent with the mutator model: only ours can
    solver = mutator if mutator_choice.can_solve else None
    return Agents(build_argv=build.argv("build"), build_id=build.implementation("build"),
                  mutator_argv=mutator.argv("mutator"), mutator_id=mutator.implementation("mutator"), network=True,
                  solve_argv=solver.argv("build") if solver else None,
                  solve_id=solver.implementation("build") if solver else "", solve_by_default=solver is not None,
                  mutator_how=mutator_choice.how,
                  launch={"real": True, "agent": build_choice.backend, "agent_cmd": build_choice.command,
                          "mutator_agent": mutator_choice.backend, "mutator_cmd": mutator_choice.command})


def fake_agents():
    from mutator.loop import Agents

    def implementation(script: Path) -> str:
        return f"fake@{hashlib.sha256(script.read_bytes()).hexdigest()[:10]}"
    build, mutator = ROOT / "fakes" / "fake_agent.py", ROOT / "fakes" / "fake_mutator.py"
    return Agents(build_argv=(sys.executable, str(build)), build_id=implementation(build),
                  mutator_argv=(sys.executable, str(mutator)), mutator_id=implementation(mutator),
                  solve_argv=(sys.executable, str(build)), solve_id=implementation(build), launch={"real": False})


def where_flags(args: argparse.Namespace) -> str:
    """The --config and --data-dir this command was given, for a printed command to carry."""
    import shlex
    return " ".join(f"{flag} {shlex.quote(str(getattr(args, attr)))}"
                    for flag, attr in (("--config", "config"), ("--data-dir", "data_dir"))
                    if getattr(args, attr) is not None)


def next_step(args: argparse.Namespace, *words: str) -> str:
    """A command to print as the next step that works when pasted in the same shell: it carries the
    --config and --data-dir this command was given (the run remembers its suites and agent flags)."""
    import shlex
    script = sys.argv[0] if sys.argv[0].endswith("run.py") else "run.py"   # as the user typed it
    return " ".join(["python", shlex.quote(script), *words, where_flags(args)]).strip()


def reap_orphans(data_dir: Path) -> None:
    """Kill agent process groups a killed harness left behind, then record this one's."""
    from eval import reaper
    killed = reaper.reap(data_dir / "pids")
    if killed:
        print(f"reaped {len(killed)} agent process(es) left running by a harness that died: pids "
              f"{', '.join(map(str, killed[:10]))}", file=sys.stderr)
    reaper.use(data_dir / "pids")


def load(settings: Settings, name: str | None, flag: str, *, allow_mismatch: bool = False) -> Suite:
    """Load a suite for one role; its suite.md `split:` must name that role unless --allow-split-mismatch."""
    if not name:
        raise SuiteError(f"{flag} is required; name a suite from config.json 'suites' "
                         f"({', '.join(settings.suites)}) or a path to a suite folder")
    suite = load_suite(resolve_suite_path(settings, name))
    check_split(suite, flag, allow_mismatch=allow_mismatch)
    return suite


def import_evals_command(args: argparse.Namespace) -> int:
    from mutator.after.importer import EvalsImportError, import_evals
    if not args.out:
        print("error: --import-evals needs --out suites/NAME (the folder the imported suites go in)", file=sys.stderr)
        return 2
    try:
        made = import_evals(args.import_evals, args.out, seed=args.seed or 0)
    except (EvalsImportError, SuiteError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for suite in made:
        print(f"{suite.split:5} {suite.path}  ({len(suite.task_ids)} tasks: {', '.join(suite.task_ids)})")
    by_split = {suite.split: suite.path for suite in made}
    print(f"\nDry run: python run.py --suite {by_split['train']} --val {by_split['val']} --skill-dir "
          f"{args.import_evals.resolve().parent.parent}")
    return 0


PATH_ARGS = ("data_dir", "config", "skill_dir", "out", "to", "rollback", "check", "import_evals", "mine_traces", "watch")


def absolute_paths(args: argparse.Namespace) -> None:
    """Resolve every path flag once against the cwd, so nothing later depends on where it runs from.

    Suite flags (a config name or a path) are resolved by `resolve_suite_path`, where the names are known."""
    for attr in PATH_ARGS:
        if getattr(args, attr, None) is not None:
            setattr(args, attr, Path(os.path.abspath(getattr(args, attr))))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    absolute_paths(args)
    split_ok = args.allow_split_mismatch
    if args.solve is not None:
        args.solve = "on" if args.solve else "off"
    from mutator.evaluations import Progress
    progress = Progress()
    try:
        if args.import_evals:
            return import_evals_command(args)
        if args.budget_usd is not None and not args.budget_usd > 0:
            raise ConfigError(f"--budget-usd must be a positive number of USD, got {args.budget_usd}")
        check_finite(budget_usd=args.budget_usd, daily_budget_usd=args.daily_budget_usd, max_seconds=args.max_seconds)
        check_agent_flags(real=args.real, agent=args.agent, agent_cmd=args.agent_cmd, mutator_agent=args.mutator_agent)
        settings = load_settings({attr: getattr(args, attr) for attr in FLAG_ATTRS}, config_file=args.config)
        os.environ[PASS_ENV] = ",".join(settings.pass_env)  # every child's allow-list reads it (eval/environment.py)
        check_executor(settings.executor)
        if args.mine_traces or args.watch:
            from mutator.mining.cli import mine_command, watch_command
            if args.watch:
                return watch_command(args, settings, parser()._actions, ROOT / "run.py")
            return mine_command(args, settings)
        if args.against and not args.lint:
            raise ConfigError("--against PARENT_DIR goes with --lint SKILL_DIR (review SKILL_DIR as a candidate "
                              "made from PARENT_DIR)")
        if args.lint:
            from mutator.critic import limits_from
            from mutator.lint import lint_command
            code, text = lint_command(args.lint, args.against, limits_from(settings))
            print(text, file=sys.stderr if code == 2 else sys.stdout)
            return code
        if args.export:
            from mutator.after.export import ExportError, export
            out = args.out or settings.data_dir / "exports"
            try:
                written = export(settings.db_path, args.export, args.format, out)
            except ExportError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
            except sqlite3.DatabaseError as err:
                raise (store_problem(settings.db_path, err) or err) from None
            except OSError as err:
                raise ConfigError(f"{out}: not writable ({err.strerror}); pass --out DIR, a writable folder for "
                                  f"the export") from None
            print("\n".join(str(path) for path in written))
            return 0
        if wants_decision(args):
            return decide(args, settings)
        if args.serve:
            from mutator.server.cli import dashboard
            code = dashboard(settings, host=args.host, port=args.port, config=args.config,
                             foreground=not (args.suite or args.val or args.test_run or args.compare), allow_hosts=args.allow_host)
            if code is not None:
                return code
        launcher = get_launcher(settings.sandbox, on_fallback=(lambda why: print(
            f"warning: no sandbox: agents run as bare processes (--sandbox auto could not use bwrap: {why})",
            file=sys.stderr)) if args.real else None)
        reap_orphans(settings.data_dir)
        if args.compare:
            from mutator.validity.comparerun import apply_compare_defaults
            from mutator.validity.testrun import TestRunError
            try:
                apply_compare_defaults(settings, args)  # RUN_A's holdout and agent flags, unless typed
            except TestRunError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
        if args.test_run:
            from mutator.validity.testrun import TestRunError, apply_run_defaults
            try:
                apply_run_defaults(settings, args)  # the run's holdout and agent flags, unless typed
            except TestRunError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
        typed = [flag for flag, value in (("--agent", args.agent), ("--agent-cmd", args.agent_cmd),
                                          ("--mutator-agent", args.mutator_agent), ("--mutator-cmd", args.mutator_cmd))
                 if value]
        if typed and not args.real:
            raise ConfigError(f"{', '.join(typed)} choose(s) real agents, which only run with --real; add --real "
                              f"(without it the zero-spend fakes run)")
        agents = real_agents(settings, args, build_only=bool(args.test_run or args.compare)) if args.real \
            else fake_agents()
        from mutator.after.spend import combine, daily_guard
        daily = daily_guard(settings, args.daily_budget_usd)  # warns at 80 %, BudgetStop at 100 %
        if args.check:
            from mutator.after.cli import check_command
            skill = args.check.resolve()
            from mutator.store.liveness import check_key
            hold(settings, check_key(skill),
                 what=f"the health check of {skill}", beat_params=[str(skill)],
                 beat_sql="update health_checks set heartbeat_at = ? where skill_dir = ? and status = 'running'")
            return check_command(args, settings, agents, launcher, progress, daily)
        if args.test_run:
            from mutator.validity.testrun import TestRunError, test_run
            suite = load(settings, args.suite, "--test-run --suite", allow_mismatch=split_ok)
            if settings.db_path.is_file() and KEY.match(args.test_run):  # a fixed champion: never while the loop
                hold(settings, args.test_run, what=f"run {args.test_run}", beat_params=[args.test_run],
                     beat_sql="update test_runs set heartbeat_at = ? where run_id = ? and status = 'running'")
            try:
                result = test_run(settings, args.test_run, suite, agent_argv=list(agents.build_argv),
                                  launcher=launcher, progress=progress, network=agents.network,
                                  build_id=agents.build_id, control=not args.no_control)
            except TestRunError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
            print(f"Test of {args.test_run} on {suite.name}: champion {result['champion'][:12]} composite "
                  f"{result['composite']:.4f} (eval {result['eval']:.3f}) vs seed {result['seed_composite']:.4f} "
                  f"(eval {result['seed_eval']:.3f}); train composite "
                  f"{'—' if result['train_composite'] is None else format(result['train_composite'], '.4f')}; "
                  f"{result['cells_run']} cells run" + (" (all cached)" if not result["cells_run"] else ""))
            from mutator.validity.report import render
            print(render(result["report"]))
            return 0
        if args.compare:
            from mutator.validity.comparerun import compare_runs, render
            from mutator.validity.testrun import TestRunError
            suite = load(settings, args.suite, "--compare --suite", allow_mismatch=split_ok)
            for run_id in args.compare:   # fixed champions: never while either loop runs
                if settings.db_path.is_file() and KEY.match(run_id):
                    hold(settings, run_id, what=f"run {run_id}", beat_params=[run_id],
                         beat_sql="update test_runs set heartbeat_at = ? where run_id = ? and status = 'running'")
            try:
                pair = compare_runs(settings, *args.compare, suite, agent_argv=list(agents.build_argv),
                                    launcher=launcher, progress=progress, network=agents.network,
                                    build_id=agents.build_id)
            except TestRunError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
            print(render(pair))
            return 0
        if args.plan:
            from mutator.validity.plan import plan, render_plan
            print(render_plan(plan(settings, train=load(settings, args.suite, "--suite", allow_mismatch=split_ok),
                                   val=load(settings, args.val, "--val", allow_mismatch=split_ok),
                                   holdout=load(settings, args.holdout, "--holdout", allow_mismatch=split_ok)
                                   if args.holdout else None,
                                   build_id=agents.build_id)))
            return 0
        if args.aa is not None:
            if len(settings.models) > 1:
                raise ConfigError(f"--aa measures the gate on one eval model; --model lists {len(settings.models)} "
                                  f"({', '.join(settings.models)}): run one --aa per model")
            from mutator.validity.aa import AARun
            from mutator.validity.aa import summary as aa_summary
            check_seed_skill(settings.skill_dir)
            aa = AARun(settings, load(settings, args.val, "--val", allow_mismatch=split_ok),
                       train=load(settings, args.suite, "--suite", allow_mismatch=split_ok) if args.suite else None,
                       build_argv=agents.build_argv, build_id=agents.build_id, launcher=launcher, progress=progress)
            aa_id = aa.execute(args.aa)
            print(aa_summary(aa.db, aa_id))
            print(f"\n{aa.cells_run} cells run by this command. Record: {settings.db_path}")
            return 0
        from mutator.loop import Loop, Suites, check_roles
        from mutator.report_table import print_summary
        suites = Suites(train=load(settings, args.suite, "--suite", allow_mismatch=True),
                        val=load(settings, args.val, "--val", allow_mismatch=True),
                        holdout=load(settings, args.holdout, "--holdout", allow_mismatch=True) if args.holdout else None)
        check_roles(suites)  # one suite in two roles is the worse mistake: name it first
        for suite, flag in ((suites.train, "--suite"), (suites.val, "--val"), (suites.holdout, "--holdout")):
            if suite:
                check_split(suite, flag, allow_mismatch=split_ok)
        check_seed_skill(settings.skill_dir)
        strategy = make_strategy(settings.strategy, settings.strategy_opts)
        from mutator.budget import Budget
        loop = Loop(settings, suites, agents, launcher, strategy, progress=progress,
                    budget=combine(Budget(args.budget_usd) if args.budget_usd is not None else None, daily),
                    retry_failed=args.retry_failed)
        run_id = loop.execute()
        print_summary(loop.db, run_id, val_query_warn=settings.val_query_warn, data_dir=settings.data_dir)
        print(f"\n{loop.cells_run} cells run by this command" + (" — nothing new: the run resumed complete"
                                                                   if loop.cells_run == 0 else "")
              + f". Record: {settings.db_path}")
        if suites.holdout:
            print(f"Test the champion: {next_step(args, '--test-run', run_id)}")
        from mutator.after.cli import propose_finished
        print(propose_finished(settings, run_id, where_flags(args)))
        return 0
    except (ConfigError, SuiteError, PricingError, SandboxError, StrategyError, StoreError, LockHeld) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as err:
        if isinstance(err, sqlite3.OperationalError) and "locked" in str(err):
            raise
        problem = store_problem((args.data_dir or Path("data").absolute()) / "mutator.db", err)
        if problem is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        return 2
    except SolveAbort as err:
        print(f"error: {err}", file=sys.stderr)
        return 4
    except (BudgetStop, DiskFull) as err:
        print(f"stopped: {err}", file=sys.stderr)
        return 3
    except EvaluationStop as err:
        print(f"stopped: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("\nstopped; re-run the same command to resume (finished cells are kept)", file=sys.stderr)
        return 130
    finally:
        while HELD:
            HELD.pop()()


if __name__ == "__main__":
    try:
        from mutator.loop import LoopError
    except ImportError:  # pragma: no cover
        LoopError = RuntimeError
    try:
        sys.exit(main())
    except LoopError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
