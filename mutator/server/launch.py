"""Start `run.py` from the dashboard as a separate process: a run (launch) or a test run.

Every field is checked against what config.json and the project offer (suite names, seed folders,
strategies, priced models, backends, bounded numbers) — a request never passes a path or a free-form flag.
A real run needs a budget cap and an explicit `confirmed` of the cost estimate (`plan_estimate`, as --plan).
Children are detached (own session) so stopping the dashboard never stops a run.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from eval.agents.choice import SOLVERS
from eval.errors import SkillMutatorError
from mutator.config import FAKE_NOISES, ROOT, ConfigError, Settings, load_settings
from mutator.store.db import connect_readonly
from mutator.store.queries.runs import holdout_of
from mutator.validity.fake_ids import fake_builder, fake_id

RUN_ID = re.compile(r"^run-[0-9a-f]{6,64}$")
LOG_TAIL = 4000
MAX_BUDGET_USD = 10_000.0
BUDGET = re.compile(r"^[0-9]{1,6}(\.[0-9]{1,4})?$")   # ASCII only: never '²' or '١'


class LaunchError(SkillMutatorError, ValueError):
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
    from strategies import StrategyError, make_strategy, registry
    ok = []
    for sid in registry():
        try:
            make_strategy(sid, {})
            ok.append(sid)
        except (StrategyError, ImportError):
            continue
    return ok


def options(s: Settings) -> dict[str, Any]:
    return {"suites": sorted(s.suites), "seeds": sorted(seeds(s)), "strategies": available_strategies(),
            "models": sorted(s.pricing), "backends": list(SOLVERS), "defaults": {
                "seed": s.skill_dir.name, "strategy": s.strategy, "model": s.model,
                "replicates": s.replicates, "rounds": s.rounds, "fake_noise": s.fake_noise,
                "suite": "clean-train" if "clean-train" in s.suites else "",
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


def _budget(body: dict) -> float:
    value = body.get("budget_usd")
    if isinstance(value, str) and BUDGET.match(value.strip()):
        value = float(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, float) or not 0 < value <= MAX_BUDGET_USD:
        raise LaunchError(f"budget_usd: a real run needs a spend cap in USD, a number above 0 and at most "
                          f"{MAX_BUDGET_USD:g} (run.py --budget-usd); got {value!r}")
    return value


@dataclass(frozen=True)
class Launch:
    """A checked launch request."""
    suite: str
    val: str
    holdout: str | None
    seed: str
    strategy: str
    model: str
    replicates: int
    rounds: int
    real: bool
    backend: str | None = None
    budget_usd: float | None = None
    fake_noise: str | None = None   # a dry run's --fake-noise, as the request said it (None: not said)


def parse_launch(body: dict, s: Settings) -> Launch:
    """Check every field of a launch request (LaunchError names the field and the allowed values)."""
    suites = sorted(s.suites)
    suite, val = _choice(body, "suite", suites), _choice(body, "val", suites)
    holdout = _choice(body, "holdout", suites, optional=True)
    if suite == val:
        raise LaunchError("val: must differ from suite (the gate would otherwise score on the mutator's "
                          "evidence)")
    if holdout in (suite, val):
        raise LaunchError("holdout: must differ from both suite and val")
    real = body.get("real", False)
    if not isinstance(real, bool):
        raise LaunchError(f"real: must be true or false; got {real!r}")
    noise = None if body.get("fake_noise") is None else _choice(body, "fake_noise", list(FAKE_NOISES))
    if real and noise == "realistic":   # as run.py refuses --real --fake-noise realistic
        raise LaunchError("fake_noise: realistic makes the dry run's fake build agent noisy; real agents "
                          "bring their own noise: drop fake_noise or real")
    launch = Launch(suite=suite, val=val, holdout=holdout, seed=_choice(body, "seed", sorted(seeds(s))),
                    strategy=_choice(body, "strategy", available_strategies()),
                    model=_choice(body, "model", sorted(s.pricing)),
                    replicates=_int(body, "replicates", 1, 20), rounds=_int(body, "rounds", 0, 200),
                    real=real, fake_noise=None if real else noise)
    if not real:
        return launch
    return replace(launch, backend=_choice(body, "backend", list(SOLVERS)), budget_usd=_budget(body))


def launch_argv(body: dict, s: Settings, data_dir: Path) -> list[str]:
    """The run.py command line for a launch request: a zero-spend dry run (`fake_noise` off or realistic: its
    --fake-noise), or with `real` a run of real agents (--real --agent BACKEND --budget-usd USD) once the
    request says `confirmed` (the user saw the estimate)."""
    r = parse_launch(body, s)
    if r.real and body.get("confirmed") is not True:
        raise LaunchError("confirmed: a real run spends money; show its estimated cost "
                          "(POST /api/launch/plan) and send confirmed: true once the user has agreed to it")
    argv = [sys.executable, str(ROOT / "run.py"), "--suite", r.suite, "--val", r.val, "--skill-dir",
            str(seeds(s)[r.seed]), "--strategy", r.strategy, "--model", r.model,
            "--replicates", str(r.replicates), "--rounds", str(r.rounds), "--data-dir", str(data_dir)]
    if s.config_file != ROOT / "config.json":
        argv += ["--config", str(s.config_file)]
    if r.real:
        argv += ["--real", "--agent", r.backend, "--budget-usd", str(r.budget_usd)]   # str: no digits lost
    if r.fake_noise:   # said outright, so neither config.json nor the environment picks the dry run's noise
        argv += ["--fake-noise", r.fake_noise]
    return argv + (["--holdout", r.holdout] if r.holdout else [])


def plan_estimate(body: dict, s: Settings, data_dir: Path) -> dict[str, Any]:
    """What `run.py --plan` prints for this launch request (same settings, same store), as data plus its
    text."""
    from eval.agents import AgentSetupError, make_backend
    from eval.suite import load_suite
    from mutator.validity.plan import plan, render_plan
    r = parse_launch(body, s)
    run_settings = load_settings({"skill_dir": seeds(s)[r.seed], "strategy": r.strategy, "model": r.model,
                                  "replicates": r.replicates, "rounds": r.rounds, "data_dir": data_dir},
                                 config_file=s.config_file, environ={})
    build_id, mutator_id = "%", ""   # a seed cell by any build agent, when the backend cannot say what it is
    if r.real:
        try:
            backend = make_backend(r.backend, command="", config_file=s.config_file)
            build_id = backend.implementation("build")
            # the mutator: the same backend (choose()), unless config.json names an own command
            mutator = make_backend("command", command=s.mutator_cmd) if s.mutator_cmd else backend
            mutator_id = mutator.implementation("mutator")
        except (AgentSetupError, OSError):
            pass
    else:   # a rehearsal's noise is its own fake agent's (as an A/A run of it measured), not the quiet one's
        build_id = fake_id(*fake_builder(r.fake_noise or s.fake_noise))
    p = plan(run_settings, train=load_suite(s.suites[r.suite]), val=load_suite(s.suites[r.val]),
             holdout=load_suite(s.suites[r.holdout]) if r.holdout else None, build_id=build_id,
             mutator_id=mutator_id)
    return {"real": r.real, "backend": r.backend, "model": r.model, "budget_usd": r.budget_usd,
            "run_usd": p.run_usd, "round_usd": p.round_usd, "test_usd": p.test_usd, "cell_usd": p.cell_usd,
            "cell_source": p.cell_source, "mutator_usd": p.mutator_usd, "mutator_source": p.mutator_source,
            "rounds": p.rounds, "candidates": p.candidates,
            "over_budget": r.real and p.run_usd > r.budget_usd,
            "text": render_plan(p)}


def stored_holdout(data_dir: Path, run_id: str) -> str | None:
    path = data_dir / "mutator.db"
    if not path.is_file():
        return None
    db = connect_readonly(path)
    try:
        return holdout_of(db, run_id)
    finally:
        db.conn.close()


def argv_for_test(body: dict, s: Settings, data_dir: Path) -> list[str]:
    run_id = body.get("run_id")
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise LaunchError(f"run_id: must look like run-<hex>; got {run_id!r}")
    # a configured suite, or the run's own stored holdout (a path suite included)
    suite = _choice(body, "suite", sorted({*s.suites, *filter(None, [stored_holdout(data_dir, run_id)])}))
    argv = [sys.executable, str(ROOT / "run.py"), "--test-run", run_id, "--suite", suite,
            "--data-dir", str(data_dir)]
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
    """Processes this dashboard started; they outlive it (own session). Their logs go to a temp dir made by
    the first of them: a dashboard that starts nothing leaves nothing behind."""
    log_dir: Path | None = None
    items: list[Child] = field(default_factory=list)

    def spawn(self, kind: str, argv: list[str]) -> Child:
        n = len(self.items) + 1
        if self.log_dir is None:
            self.log_dir = Path(tempfile.mkdtemp(prefix="sm-dashboard-"))
        log = self.log_dir / f"{kind}-{n}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        child = Child(n, kind, argv, log, proc, time.time())
        self.items.append(child)
        return child

    def to_json(self) -> list[dict]:
        return [c.to_json() for c in reversed(self.items)]
