"""Paths and the merged configuration: config.json < environment (SKILL_MUTATOR_*) < CLI flags.

Every value is validated once, here; an error names the key, where it came from and the fix.
Paths in config.json are relative to the file's folder; paths from env or flags to the cwd.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.cost import Price, parse_pricing

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


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names the key and its source."""


@dataclass(frozen=True)
class Key:
    path: str                      # dotted key in config.json, e.g. "score.gateZ"
    attr: str                      # Settings attribute and argparse dest, e.g. "gate_z"
    kind: Callable[[Any], Any]
    check: Callable[[Any], bool] = lambda value: True
    rule: str = ""
    default: Any = None            # used when config.json lacks the key (keys added after a config was written)

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.attr.upper()


def _positive(value: Any) -> bool:
    return value > 0


def _resources(value: Any) -> bool:
    return all(isinstance(k, str) and k and isinstance(v, (int, float)) and not isinstance(v, bool)
               and math.isfinite(v) and v >= 0 for k, v in value.items())


KEYS = (
    Key("model", "model", str, lambda v: all(v.split(",")), "a model id, or several: a list or 'a,b'"),
    Key("mutatorModel", "mutator_model", str, bool, "a non-empty model id"),
    Key("mutatorCmd", "mutator_cmd", str, lambda v: True, "your mutator's command line ('' = none)"),
    Key("replicates", "replicates", int, _positive, "an integer >= 1"),
    Key("rounds", "rounds", int, lambda v: v >= 0, "an integer >= 0"),
    Key("maxTurns", "max_turns", int, _positive, "an integer >= 1"),
    Key("concurrency", "concurrency", int, _positive, "an integer >= 1"),
    Key("strategy", "strategy", str, bool, "a strategy id"),
    Key("strategyOpts", "strategy_opts", dict, lambda v: True, "a JSON object"),
    Key("seed", "seed", int, lambda v: True, "an integer"),
    Key("skillDir", "skill_dir", Path, lambda v: True, "a path to a skill folder"),
    Key("dataDir", "data_dir", Path, lambda v: True, "a path"),
    Key("sandbox", "sandbox", str, lambda v: v in ("auto", "none", "bwrap"), "auto, none or bwrap"),
    Key("graderTimeoutMs", "grader_timeout_ms", int, _positive, "milliseconds >= 1"),
    Key("watchdog.silenceMs", "build_timeout_ms", int, _positive, "milliseconds >= 1"),
    Key("watchdog.heartbeatMs", "build_heartbeat_ms", int, _positive, "milliseconds >= 1"),
    Key("score.wCost", "w_cost", float, lambda v: v >= 0, "a number >= 0"),
    Key("score.wSteps", "w_steps", float, lambda v: v >= 0, "a number >= 0"),
    Key("score.minImprovement", "min_improvement", float, lambda v: True, "a number"),
    Key("score.gateZ", "gate_z", float, lambda v: v >= 0, "a number >= 0"),
    Key("solve", "solve", str, lambda v: v in ("auto", "on", "off"), "on or off (auto, kept for old configs, is off)"),
    Key("solveAttempts", "solve_attempts", int, _positive, "an integer >= 1"),
    Key("solveMinScore", "solve_min_score", float, lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    Key("metaSkillEvery", "meta_skill_every", int, lambda v: v >= 0, "an integer >= 0 (0 = off)"),
    Key("confirm", "confirm", bool, lambda v: True, "true or false"),
    Key("valQueryWarn", "val_query_warn", int, lambda v: v >= 0, "an integer >= 0"),
    Key("critic.maxSkillLines", "critic_max_lines", int, _positive, "an integer >= 1"),
    Key("critic.maxSkillBytes", "critic_max_bytes", int, _positive, "an integer >= 1"),
    Key("critic.maxGrowth", "critic_max_growth", float, lambda v: v >= 0, "a fraction >= 0 (0.2 = +20%)"),
    Key("cellTimeoutMs", "cell_timeout_ms", int, _positive, "milliseconds >= 1", 30 * 60 * 1000),
    Key("maxOutputMb", "max_output_mb", float, _positive, "megabytes > 0", 20.0),
    Key("infraRetries", "infra_retries", int, lambda v: v >= 0, "an integer >= 0", 1),
    Key("maxFailedShare", "max_failed_share", float, lambda v: 0 <= v < 1, "a fraction in [0, 1)", 0.25),
    Key("proposeMinDelta", "propose_min_delta", float, lambda v: v >= 0, "a number >= 0", 0.02),
    Key("passEnv", "pass_env", list, lambda v: all(isinstance(n, str) and ENV_NAME.match(n) for n in v),
        "a list of environment variable names to pass to agents and graders"),
    Key("critic.minGrowthBytes", "critic_min_growth_bytes", int, lambda v: v >= 0, "an integer >= 0"),
    Key("executor", "executor", str, lambda v: v in ("local", "ray"), "local or ray", "local"),
    Key("rayAddress", "ray_address", str, lambda v: True, "'' (a private local Ray instance), 'auto' or HOST:PORT",
        ""),
    Key("cellResources", "cell_resources", dict, _resources,
        'an object of Ray resource -> amount >= 0 per cell, e.g. {"num_cpus": 1}', {"num_cpus": 1}),
    Key("score.gateMethod", "gate_method", str, lambda v: v in ("signflip", "t"),
        "signflip (exact for any symmetric noise) or t (Student t, exact for normal noise)", "signflip"),
    Key("score.tieRule", "tie_rule", str, lambda v: v in ("keep", "noAddedCost"),
        "noAddedCost (a tie the gate keeps is kept only when it adds no cost) or keep (every tie)", "noAddedCost"),
    Key("evidenceReplicates", "evidence_replicates", int, lambda v: v >= 0,
        "an integer >= 0: replicates of a kept candidate's train evaluation (0 = the run's replicates)", 0),
    Key("sequential.waves", "sequential", bool, lambda v: True, "true (val in waves, one replicate each, with "
        "early looks) or false (every val cell at once)", True),
    Key("sequential.earlyZ", "sequential_early_z", float, _positive, "a z > 0 (the early looks' boundary)", 2.0),
    Key("screen.tasks", "screen_tasks", int, lambda v: v >= 0, "an integer >= 0 (0 = no screen)", 0),
    Key("screen.replicates", "screen_replicates", int, _positive, "an integer >= 1", 1),
    Key("screen.z", "screen_z", float, _positive, "a z > 0 (the screen's false-kill rate is 1 − Φ(z))", 2.0),
    Key("suites", "suites", dict, lambda v: True, "an object of suite name -> path"),
    Key("pricing", "pricing", dict, lambda v: True, "an object of model -> prices"),
)
PATH_KEYS = {"skill_dir", "data_dir"}


@dataclass(frozen=True)
class Settings:
    model: str
    mutator_model: str
    mutator_cmd: str
    replicates: int
    rounds: int
    max_turns: int
    concurrency: int
    strategy: str
    strategy_opts: dict
    seed: int
    skill_dir: Path
    data_dir: Path
    sandbox: str
    grader_timeout_ms: int
    build_timeout_ms: int
    build_heartbeat_ms: int
    w_cost: float
    w_steps: float
    min_improvement: float
    gate_z: float
    solve: str
    solve_attempts: int
    solve_min_score: float
    meta_skill_every: int
    confirm: bool
    val_query_warn: int
    critic_max_lines: int
    critic_max_bytes: int
    critic_max_growth: float
    cell_timeout_ms: int
    max_output_mb: float
    infra_retries: int
    max_failed_share: float
    propose_min_delta: float
    pass_env: list[str]
    critic_min_growth_bytes: int
    suites: dict[str, Path]
    pricing: dict[str, Price] = field(repr=False)
    config_file: Path = CONFIG_FILE
    executor: str = "local"            # where cells run: local | ray (eval/executors); never part of a run id
    ray_address: str = ""
    cell_resources: dict = field(default_factory=lambda: {"num_cpus": 1})
    gate_method: str = "signflip"      # how the gate's critical value is made (mutator/scoring/signflip.py, score.compare)
    tie_rule: str = "noAddedCost"      # which of the gate's ties are kept (mutator/scoring/ties.py, score.compare)
    evidence_replicates: int = 0       # a kept candidate's train evaluation: replicates (0 = `replicates`)

    @property
    def train_replicates(self) -> int:
        """Replicates of the train evaluation that is the mutator's evidence: evidenceReplicates, else replicates."""
        return self.evidence_replicates or self.replicates
    sequential: bool = True            # val in waves with early looks (mutator/scoring/sequential.py)
    sequential_early_z: float = 2.0
    screen_tasks: int = 0              # the kill-only train screen: tasks per candidate (0 = off)
    screen_replicates: int = 1
    screen_z: float = 2.0

    @property
    def models(self) -> tuple[str, ...]:
        """The eval models: one for a plain run; several ('a,b') measure every cell on each of them."""
        return tuple(self.model.split(","))

    @property
    def db_path(self) -> Path:
        return self.data_dir / "mutator.db"


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
