"""Paths and the merged configuration: config.json < environment (SKILL_MUTATOR_*) < CLI flags.

Every value is validated once, here; an error names the key, where it came from and the fix.
Paths in config.json are relative to the file's folder; paths from env or flags to the cwd.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import os
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.cost import Price, parse_pricing
from eval.errors import SkillMutatorError

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
ENV_PREFIX = "SKILL_MUTATOR_"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ConfigError(SkillMutatorError, ValueError):
    """A configuration value is missing or invalid; the message names the key and its source."""


@dataclass(frozen=True)
class Key:
    """One setting, written once: its config.json name, its rule, its default, and its flag's help (if it has one).

    Its Settings attribute (also the flag's dest and the SKILL_MUTATOR_<ATTR> variable) and its type come from the
    Settings field that declares it; `mutator/cli/flags.py` makes the flag from it."""
    path: str                      # dotted key in config.json, e.g. "score.gateZ"
    check: Callable[[Any], bool] = lambda value: True
    rule: str = ""
    default: Any = None            # used when config.json lacks the key (keys added after a config was written)
    help: str | None = None        # the flag's help: None = no flag (config or environment only)
    group: str = ""                # the --help group the flag is listed in (flags.py); in field order within it
    flag: Mapping[str, Any] = field(default_factory=dict)   # argparse extras: choices, metavar, action
    attr: str = ""                 # set from the Settings field
    kind: Any = None               # str | int | float | bool | dict | list | Path, from the field's type

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.attr.upper()

    @property
    def option(self) -> str:
        return "--" + self.attr.replace("_", "-")


def key(path: str, check: Callable[[Any], bool] = lambda value: True, rule: str = "", default: Any = None, *,
        help: str | None = None, group: str = "", flag: Mapping[str, Any] | None = None, repr: bool = True) -> Any:
    """A Settings field that is a configuration key (see Key)."""
    return field(repr=repr, metadata={"key": Key(path, check, rule, default, help, group, flag or {})})


def _positive(value: Any) -> bool:
    return value > 0


def _resources(value: Any) -> bool:
    return all(isinstance(k, str) and k and isinstance(v, (int, float)) and not isinstance(v, bool)
               and math.isfinite(v) and v >= 0 for k, v in value.items())


def _ray_address(value: Any) -> bool:
    from eval.executors.ray_link import address_problem
    return address_problem(value) is None


def _env_names(value: Any) -> bool:
    return all(isinstance(n, str) and ENV_NAME.match(n) for n in value)


GATE_METHOD_HELP = ("how the gate's critical value t is made: signflip (default; sign flips of the candidate's own "
                    "deltas, a false-reject rate of 1 − Φ(gateZ) for any symmetric noise) or t (the Student-t "
                    "quantile, exact for normal deltas)")
MODEL_HELP = ("build model id (priced from config.json 'pricing'); several, comma-separated (a,b), measure every cell "
              "on each model: each model's composite against the seed on that model, the run's the mean over "
              "models, the gate paired per (task, model)")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every setting, each declared once as a config key (flags in --help follow this order within a group)."""
    skill_dir: Path = key("skillDir", rule="a path to a skill folder", group="run",
                          help="the seed skill folder (default: config skillDir)")
    with_skills: str = key("withSkills", rule="a folder of skill folders, or '' (none)", default="", group="run",
                           flag={"metavar": "DIR"},
                           help="install the skills under DIR (each a folder with SKILL.md) read-only beside the "
                                "evolved one in every cell, so triggering and interference are measured among them "
                                "(default: none; a new evaluation key when set)")
    # the loop
    rounds: int = key("rounds", lambda v: v >= 0, "an integer >= 0", group="loop",
                      help="total rounds (a finished run with fewer is extended)")
    replicates: int = key("replicates", _positive, "an integer >= 1", group="loop",
                          help="cells per task per evaluation")
    strategy: str = key("strategy", bool, "a strategy id", group="loop", help="search strategy id (greedy)")
    strategy_opts: dict = key("strategyOpts", rule="a JSON object", group="loop", flag={"metavar": "JSON"},
                              help="strategy options as a JSON object")
    min_improvement: float = key("score.minImprovement", rule="a number", group="loop",
                                 help="centre of the keep gate (score.minImprovement)")
    gate_z: float = key("score.gateZ", lambda v: v >= 0, "a number >= 0", group="loop",
                        help="noise calibration of the gate; 0 = raw minImprovement gate")
    gate_method: str = key("score.gateMethod", lambda v: v in ("signflip", "t"),
                           "signflip (exact for any symmetric noise) or t (Student t, exact for normal noise)",
                           "signflip", group="loop", flag={"choices": ("signflip", "t")}, help=GATE_METHOD_HELP)
    model_gate: str = key("score.modelGate", lambda v: v in ("mean", "each"), "mean (the gate pools every eval "
                          "model's deltas) or each (a decisive loss on any one model rejects, Holm over the models)",
                          "mean", group="loop", flag={"choices": ("mean", "each")},
                          help="with several --model: mean (default) gates the mean over models; each rejects a "
                               "candidate that is a decisive loss on any one model (Holm over the models)")
    seed: int = key("seed", rule="an integer", group="loop", help="seed of the run's random choices")
    model: str = key("model", lambda v: all(v.split(",")), "a model id, or several: a list or 'a,b'", group="loop",
                     help=MODEL_HELP)
    mutator_model: str = key("mutatorModel", bool, "a non-empty model id", group="loop", help="mutator model id")
    max_turns: int = key("maxTurns", _positive, "an integer >= 1", group="loop", help="turn cap for each agent")
    concurrency: int = key("concurrency", _positive, "an integer >= 1", group="loop", help="cells run at once")
    build_timeout_ms: int = key("watchdog.silenceMs", _positive, "milliseconds >= 1", group="loop",
                                help="watchdog silence budget before an agent's stream grows")
    build_heartbeat_ms: int = key("watchdog.heartbeatMs", _positive, "milliseconds >= 1", group="loop",
                                  help="watchdog budget between stream growths")
    grader_timeout_ms: int = key("graderTimeoutMs", _positive, "milliseconds >= 1", group="loop",
                                 help="a grader running longer is killed; the cell is a grader_error, re-graded "
                                      "when the run resumes")
    cell_timeout_ms: int = key("cellTimeoutMs", _positive, "milliseconds >= 1", 30 * 60 * 1000, group="loop",
                               help="wall-clock cap per cell on top of the watchdog (default 30 min); the cell is "
                                    "a timeout")
    max_output_mb: float = key("maxOutputMb", _positive, "megabytes > 0", 20.0, group="loop",
                               help="cap on each agent output file (stream, stdout, stderr; default 20); past it "
                                    "the agent is killed, agent_error")
    infra_retries: int = key("infraRetries", lambda v: v >= 0, "an integer >= 0", 1, group="loop",
                             help="times an infra_error cell (API outage, rate limit, network, harness fault) is "
                                  "retried in place (default 1)")
    max_failed_share: float = key("maxFailedShare", lambda v: 0 <= v < 1, "a fraction in [0, 1)", 0.25, group="loop",
                                  help="an evaluation with more failed cells than this share is unhealthy: no "
                                       "verdict (default 0.25)")
    propose_min_delta: float = key("proposeMinDelta", lambda v: v >= 0, "a number >= 0", 0.02, group="loop",
                                   help="propose a champion only when its val composite beats the seed's by this "
                                        "much (default 0.02)")
    propose_no_harm: bool = key("proposeNoHarm", rule="true or false", default=False, group="loop",
                                help="refuse a proposal while the champion's latest test flags a task it harms "
                                     "(worse than the seed or than no skill, exact test, Holm over tasks)")
    seal_test: bool = key("sealTest", rule="true or false", default=False, group="loop",
                          help="a sealed test: the first champion test of a run on a suite is final; a test of a "
                               "later champion of that run on that suite is refused")
    # the mutator's view and validity
    solve: str = key("solve", lambda v: v in ("auto", "on", "off"), "on or off (auto, kept for old configs, is off)",
                     group="view", flag={"action": argparse.BooleanOptionalAction},
                     help="solve phase before round 0: the mutator model solves each train task bare; its graded "
                          "transcripts go to solve/; paid at the mutator model's price, within --budget-usd "
                          "(default: off)")
    solve_attempts: int = key("solveAttempts", _positive, "an integer >= 1", group="view",
                              help="solve passes per task; imperfect tasks retry (default 3)")
    solve_min_score: float = key("solveMinScore", lambda v: 0 <= v <= 1, "a number in [0, 1]", group="view",
                                 help="abort before any seed spend if a task's best solve score stays below this "
                                      "(default 0.7)")
    meta_skill_every: int = key("metaSkillEvery", lambda v: v >= 0, "an integer >= 0 (0 = off)", group="view",
                                help="every N rounds distil the attempt log into lessons shown in later briefings "
                                     "(0 = off)")
    confirm: bool = key("confirm", rule="true or false", group="view",
                        help="winner's-curse guard: re-evaluate a keep and the incumbent on fresh val replicates; "
                             "the keep stands only if the confirmed delta still passes the gate")
    null_controls: int = key("nullControls", lambda v: v in (0, 1, 2) and not isinstance(v, bool), "0, 1 or 2", 0,
                             group="view", flag={"metavar": "N"},
                             help="per round, evaluate N (0-2) byte-identical copies of the incumbent on val beside "
                                  "the candidates under a fresh replicate salt: the round's own noise floor (Δ and "
                                  "the gate's call), never a candidate; within the budget (default 0)")
    # where (--config, not a setting, is listed after --data-dir)
    data_dir: Path = key("dataDir", rule="a path", group="where",
                         help="holds mutator.db, genomes, cells (default ./data)")
    pass_env: list[str] = key("passEnv", _env_names, "a list of environment variable names to pass to agents and "
                              "graders", group="where", flag={"metavar": "NAME"},
                              help="pass the environment variable NAME to agents and graders (repeatable); they get "
                                   "only an allow-list otherwise (PATH, locale, HOME in the cell, SM_*)")
    executor: str = key("executor", lambda v: v in ("local", "ray"), "local or ray", "local", group="where",
                        flag={"choices": ("local", "ray")},
                        help="where cells run: local (default: subprocesses of this machine) | ray (each cell a Ray "
                             "task with its own bundle of inputs; see README 'Past one machine'); the run id and "
                             "the cells are the same either way")
    ray_address: str = key("rayAddress", _ray_address, "'' (a private local Ray instance), 'auto' or HOST:PORT "
                           "(e.g. 10.0.0.5:6379)", default="", group="where", flag={"metavar": "ADDRESS"},
                           help="--executor ray: '' (default) starts a private local Ray instance, listening on "
                                "127.0.0.1 only; 'auto' or HOST:PORT joins a running cluster (`ray start --head`)")
    ray_timeout_s: float = key("rayTimeoutS", _positive, "seconds > 0", 60.0, group="where", flag={"metavar": "S"},
                               help="--executor ray: give up joining the cluster after S seconds (default 60)")
    sandbox: str = key("sandbox", lambda v: v in ("auto", "none", "bwrap", "podman", "docker"),
                       "auto, none, bwrap, podman or docker", group="where",
                       help="how agents are launched: auto (default: bwrap when it is installed and works, else "
                            "none; a Harbor task's agent in the task's container when podman or docker works) | "
                            "bwrap (bubblewrap: each agent sees only its cell) | none (bare processes) | podman, "
                            "docker (a Harbor task's agent in the task's container, network off; other agents as "
                            "auto; exit 2 when the engine is missing)")
    # config and environment only (no flag)
    mutator_cmd: str = key("mutatorCmd", rule="your mutator's command line ('' = none)")   # --mutator-cmd: cli/agents
    w_cost: float = key("score.wCost", lambda v: v >= 0, "a number >= 0")
    w_steps: float = key("score.wSteps", lambda v: v >= 0, "a number >= 0")
    w_trigger: float = key("score.wTrigger", lambda v: v >= 0, "a number >= 0 (0 = triggering not scored)", 0.0)
    val_query_warn: int = key("valQueryWarn", lambda v: v >= 0, "an integer >= 0")
    critic_max_lines: int = key("critic.maxSkillLines", _positive, "an integer >= 1")
    critic_max_bytes: int = key("critic.maxSkillBytes", _positive, "an integer >= 1")
    critic_max_growth: float = key("critic.maxGrowth", lambda v: v >= 0, "a fraction >= 0 (0.2 = +20%)")
    critic_min_growth_bytes: int = key("critic.minGrowthBytes", lambda v: v >= 0, "an integer >= 0")
    cell_resources: dict = key("cellResources", _resources, 'an object of Ray resource -> amount >= 0 per cell, e.g. '
                               '{"num_cpus": 1}', {"num_cpus": 1})
    tie_rule: str = key("score.tieRule", lambda v: v in ("keep", "noAddedCost"), "noAddedCost (a tie the gate keeps "
                        "is kept only when it adds no cost) or keep (every tie)", "noAddedCost")
    evidence_replicates: int = key("evidenceReplicates", lambda v: v >= 0, "an integer >= 0: replicates of a kept "
                                   "candidate's train evaluation (0 = the run's replicates)", 0)
    sequential: bool = key("sequential.waves", rule="true (val in waves, one replicate each, with early looks) or "
                           "false (every val cell at once)", default=True)
    sequential_early_z: float = key("sequential.earlyZ", _positive, "a z > 0 (the early looks' boundary)", 2.0)
    screen_tasks: int = key("screen.tasks", lambda v: v >= 0, "an integer >= 0 (0 = no screen)", 0)
    screen_replicates: int = key("screen.replicates", _positive, "an integer >= 1", 1)
    screen_z: float = key("screen.z", _positive, "a z > 0 (the screen's false-kill rate is 1 − Φ(z))", 2.0)
    suites: dict[str, Path] = key("suites", rule="an object of suite name -> path")
    pricing: dict[str, Price] = key("pricing", rule="an object of model -> prices", repr=False)
    config_file: Path = CONFIG_FILE

    @property
    def train_replicates(self) -> int:
        """Replicates of the train evaluation that is the mutator's evidence: evidenceReplicates, else replicates."""
        return self.evidence_replicates or self.replicates

    @property
    def models(self) -> tuple[str, ...]:
        """The eval models: one for a plain run; several ('a,b') measure every cell on each of them."""
        return tuple(self.model.split(","))

    @property
    def db_path(self) -> Path:
        return self.data_dir / "mutator.db"


def _keys() -> tuple[Key, ...]:
    hints = typing.get_type_hints(Settings)
    return tuple(dataclasses.replace(f.metadata["key"], attr=f.name, kind=typing.get_origin(hints[f.name]) or
                                     hints[f.name]) for f in dataclasses.fields(Settings) if "key" in f.metadata)


KEYS = _keys()
PATH_KEYS = {key.attr for key in KEYS if key.kind is Path}


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
        if name in sections and isinstance(value, Mapping):
            for sub in value:
                if f"{name}.{sub}" not in known and not sub.startswith("_"):
                    hint = difflib.get_close_matches(f"{name}.{sub}", known, n=1)
                    raise ConfigError(f"{source}: unknown key '{name}.{sub}'"
                                      + (f"; did you mean '{hint[0]}'?" if hint else ""))
        elif name not in known:
            hint = difflib.get_close_matches(name, known, n=1)
            raise ConfigError(f"{source}: unknown key '{name}'" + (f"; did you mean '{hint[0]}'?" if hint else ""))


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


def _coerce(key: Key, value: Any, source: str) -> Any:
    try:
        if key.kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
        elif key.kind is int and isinstance(value, str):
            value = int(value)
        elif key.kind is float and isinstance(value, str):
            value = float(value)
        elif key.kind is bool and isinstance(value, str):
            value = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}[value.lower()]
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
    for key in KEYS:
        value, source = _lookup(tree, key.path), f"{config_file}"
        if value is not None and key.attr in PATH_KEYS:
            value = config_file.parent / value
        if key.env in environ:
            value, source = environ[key.env], f"environment {key.env}"
        flag = (flags or {}).get(key.attr)
        if flag is not None:
            value, source = flag, f"flag --{key.attr.replace('_', '-')}"
        if value is None:
            value = key.default
        if key.attr == "model":
            value = _model_list(value)
        if value is None:
            raise ConfigError(f"{config_file}: '{key.path}' is missing; add it ({key.rule})")
        values[key.attr] = _coerce(key, value, source)
        if key.attr in PATH_KEYS:
            values[key.attr] = Path(os.path.abspath(values[key.attr]))
    for name, path in values["suites"].items():
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"{config_file}: 'suites.{name}' must be a folder path string (relative to the config "
                              f"file), got {path!r}; write it as \"{name}\": \"suites/{name}\"")
    values["suites"] = {name: (config_file.parent / path) for name, path in values["suites"].items()}
    values["pricing"] = parse_pricing(values["pricing"], f"{config_file} pricing")
    return Settings(**values, config_file=config_file)


def resolve_suite_path(settings: Settings, name_or_path: str) -> Path:
    """A suite named in config.json 'suites', else a path to a suite folder."""
    if name_or_path in settings.suites:
        return settings.suites[name_or_path]
    return Path(os.path.abspath(name_or_path))
