"""Start `run.py` from the dashboard as a separate process: a run (launch) or a test run.

Every field is checked against what config.json and the project offer (suite names, seed folders,
strategies, priced models, bounded integers) — a request never passes a path or a free-form flag.
Children are detached (own session) so stopping the dashboard never stops a run.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mutator.config import ROOT, ConfigError, Settings, load_settings

RUN_ID = re.compile(r"^run-[0-9a-f]{6,64}$")
STRATEGIES = ("greedy", "branching", "population", "pareto")
LOG_TAIL = 4000


class LaunchError(ValueError):
    """The launch request is invalid; the message names the field and the allowed values."""


def settings(config_file: Path | None) -> Settings:
    try:
        return load_settings({}, config_file=config_file, environ={})
    except ConfigError:
        return load_settings({}, environ={})


def seeds(s: Settings) -> dict[str, Path]:
    """Seed skills offered in the drawer: the configured skillDir plus any suites/*/SKILL.md folder."""
    found = {s.skill_dir.name: s.skill_dir}
    for skill_md in sorted((ROOT / "suites").glob("*/SKILL.md")):
        found.setdefault(skill_md.parent.name, skill_md.parent)
    return found


def available_strategies() -> list[str]:
    from strategies import StrategyError, make_strategy
    ok = []
    for sid in STRATEGIES:
        try:
            make_strategy(sid, {})
            ok.append(sid)
        except (StrategyError, ImportError):
            continue
    return ok


def options(s: Settings) -> dict[str, Any]:
    return {"suites": sorted(s.suites), "seeds": sorted(seeds(s)), "strategies": available_strategies(),
            "models": sorted(s.pricing), "defaults": {
                "seed": s.skill_dir.name, "strategy": s.strategy, "model": s.model, "replicates": s.replicates,
                "rounds": s.rounds, "suite": "clean-train" if "clean-train" in s.suites else "",
                "val": "clean-val" if "clean-val" in s.suites else "",
                "holdout": "clean-test" if "clean-test" in s.suites else ""}}


def _choice(body: dict, key: str, allowed: list[str], *, optional: bool = False) -> str | None:
    value = body.get(key)
    if value in (None, "") and optional:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise LaunchError(f"{key}: must be one of {', '.join(allowed) or '(none configured)'}; got {value!r}")
    return value


def _int(body: dict, key: str, low: int, high: int) -> int:
    value = body.get(key)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():  # not '²' or '①'
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise LaunchError(f"{key}: must be an integer from {low} to {high}; got {value!r}")
    return value


def launch_argv(body: dict, s: Settings, data_dir: Path) -> list[str]:
    """The run.py command line for a launch request (dry run: run.py has no --real here)."""
    suites = sorted(s.suites)
    suite, val = _choice(body, "suite", suites), _choice(body, "val", suites)
    holdout = _choice(body, "holdout", suites, optional=True)
    if suite == val:
        raise LaunchError("val: must differ from suite (the gate would otherwise score on the mutator's evidence)")
    if holdout in (suite, val):
        raise LaunchError("holdout: must differ from both suite and val")
    seed = _choice(body, "seed", sorted(seeds(s)))
    strategy = _choice(body, "strategy", available_strategies())
    model = _choice(body, "model", sorted(s.pricing))
    argv = [sys.executable, str(ROOT / "run.py"), "--suite", suite, "--val", val, "--skill-dir", str(seeds(s)[seed]),
            "--strategy", strategy, "--model", model, "--replicates", str(_int(body, "replicates", 1, 20)),
            "--rounds", str(_int(body, "rounds", 0, 200)), "--data-dir", str(data_dir)]
    if s.config_file != ROOT / "config.json":
        argv += ["--config", str(s.config_file)]
    return argv + (["--holdout", holdout] if holdout else [])


def argv_for_test(body: dict, s: Settings, data_dir: Path) -> list[str]:
    run_id = body.get("run_id")
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise LaunchError(f"run_id: must look like run-<hex>; got {run_id!r}")
    suite = _choice(body, "suite", sorted(s.suites))
    argv = [sys.executable, str(ROOT / "run.py"), "--test-run", run_id, "--suite", suite, "--data-dir", str(data_dir)]
    if s.config_file != ROOT / "config.json":
        argv += ["--config", str(s.config_file)]
    return argv


@dataclass
class Child:
    id: int
    kind: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen
    started_at: float

    def to_json(self) -> dict:
        code = self.proc.poll()
        try:
            with self.log.open("rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - LOG_TAIL))
                tail = fh.read().decode(errors="replace")
        except OSError:
            tail = ""
        return {"id": self.id, "kind": self.kind, "pid": self.proc.pid, "argv": self.argv[1:],
                "status": "running" if code is None else "exited", "returncode": code,
                "started_at": self.started_at, "log_tail": tail}


@dataclass
class Children:
    """Processes this dashboard started; they outlive it (own session)."""
    log_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="sm-dashboard-")))
    items: list[Child] = field(default_factory=list)

    def spawn(self, kind: str, argv: list[str]) -> Child:
        n = len(self.items) + 1
        log = self.log_dir / f"{kind}-{n}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        child = Child(n, kind, argv, log, proc, time.time())
        self.items.append(child)
        return child

    def to_json(self) -> list[dict]:
        return [c.to_json() for c in reversed(self.items)]
