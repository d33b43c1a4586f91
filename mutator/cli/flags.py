"""The command line's flags: one group of flags per concern, each its own function, and the path flags
resolved once against the cwd."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from mutator.after.cli import SuiteAction

AGENT_IDS = ("anthropic", "claude-cli", "command")


def user_path(text: str) -> Path:
    return Path(os.path.expanduser(text))


def _run_flags(p: argparse.ArgumentParser) -> None:
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


def _mining_flags(p: argparse.ArgumentParser) -> None:
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


def _loop_flags(p: argparse.ArgumentParser) -> None:
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


def _view_flags(p: argparse.ArgumentParser) -> None:
    view = p.add_argument_group("the mutator's view and validity")
    view.add_argument("--solve", action=argparse.BooleanOptionalAction, default=None,
                      help="solve phase before round 0: the mutator model solves each train task bare; its graded "
                           "transcripts go to solve/; paid at the mutator model's price, within --budget-usd (default: off)")
    view.add_argument("--solve-attempts", type=int, help="solve passes per task; imperfect tasks retry (default 3)")
    view.add_argument("--solve-min-score", type=float, help="abort before any seed spend if a task's best solve "
                                                            "score stays below this (default 0.7)")
    view.add_argument("--meta-skill-every", type=int, help="every N rounds distil the attempt log into lessons "
                                                           "shown in later briefings (0 = off)")
    view.add_argument("--confirm", action="store_true", default=None,
                      help="winner's-curse guard: re-evaluate a keep and the incumbent on fresh val replicates; "
                           "the keep stands only if the confirmed delta still passes the gate")


def _where_flags(p: argparse.ArgumentParser) -> None:
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


def _real_flags(p: argparse.ArgumentParser) -> None:
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


def _after_flags(p: argparse.ArgumentParser) -> None:
    after = p.add_argument_group("after the run: proposals, deploy, health checks, spend (see README)")
    after.add_argument("--propose", metavar="RUN", help="make RUN's champion a proposal (a finished run does this "
                                                        "itself); never deploys")
    after.add_argument("--accept", type=int, metavar="PROPOSAL", help="deploy a proposed (or rolled-back) champion "
                                                                      "into --to SKILL_DIR, keeping the folder's own "
                                                                      "files (atomic; the previous version kept)")
    after.add_argument("--reject", type=int, metavar="PROPOSAL", help="reject a proposed champion")
    after.add_argument("--note", help="--accept: a note kept with the decision")
    after.add_argument("--reason", help="--reject: the reason kept with the decision")
    after.add_argument("--to", type=Path, metavar="SKILL_DIR", help="--accept: the skill folder to deploy into")
    after.add_argument("--force", action="store_true", help="--accept: deploy even into a folder whose name or "
                                                            "SKILL.md name is another skill's")
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


def _dash_flags(p: argparse.ArgumentParser) -> None:
    dash = p.add_argument_group("dashboard")
    dash.add_argument("--serve", action="store_true", help="start the dashboard (alone: serve in the foreground; "
                                                           "with a run: in the background, then run the loop); "
                                                           "a healthy dashboard already on the port is reused")
    dash.add_argument("--port", type=int, default=5210, help="dashboard port (default 5210)")
    dash.add_argument("--host", default="127.0.0.1", help="dashboard address (default 127.0.0.1, loopback only)")
    dash.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                      help="with a non-loopback --host: a Host name the dashboard answers besides the bind address "
                           "and localhost (repeat it); any other Host is refused")


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
    _run_flags(p)
    _mining_flags(p)
    _loop_flags(p)
    _view_flags(p)
    _where_flags(p)
    _real_flags(p)
    _after_flags(p)
    _dash_flags(p)
    return p


FLAG_ATTRS = ("rounds", "replicates", "strategy", "strategy_opts", "min_improvement", "gate_z", "gate_method", "seed", "model",
              "mutator_model", "max_turns", "concurrency", "build_timeout_ms", "build_heartbeat_ms",
              "grader_timeout_ms", "data_dir", "skill_dir", "sandbox", "solve", "solve_attempts", "solve_min_score",
              "meta_skill_every", "confirm", "cell_timeout_ms", "max_output_mb", "infra_retries", "max_failed_share",
              "propose_min_delta", "pass_env", "executor", "ray_address")


PATH_ARGS = ("data_dir", "config", "skill_dir", "out", "to", "rollback", "check", "import_evals", "mine_traces", "watch")


def absolute_paths(args: argparse.Namespace) -> None:
    """Resolve every path flag once against the cwd, so nothing later depends on where it runs from.

    Suite flags (a config name or a path) are resolved by `resolve_suite_path`, where the names are known."""
    for attr in PATH_ARGS:
        if getattr(args, attr, None) is not None:
            setattr(args, attr, Path(os.path.abspath(getattr(args, attr))))
