"""The command line's flags: one group of flags per concern, each its own function, and the path flags
resolved once against the cwd. A flag that is a setting is made from its config key (mutator/config.py:
Settings), never written here."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from mutator.after.cli import SuiteAction
from mutator.cli.strict import Parser
from mutator.config import KEYS, Key
from mutator.settings.keys import integer

AGENT_IDS = ("anthropic", "claude-cli", "command")


def user_path(text: str) -> Path:
    return Path(os.path.expanduser(text))


def flagged(group: str) -> list[Key]:
    """The config keys whose flags belong to one --help group, in the order Settings declares them."""
    return [key for key in KEYS if key.help is not None and key.group == group]


def add_key(group: argparse._ArgumentGroup, key: Key) -> None:
    """A setting's flag, made from its key: the type from the key's, the help and any extras as written
    there."""
    kind = {int: {"type": integer}, float: {"type": float}, Path: {"type": Path}, dict: {"type": json.loads},
            list: {"action": "append"}, bool: {"action": "store_true", "default": None}}.get(key.kind, {})
    group.add_argument(key.option, **{**kind, **key.flag}, help=key.help)


def add_keys(group: argparse._ArgumentGroup, name: str) -> None:
    for key in flagged(name):
        add_key(group, key)


def _run_flags(p: argparse.ArgumentParser) -> None:
    run = p.add_argument_group("what to run")
    _suite_flags(run)
    _import_flags(run)
    _measure_flags(run)


def _suite_flags(run: argparse._ArgumentGroup) -> None:
    run.add_argument("--suite", action=SuiteAction,
                     help="train suite: a name from config.json 'suites' or a path (with --test-run or "
                          "--compare: the suite to test on; with --check: repeat it to check on several "
                          "suites)")
    run.add_argument("--val", help="validation suite (required for a run; must differ from --suite)")
    run.add_argument("--holdout", help="the run's default test suite; the loop never evaluates it")
    add_keys(run, "run")   # --skill-dir
    run.add_argument("--test-run", metavar="RUN",
                     help="measure RUN's current champion (and its seed) on --suite; cached and appended to "
                          "the run's test timeline; also measures the suite with no skill installed (the "
                          "control)")
    run.add_argument("--no-control", action="store_true",
                     help="with --test-run: skip the no-skill control (seed vs none, champion vs none)")
    run.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"),
                     help="measure both runs' champions on --suite (default: RUN_A's --holdout) through the "
                          "cached test run, and print the paired Δ (B − A) ± SE, 95%% CI, sign test and "
                          "McNemar: the dashboard's Compare figures")


def _import_flags(run: argparse._ArgumentGroup) -> None:
    run.add_argument("--export", metavar="RUN",
                     help="write RUN's attempts, evaluations, cells, tests and test runs as tables for "
                          "notebooks (--format, --out); spends nothing")
    run.add_argument("--export-report", metavar="RUN",
                     help="write RUN's self-contained HTML report (curve, rounds, lineage, test report, "
                          "cost; opens offline) to --out FILE (default <data-dir>/exports/RUN-report.html); "
                          "spends nothing")
    run.add_argument("--format", choices=("csv", "parquet"), default="csv",
                     help="--export file format (default csv; parquet needs pyarrow)")
    run.add_argument("--out", type=Path,
                     help="--export output folder (default: <data-dir>/exports), the --export-report file; "
                          "with --import-evals, the folder to write the imported suites into; with "
                          "--new-suite, the folder the three suites go in (default ./suites)")
    run.add_argument("--import-evals", type=Path, metavar="EVALS_JSON",
                     help="turn a skill-creator eval set (SKILL_DIR/evals/evals.json) into judge-graded "
                          "suites <out>/<name>-train, -val and -test, split by --seed; needs --out "
                          "suites/NAME")
    run.add_argument("--import-harbor", type=Path, metavar="DIR",
                     help="turn Harbor-format tasks (one task folder or a dataset of them: SkillsBench, "
                          "Terminal-Bench) into runner-harbor suites <out>/<name>-train, -val and -test, "
                          "split by --seed or --split-file; needs --out suites/NAME")
    run.add_argument("--split-file", type=Path, metavar="JSON",
                     help='with --import-harbor: {"train": [ids], "val": [ids], "test": [ids]} instead of a '
                          'seeded split')
    run.add_argument("--allow-task-network", action="store_true",
                     help="with --import-harbor: a task's verifier (and oracle) container gets the network "
                          "when its task.toml allows the internet (default: never)")
    run.add_argument("--seed-from", metavar="TASK[/SKILL]",
                     help="with --import-harbor: copy the task's bundled skills (environment/skills/; "
                          "all of them, a skill set, unless /SKILL names one) to <out>/seed/ as the seed of "
                          "a run")
    run.add_argument("--strict", action="store_true",
                     help="with --import-harbor: all or nothing: refuse the import (exit 2, nothing "
                          "written) when any task would be left out")
    run.add_argument("--new-suite", metavar="NAME",
                     help="write NAME-train, NAME-val and NAME-test for --skill-dir into --out (default "
                          "./suites): tasks from the skill's evals/evals.json (or --from-evals), else "
                          "placeholders a run refuses until you replace them; a grader of --grader's kind")
    run.add_argument("--from-evals", type=Path, metavar="EVALS_JSON",
                     help="with --new-suite: the skill-creator eval set to take the tasks from (default: "
                          "SKILL/evals/evals.json when it exists)")
    run.add_argument("--grader", choices=("script", "expectations", "judge"),
                     help="with --new-suite: the suites' grader: a starter run-eval.py (script; the default "
                          "without evals), an expect block per task (expectations) or expectation sentences "
                          "(judge; the default with evals)")
    run.add_argument("--validate-suite", metavar="SUITE",
                     help="oracle check of an imported Harbor suite: per task, the verifier's reward after "
                          "solution/solve.sh (must be 1) and after doing nothing (must be 0), in the task's "
                          "container")


def _measure_flags(run: argparse._ArgumentGroup) -> None:
    run.add_argument("--aa", type=integer, metavar="N",
                     help="A/A run: N byte-identical copies of the seed on --val, each gated against its own "
                          "fresh re-evaluation of the seed; prints the false-reject and beat +t·SE rates "
                          "with exact binomial 95%% CIs beside the design")
    run.add_argument("--allow-split-mismatch", action="store_true",
                     help="use a suite in a role its suite.md 'split:' does not name (e.g. a val suite as "
                          "train)")
    run.add_argument("--lint", type=Path, metavar="SKILL_DIR",
                     help="print the critic's rows for a skill and exit 0 when all pass (alone: the Agent "
                          "Skills spec; with --against: the full review); spends nothing")
    run.add_argument("--against", type=Path, metavar="PARENT_DIR",
                     help="--lint: review SKILL_DIR as a candidate made from PARENT_DIR")
    run.add_argument("--plan", action="store_true",
                     help="print the minimum detectable effect and estimated cost of a run on "
                          "--suite/--val/--holdout; spends nothing")


def _mining_flags(p: argparse.ArgumentParser) -> None:
    mining = p.add_argument_group("from real use: mine transcripts into suites (docs/guides/mining.md)")
    mining.add_argument("--mine-traces", type=user_path, metavar="DIR",
                        help="mine agent transcripts (~/.claude/projects, a project folder, or plain trace "
                             "JSONL) for requests where --skill-dir was used into judge-graded suites "
                             "<out>-train/-val/-test plus <out>/mining.json; needs --out suites/NAME; split "
                             "by --seed")
    mining.add_argument("--since", metavar="DATE",
                        help="--mine-traces/--watch: only requests at or after DATE (2026-11-01 or "
                             "2026-11-01T12:00, UTC unless given)")
    mining.add_argument("--redact", action="store_true",
                        help="--mine-traces/--watch: keep a request holding a secret-looking value with the "
                             "value replaced by [REDACTED] (default: drop it)")
    mining.add_argument("--judge", action="store_true",
                        help="--mine-traces/--watch: keep only requests the judge can grade (the fake judge; "
                             "the real one with --real, which spends)")
    mining.add_argument("--watch", type=user_path, metavar="DIR",
                        help="opt-in trigger: every --every, mine DIR; when --min-traces new eligible "
                             "requests exist, rebuild the --out suites (test split frozen), run the loop "
                             "with the other run flags given, and leave a proposal (never deploys); each "
                             "tick is a row in 'triggers'")
    mining.add_argument("--once", action="store_true", help="--watch: one tick, then exit (for cron)")
    mining.add_argument("--every", default="6h", metavar="DURATION",
                        help="--watch: time between ticks (default 6h; 30m, 90s, 1d)")
    mining.add_argument("--min-traces", type=integer, default=20, metavar="N",
                        help="--watch: new eligible requests needed to run (default 20)")


def _loop_flags(p: argparse.ArgumentParser) -> None:
    loop = p.add_argument_group("the loop")
    add_keys(loop, "loop")
    loop.add_argument("--retry-failed", action="store_true",
                      help="on resume, run again the failed cells (agent errors and timeouts too) of the "
                           "evaluations no verdict rests on yet: the seed's before round 1, and the "
                           "unfinished round's")


def _view_flags(p: argparse.ArgumentParser) -> None:
    view = p.add_argument_group("the mutator's view and validity")
    add_keys(view, "view")


def _where_flags(p: argparse.ArgumentParser) -> None:
    where = p.add_argument_group("where")
    data_dir, *rest = flagged("where")
    add_key(where, data_dir)
    where.add_argument("--config", type=Path, help="config file (default ./config.json)")
    for key in rest:
        add_key(where, key)


def _real_flags(p: argparse.ArgumentParser) -> None:
    real = p.add_argument_group("real agents (they spend money: docs/guides/backends.md)")
    real.add_argument("--real", action="store_true",
                      help="use real model agents instead of the zero-spend fakes")
    real.add_argument("--agent", choices=AGENT_IDS,
                      help="build-agent backend: our SDK tool loop, the claude CLI, or --agent-cmd (default "
                           "anthropic, or command when --agent-cmd is given)")
    real.add_argument("--agent-cmd", metavar="CMD",
                      help="your own build agent: a program following the agent process contract, e.g. "
                           "'python my_agent.py' (implies --agent command)")
    real.add_argument("--mutator-agent", choices=AGENT_IDS,
                      help="mutator backend (default: command with --mutator-cmd, else --agent; anthropic "
                           "when --agent is command)")
    real.add_argument("--mutator-cmd", metavar="CMD",
                      help="your own mutator (config mutatorCmd): a program that edits ./skill/ and writes "
                           "./result.json; independent of --agent-cmd")
    real.add_argument("--budget-usd", type=float, metavar="USD",
                      help="stop cleanly before the run's committed spend would pass USD; resume with a "
                           "higher cap")


def _after_flags(p: argparse.ArgumentParser) -> None:
    after = p.add_argument_group("after the run: proposals, deploy, health checks, spend "
                                 "(docs/guides/after-the-run.md)")
    _decision_flags(after)
    _check_flags(after)


def _decision_flags(after: argparse._ArgumentGroup) -> None:
    after.add_argument("--propose", metavar="RUN",
                       help="make RUN's champion a proposal (a finished run does this itself); never deploys")
    after.add_argument("--accept", type=integer, metavar="PROPOSAL",
                       help="deploy a proposed (or rolled-back) champion into --to SKILL_DIR, keeping the "
                            "folder's own files (atomic; the previous version kept)")
    after.add_argument("--reject", type=integer, metavar="PROPOSAL", help="reject a proposed champion")
    after.add_argument("--note",
                       help="--accept: a note kept with the decision; --annotate: the note kept with the "
                            "run or attempt ('' clears it)")
    after.add_argument("--annotate", metavar="RUN_OR_ATTEMPT",
                       help="set a run's (run id) or an attempt's (attempt id) --name, --tags and --note; "
                            "spends nothing")
    after.add_argument("--name", help="--annotate: a short name ('' clears it)")
    after.add_argument("--tags", help="--annotate: comma-separated tags, replacing the old ones ('' clears "
                                      "them)")
    after.add_argument("--reason", help="--reject: the reason kept with the decision")
    after.add_argument("--to", type=Path, metavar="SKILL_DIR", help="--accept: the skill folder to deploy "
                                                                    "into")
    after.add_argument("--force", action="store_true",
                       help="--accept: deploy even into a folder whose name or SKILL.md name is another "
                            "skill's")
    after.add_argument("--rollback", type=Path, metavar="SKILL_DIR",
                       help="restore the version the last deploy into SKILL_DIR replaced, byte for byte")


def _check_flags(after: argparse._ArgumentGroup) -> None:
    after.add_argument("--check", type=Path, metavar="SKILL_DIR",
                       help="health check: evaluate SKILL_DIR as it is on each --suite; exits 6 on REGRESSED")
    after.add_argument("--parallel", type=integer, metavar="N",
                       help="--check: cells run at once (default: concurrency)")
    after.add_argument("--max-seconds", type=float, metavar="S",
                       help="--check: stop after S seconds, keeping what was scored (exit 5)")
    after.add_argument("--audit", metavar="RUN",
                       help="write RUN's attempts, verdicts, gate figures, decisions and costs to --out "
                            "FILE.json or FILE.csv")
    after.add_argument("--daily-budget-usd", type=float, metavar="USD",
                       help="record the store's daily spend cap (0 clears it): warn at 80 %%, stop new "
                            "spending at 100 %% (UTC days)")


def _dash_flags(p: argparse.ArgumentParser) -> None:
    dash = p.add_argument_group("dashboard")
    dash.add_argument("--serve", action="store_true",
                      help="start the dashboard (alone: serve in the foreground; with a run: in the "
                           "background, then run the loop); a healthy dashboard already on the port is "
                           "reused")
    dash.add_argument("--port", type=integer, default=5210, help="dashboard port (default 5210)")
    dash.add_argument("--host", default="127.0.0.1", help="dashboard address (default 127.0.0.1, loopback "
                                                          "only)")
    dash.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                      help="with a non-loopback --host: a Host name the dashboard answers besides the bind "
                           "address and localhost (repeat it); any other Host is refused")


def parser() -> argparse.ArgumentParser:
    """The one flat list of flags: the old spelling of every command (`--plan`, `--test-run RUN`, ...), and
    the flags each subcommand's parser takes its own from (mutator/cli/parse.py, which also lists the
    subcommands under this parser's --help)."""
    p = Parser(
        prog="run.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Evolve an agent skill against task suites. Without --real this is a zero-spend dry run "
                    "with fake agents. Re-running the same command resumes the same run.",
        epilog="examples:\n"
               "  python run.py --suite clean-train --val clean-val --holdout clean-test --rounds 6 "
               "--replicates 4\n"
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


FLAG_ATTRS = tuple(key.attr for key in KEYS if key.help is not None)   # the flags that are settings


PATH_ARGS = ("data_dir", "config", "skill_dir", "out", "to", "rollback", "check", "import_evals",
             "mine_traces", "watch", "import_harbor", "split_file", "from_evals")


def absolute_paths(args: argparse.Namespace) -> None:
    """Resolve every path flag once against the cwd, so nothing later depends on where it runs from.

    Suite flags (a config name or a path) are resolved by `resolve_suite_path`, where the names are known."""
    for attr in PATH_ARGS:
        if getattr(args, attr, None) is not None:
            setattr(args, attr, Path(os.path.abspath(getattr(args, attr))))
