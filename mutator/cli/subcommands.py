"""run.py's subcommands as data: each names the old mode flag it stands for, the arguments it takes in that
flag's place and the flags it accepts (by dest, from the one flag list in flags.py). `run.py plan ...` is
`run.py --plan ...`; parse.py builds each one's parser from this table, so no flag is written twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from mutator.cli.flags import FLAG_ATTRS


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: `mode` is the dest of its old mode flag (None: the loop, the default), `args` the
    metavars of what that flag took (given in its place), `flags` the dests of every other flag it takes."""
    name: str
    help: str
    mode: str | None
    flags: tuple[str, ...]
    args: tuple[str, ...] = ()
    arg_help: tuple[str, ...] = ()   # a help per arg after the first (the first has the old flag's own)


SETTINGS = FLAG_ATTRS   # every flag that is a setting
WHERE = ("data_dir", "config")
AGENTS = ("real", "agent", "agent_cmd", "mutator_agent", "mutator_cmd")
SPEND = ("budget_usd", "daily_budget_usd")
# what every command that runs agents takes besides its own flags
MEASURE = (*SETTINGS, "config", "allow_split_mismatch", *AGENTS, *SPEND)
RUN = ("suite", "val", "holdout", "retry_failed", *MEASURE)
MINING = ("out", "since", "redact", "judge")
DEPLOY = ("to", "note", "force", "propose_no_harm", *WHERE)

SUBCOMMANDS = (
    Subcommand("run", "evolve the skill: the loop (the default: `run.py --suite ...` is `run.py run "
               "--suite ...`)", None, RUN),
    Subcommand("serve", "the dashboard: alone in the foreground; with --suite and --val in the background, "
               "then the loop", "serve", (*RUN, "port", "host", "allow_host")),
    Subcommand("plan", "the minimum detectable effect and estimated cost of a run; spends nothing", "plan",
               ("suite", "val", "holdout", "allow_split_mismatch", *SETTINGS, "config", *AGENTS)),
    Subcommand("test", "measure a run's champion (and its seed) on --suite (default: the run's --holdout)",
               "test_run", ("suite", "no_control", *MEASURE), args=("RUN",)),
    Subcommand("compare", "measure two runs' champions on one suite and print the paired difference",
               "compare", ("suite", *MEASURE), args=("RUN_A", "RUN_B"),
               arg_help=("the second run (the difference is B − A)",)),
    Subcommand("aa", "A/A run: N copies of the seed gated against the seed, the gate's false-reject rate",
               "aa", ("suite", "val", *MEASURE), args=("N",)),
    Subcommand("check", "health check of a deployed skill on each --suite; exits 6 on REGRESSED", "check",
               ("suite", "parallel", "max_seconds", *MEASURE), args=("SKILL_DIR",)),
    Subcommand("propose", "make a run's champion a proposal; never deploys", "propose",
               ("to", "skill_dir", "propose_min_delta", "max_failed_share", "propose_no_harm", *WHERE),
               args=("RUN",)),
    Subcommand("accept", "deploy a proposal into --to SKILL_DIR", "accept", DEPLOY, args=("PROPOSAL",)),
    Subcommand("reject", "reject a proposal", "reject", ("reason", *WHERE), args=("PROPOSAL",)),
    Subcommand("deploy", "deploy a proposal into --to SKILL_DIR (the same as accept)", "accept", DEPLOY,
               args=("PROPOSAL",)),
    Subcommand("rollback", "restore the folder the last deploy into SKILL_DIR replaced", "rollback", WHERE,
               args=("SKILL_DIR",)),
    Subcommand("audit", "write a run's decisions and costs to --out FILE.json or FILE.csv", "audit",
               ("out", *WHERE), args=("RUN",)),
    Subcommand("daily-budget", "record the store's daily spend cap and say where today's spend stands",
               "daily_budget_usd", WHERE, args=("USD",)),
    Subcommand("annotate", "set a run's or an attempt's --name, --tags and --note", "annotate",
               ("name", "tags", "note", *WHERE), args=("RUN_OR_ATTEMPT",)),
    Subcommand("lint", "the critic's rows for a skill (with --against: the full review); spends nothing",
               "lint", ("against", *WHERE), args=("SKILL_DIR",)),
    Subcommand("export", "write a run's tables for notebooks (--format, --out); spends nothing", "export",
               ("format", "out", *WHERE), args=("RUN",)),
    Subcommand("export-report", "write a run's self-contained HTML report to hand over (--out FILE); spends "
               "nothing", "export_report", ("out", *WHERE), args=("RUN",)),
    Subcommand("import-harbor", "turn Harbor-format tasks into suites <out>/<name>-train, -val and -test",
               "import_harbor", ("out", "seed", "split_file", "allow_task_network", "seed_from",
                                "strict"),
               args=("DIR",)),
    Subcommand("validate-suite", "oracle check of an imported Harbor suite", "validate_suite", WHERE,
               args=("SUITE",)),
    Subcommand("import-evals", "turn a skill-creator eval set into judge-graded suites", "import_evals",
               ("out", "seed", *WHERE), args=("EVALS_JSON",)),
    Subcommand("mine", "mine agent transcripts into judge-graded suites", "mine_traces",
               (*MINING, "skill_dir", "seed", "model", "real", "budget_usd", *WHERE), args=("DIR",)),
    Subcommand("watch", "every --every, mine DIR and, with enough new requests, run the loop and propose",
               "watch", (*MINING, "once", "every", "min_traces", *RUN), args=("DIR",)),
    Subcommand("new-suite", "write a skill's first suites NAME-train, -val and -test (tasks from its evals, "
               "else placeholders) with a grader, and print the next commands", "new_suite",
               ("skill_dir", "out", "from_evals", "grader", "seed", *WHERE), args=("NAME",)),
)
BY_NAME = {command.name: command for command in SUBCOMMANDS}


def commands_epilog() -> str:
    """The subcommands as `run.py --help` lists them."""
    width = max(len(command.name) for command in SUBCOMMANDS)
    lines = [f"  {command.name:{width}}  {command.help}" for command in SUBCOMMANDS]
    return ("commands (`run.py COMMAND --help` lists its own flags; `--plan`, `--test-run RUN` and the other "
            "mode flags above still work):\n" + "\n".join(lines))
