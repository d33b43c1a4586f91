"""Paths and the merged configuration: config.json < environment (SKILL_MUTATOR_*) < CLI flags.

Every value is validated once, here; an error names the key, where it came from and the fix.
Paths in config.json are relative to the file's folder; paths from env or flags to the cwd. Each key is
declared once, in `Settings` or in one of its sections (mutator/settings/records.py).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.cost import Price, parse_pricing
from eval.errors import SkillMutatorError
from mutator.settings.keys import (
    ENV_PREFIX,
    INT_RANGE,
    Key,
    at_least_zero,
    build,
    env_names,
    in_int_range,
    key,
    keys_of,
    positive,
    ray_address,
    resources,
    section,
)
from mutator.settings.records import (
    FAKE_NOISE_HELP,
    FAKE_NOISES,
    BreakerSettings,
    CriticSettings,
    ScoreSettings,
    ScreenSettings,
    SequentialSettings,
    WatchdogSettings,
)

ROOT = Path(__file__).resolve().parents[1]
CONFIG_FILE = ROOT / "config.json"


def run_py() -> str:
    """How to call run.py in a printed command that runs when pasted in the shell it was printed in:
    `python run.py` from the project's folder, `python /abs/path/run.py` from anywhere else."""
    import shlex
    try:
        here = Path.cwd().resolve() == ROOT
    except OSError:   # the folder it was started in is gone
        here = False
    return "python " + ("run.py" if here else shlex.quote(str(ROOT / "run.py")))


class ConfigError(SkillMutatorError, ValueError):
    """A configuration value is missing or invalid; the message names the key and its source."""


__all__ = ["CONFIG_FILE", "ENV_PREFIX", "ROOT", "ConfigError", "Key", "KEYS", "Settings", "load_settings",
           "resolve_suite_path", "run_py"]

MODEL_HELP = ("build model id (priced from config.json 'pricing'); several, comma-separated (a,b), measure "
              "every cell on each model: each model's composite against the seed on that model, the run's "
              "the mean over models, the gate paired per (task, model)")
SOLVE_HELP = ("solve phase before round 0: the mutator model solves each train task bare; its graded "
              "transcripts go to solve/; paid at the mutator model's price, within --budget-usd (default: "
              "off)")
NULL_CONTROLS_HELP = ("per round, evaluate N (0-2) byte-identical copies of the incumbent on val beside the "
                      "candidates under a fresh replicate salt: the round's own noise floor (Δ and the "
                      "gate's call), never a candidate; within the budget (default 0)")
EXECUTOR_HELP = ("where cells run: local (default: subprocesses of this machine) | ray (each cell a Ray "
                 "task with its own bundle of inputs; see docs/guides/ray.md); the run id and the "
                 "cells are the same either way")
SANDBOX_HELP = ("how agents are launched: auto (default: bwrap when it is installed and works, else none; a "
                "Harbor task's agent in the task's container when podman or docker works) | bwrap "
                "(bubblewrap: each agent sees only its cell) | none (bare processes) | podman, docker (a "
                "Harbor task's agent in the task's container, network off; other agents as auto; exit 2 "
                "when the engine is missing)")
RAY_ADDRESS_RULE = "'' (a private local Ray instance), 'auto' or HOST:PORT (e.g. 10.0.0.5:6379)"
RAY_ADDRESS_HELP = ("--executor ray: '' (default) starts a private local Ray instance, listening on "
                    "127.0.0.1 only; 'auto' or HOST:PORT joins a running cluster (`ray start --head`)")
PASS_ENV_HELP = ("pass the environment variable NAME to agents and graders (repeatable); they get only an "
                 "allow-list otherwise (PATH, locale, HOME in the cell, SM_*)")
WITH_SKILLS_HELP = ("install the skills under DIR (each a folder with SKILL.md) read-only beside the "
                    "evolved one in every cell, so triggering and interference are measured among them "
                    "(default: none; a new evaluation key when set)")
GRADER_TIMEOUT_HELP = ("a grader running longer is killed; the cell is a grader_error, re-graded when the "
                       "run resumes")
CELL_TIMEOUT_HELP = ("wall-clock cap per cell on top of the watchdog (default 30 min); the cell is a timeout")
MAX_OUTPUT_HELP = ("cap on each agent output file (stream, stdout, stderr; default 20); past it the agent is "
                   "killed, agent_error")
INFRA_RETRIES_HELP = ("times an infra_error cell (API outage, rate limit, network, harness fault) is "
                      "retried in place (default 1)")
MAX_FAILED_HELP = ("an evaluation with more failed cells than this share is unhealthy: no verdict (default "
                   "0.25)")
PROPOSE_MIN_HELP = ("propose a champion only when its val composite beats the seed's by this much "
                    "(default 0.02)")
NO_HARM_HELP = ("refuse a proposal while the champion's latest test flags a task it harms (worse than the "
                "seed or than no skill, exact test, Holm over tasks)")
SEAL_HELP = ("a sealed test: the first champion test of a run on a suite is final; a test of a later "
             "champion of that run on that suite is refused")
SOLVE_MIN_HELP = ("abort before any seed spend if a task's best solve score stays below this (default 0.7)")
META_HELP = "every N rounds distil the attempt log into lessons shown in later briefings (0 = off)"
CONFIRM_HELP = ("winner's-curse guard: re-evaluate a keep and the incumbent on fresh val replicates; the "
                "keep stands only if the confirmed delta is still kept by the gate under the run's keep rule")
SOLVE_RULE = "on or off (auto, kept for old configs, is off)"
RAY_TIMEOUT_HELP = "--executor ray: give up joining the cluster after S seconds (default 60)"
RESOURCES_RULE = 'an object of Ray resource -> amount >= 0 per cell, e.g. {"num_cpus": 1}'
EVIDENCE_RULE = ("an integer >= 0: replicates of a kept candidate's train evaluation (0 = the run's "
                 "replicates)")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every setting, each declared once as a config key, here or in a section record
    (`settings.score.gate_z`); flags in --help follow the keys' order within a group, a section's keys listed
    where the section stands."""
    skill_dir: Path = key("skillDir", rule="a path to a skill folder", group="run",
                          help="the seed skill folder (default: config skillDir)")
    with_skills: str = key("withSkills", rule="a folder of skill folders, or '' (none)", default="",
                           group="run", flag={"metavar": "DIR"}, help=WITH_SKILLS_HELP)
    fake_noise: str = key("fakeNoise", lambda v: v in FAKE_NOISES, "off or realistic", "off", group="run",
                          flag={"choices": FAKE_NOISES}, help=FAKE_NOISE_HELP)
    # the loop
    rounds: int = key("rounds", at_least_zero, "an integer >= 0", group="loop",
                      help="total rounds (a finished run with fewer is extended)")
    replicates: int = key("replicates", positive, "an integer >= 1", group="loop",
                          help="cells per task per evaluation")
    strategy: str = key("strategy", bool, "a strategy id", group="loop", help="search strategy id (greedy)")
    strategy_opts: dict = key("strategyOpts", rule="a JSON object", group="loop", flag={"metavar": "JSON"},
                              help="strategy options as a JSON object")
    score: ScoreSettings = section()
    seed: int = key("seed", rule="an integer", group="loop", help="seed of the run's random choices")
    model: str = key("model", lambda v: all(v.split(",")), "a model id, or several: a list or 'a,b'",
                     group="loop", help=MODEL_HELP)
    mutator_model: str = key("mutatorModel", bool, "a non-empty model id", group="loop",
                             help="mutator model id")
    max_turns: int = key("maxTurns", positive, "an integer >= 1", group="loop",
                         help="turn cap for each agent")
    concurrency: int = key("concurrency", positive, "an integer >= 1", group="loop",
                           help="cells run at once")
    watchdog: WatchdogSettings = section()
    grader_timeout_ms: int = key("graderTimeoutMs", positive, "milliseconds >= 1", group="loop",
                                 help=GRADER_TIMEOUT_HELP)
    cell_timeout_ms: int = key("cellTimeoutMs", positive, "milliseconds >= 1", 30 * 60 * 1000, group="loop",
                               help=CELL_TIMEOUT_HELP)
    max_output_mb: float = key("maxOutputMb", positive, "megabytes > 0", 20.0, group="loop",
                               help=MAX_OUTPUT_HELP)
    infra_retries: int = key("infraRetries", at_least_zero, "an integer >= 0", 1, group="loop",
                             help=INFRA_RETRIES_HELP)
    breaker: BreakerSettings = section()
    max_failed_share: float = key("maxFailedShare", lambda v: 0 <= v < 1, "a fraction in [0, 1)", 0.25,
                                  group="loop", help=MAX_FAILED_HELP)
    propose_min_delta: float = key("proposeMinDelta", at_least_zero, "a number >= 0", 0.02, group="loop",
                                   help=PROPOSE_MIN_HELP)
    propose_no_harm: bool = key("proposeNoHarm", rule="true or false", default=False, group="loop",
                                help=NO_HARM_HELP)
    seal_test: bool = key("sealTest", rule="true or false", default=False, group="loop", help=SEAL_HELP)
    # the mutator's view and validity
    solve: str = key("solve", lambda v: v in ("auto", "on", "off"), SOLVE_RULE, group="view",
                     flag={"action": argparse.BooleanOptionalAction}, help=SOLVE_HELP)
    solve_attempts: int = key("solveAttempts", positive, "an integer >= 1", group="view",
                              help="solve passes per task; imperfect tasks retry (default 3)")
    solve_min_score: float = key("solveMinScore", lambda v: 0 <= v <= 1, "a number in [0, 1]", group="view",
                                 help=SOLVE_MIN_HELP)
    meta_skill_every: int = key("metaSkillEvery", at_least_zero, "an integer >= 0 (0 = off)", group="view",
                                help=META_HELP)
    confirm: bool = key("confirm", rule="true or false", group="view", help=CONFIRM_HELP)
    null_controls: int = key("nullControls", lambda v: v in (0, 1, 2) and not isinstance(v, bool),
                             "0, 1 or 2", 0, group="view", flag={"metavar": "N"}, help=NULL_CONTROLS_HELP)
    # where (--config, not a setting, is listed after --data-dir)
    data_dir: Path = key("dataDir", rule="a path", group="where",
                         help="holds mutator.db, genomes, cells (default ./data)")
    pass_env: list[str] = key("passEnv", env_names, "a list of environment variable names to pass to agents "
                              "and graders", group="where", flag={"metavar": "NAME"}, help=PASS_ENV_HELP)
    executor: str = key("executor", lambda v: v in ("local", "ray"), "local or ray", "local", group="where",
                        flag={"choices": ("local", "ray")}, help=EXECUTOR_HELP)
    ray_address: str = key("rayAddress", ray_address, RAY_ADDRESS_RULE, default="", group="where",
                           flag={"metavar": "ADDRESS"}, help=RAY_ADDRESS_HELP)
    ray_timeout_s: float = key("rayTimeoutS", positive, "seconds > 0", 60.0, group="where",
                               flag={"metavar": "S"}, help=RAY_TIMEOUT_HELP)
    sandbox: str = key("sandbox", lambda v: v in ("auto", "none", "bwrap", "podman", "docker"),
                       "auto, none, bwrap, podman or docker", group="where", help=SANDBOX_HELP)
    # config and environment only (no flag)
    mutator_cmd: str = key("mutatorCmd", rule="your mutator's command line ('' = none)")   # cli/agents' flag
    val_query_warn: int = key("valQueryWarn", at_least_zero, "an integer >= 0")
    critic: CriticSettings = section()
    cell_resources: dict = key("cellResources", resources, RESOURCES_RULE, {"num_cpus": 1})
    evidence_replicates: int = key("evidenceReplicates", at_least_zero, EVIDENCE_RULE, 1)
    sequential: SequentialSettings = section()
    screen: ScreenSettings = section()
    suites: dict[str, Path] = key("suites", rule="an object of suite name -> path")
    pricing: dict[str, Price] = key("pricing", rule="an object of model -> prices", repr=False)
    config_file: Path = CONFIG_FILE

    @property
    def train_replicates(self) -> int:
        """Replicates of the train evaluation that is the mutator's evidence: evidenceReplicates, else
        replicates."""
        return self.evidence_replicates or self.replicates

    @property
    def models(self) -> tuple[str, ...]:
        """The eval models: one for a plain run; several ('a,b') measure every cell on each of them."""
        return tuple(self.model.split(","))

    @property
    def db_path(self) -> Path:
        return self.data_dir / "mutator.db"

    def value(self, attr: str) -> Any:
        """A key's value by its flat name (`gate_z`, `screen_tasks`): what `getattr(settings, attr)` was."""
        found = BY_ATTR[attr]
        return getattr(getattr(self, found.section) if found.section else self, found.name)


KEYS = keys_of(Settings)
BY_ATTR = {found.attr: found for found in KEYS}
PATH_KEYS = {found.attr for found in KEYS if found.kind is Path}


def _lookup(tree: Mapping[str, Any], dotted: str) -> Any:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _check_unknown(tree: Mapping[str, Any], source: Path) -> None:
    known = {key.path for key in KEYS}
    sections = {path.split(".")[0] for path in known if "." in path}
    for name, value in tree.items():
        if name.startswith("_"):
            continue  # "_comment" and friends
        if name in sections and name not in known and not isinstance(value, Mapping):
            inside = sorted(path.split(".", 1)[1] for path in known if path.startswith(f"{name}."))
            raise ConfigError(f"{source}: '{name}' must be an object of its keys ({', '.join(inside)}), "
                              f"got {json.dumps(value)}; e.g. \"{name}\": {{\"{inside[0]}\": ...}}")
        if name in sections and isinstance(value, Mapping):
            for sub in value:
                if f"{name}.{sub}" not in known and not sub.startswith("_"):
                    hint = difflib.get_close_matches(f"{name}.{sub}", known, n=1)
                    raise ConfigError(f"{source}: unknown key '{name}.{sub}'"
                                      + (f"; did you mean '{hint[0]}'?" if hint else ""))
        elif name not in known:
            hint = difflib.get_close_matches(name, known, n=1)
            raise ConfigError(f"{source}: unknown key '{name}'"
                              + (f"; did you mean '{hint[0]}'?" if hint else ""))


def _check_environment(environ: Mapping[str, str]) -> None:
    """A misspelt SKILL_MUTATOR_* variable would be silently ignored: refuse it with the nearest real name."""
    known = {key.env for key in KEYS}
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) and name not in known:
            hint = difflib.get_close_matches(name, known, n=1)
            raise ConfigError(f"environment {name}: not a setting; "
                              + (f"did you mean {hint[0]}?" if hint else
                                 f"the names are SKILL_MUTATOR_<FLAG NAME>, e.g. {ENV_PREFIX}REPLICATES")
                              + f" (unset it: unset {name})")


BOOLEANS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def _coerce(key: Key, value: Any, source: str) -> Any:
    try:
        if key.kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
        elif key.kind is int and isinstance(value, str):
            value = int(value)
        elif key.kind is float and isinstance(value, str):
            value = float(value)
        elif key.kind is bool and isinstance(value, str):
            value = BOOLEANS[value.lower()]
        elif key.kind is dict and isinstance(value, str):
            value = json.loads(value)
        elif key.kind is list and isinstance(value, str):
            value = [name for name in re.split(r"[,\s]+", value) if name]
        elif key.kind is Path:
            value = Path(value)
        if key.kind in (int, float) and isinstance(value, bool):
            raise TypeError
        if not isinstance(value, key.kind):
            raise TypeError
    except (TypeError, ValueError, KeyError):
        raise ConfigError(f"{source}: '{key.path}' must be {key.rule}, got {value!r}") from None
    if key.kind is int and not in_int_range(value):
        raise ConfigError(f"{source}: '{key.path}' is out of range, got {value!r}; give {key.rule}, "
                          f"{INT_RANGE}")
    if key.kind is float and not math.isfinite(value):
        raise ConfigError(f"{source}: '{key.path}' must be a finite number, got {value!r}; give {key.rule}")
    if not key.check(value):
        raise ConfigError(f"{source}: '{key.path}' must be {key.rule}, got {value!r}")
    return value


def _model_list(value: Any) -> Any:
    """'a, b' or ["a", "b"] -> 'a,b' (order kept, repeats dropped): one string keeps a one-model run's id."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    if not isinstance(value, str):
        return value
    names = [name.strip() for name in value.split(",")]
    return ",".join(dict.fromkeys(names)) if all(names) else value


def load_settings(flags: Mapping[str, Any] | None = None, *, config_file: Path | None = None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """Merge config.json < environment < flags (flags given as {attr: value}; None means unset)."""
    config_file = Path(os.path.abspath(config_file or CONFIG_FILE))  # relative paths: against the cwd, once
    environ = os.environ if environ is None else environ
    try:
        tree = json.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{config_file}: not found; pass --config PATH or restore config.json") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{config_file}:{err.lineno}: invalid JSON ({err.msg})") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{config_file}: must hold one JSON object")
    _check_unknown(tree, config_file)
    _check_environment(environ)
    values: dict[str, Any] = {}
    for found in KEYS:
        value, source = _lookup(tree, found.path), f"{config_file}"
        if value is not None and found.attr in PATH_KEYS:
            value = config_file.parent / value
        if found.env in environ:
            value, source = environ[found.env], f"environment {found.env}"
        flag = (flags or {}).get(found.attr)
        if flag is not None:
            value, source = flag, f"flag --{found.attr.replace('_', '-')}"
        if value is None:
            value = found.default
        if found.attr == "model":
            value = _model_list(value)
        if value is None:
            raise ConfigError(f"{config_file}: '{found.path}' is missing; add it ({found.rule})")
        values[found.attr] = _coerce(found, value, source)
        if found.attr in PATH_KEYS:
            values[found.attr] = Path(os.path.abspath(values[found.attr]))
    for name, path in values["suites"].items():
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"{config_file}: 'suites.{name}' must be a folder path string (relative to the "
                              f"config file), got {path!r}; write it as \"{name}\": \"suites/{name}\"")
    values["suites"] = {name: (config_file.parent / path) for name, path in values["suites"].items()}
    values["pricing"] = parse_pricing(values["pricing"], f"{config_file} pricing")
    return build(Settings, values, config_file=config_file)


def resolve_suite_path(settings: Settings, name_or_path: str) -> Path:
    """A suite named in config.json 'suites', else a path to a suite folder."""
    if name_or_path in settings.suites:
        return settings.suites[name_or_path]
    return Path(os.path.abspath(name_or_path))
