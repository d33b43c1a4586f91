"""Run a Harbor task's verifier (and, for the oracle check, its solution) in the task's own container.

The verifier runs in a fresh container of the task's image after the agent is gone: the cell's work dir bound
at the task's WORKDIR, the task's tests/ at /tests read-only, a cell folder at /logs/verifier writable, no
network, the task's cpus and memory, only [verifier] env. Its `reward.txt` becomes the test `reward`, a
`reward.json` its numeric fields, each in [0, 1]. Never mounts the skill, the suite or the oracle for a cell.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from eval.harbor import HarborError, HarborTask, read_task
from sandbox.container import Bind, BuildError, ContainerEngine, Limits

VERIFIER = ["bash", "/tests/test.sh"]        # as Harbor runs it
ORACLE = ["bash", "/solution/solve.sh"]
ORACLE_TIMEOUT_S = 600.0                     # when task.toml gives the agent no timeout


def suite_task(suite_path: Path, task_id: str) -> HarborTask:
    """The Harbor task an imported suite keeps for `task_id` (harbor/<id>/, the
    oracle apart in oracle/<id>/)."""
    folder = Path(suite_path) / "harbor" / task_id
    if not folder.is_dir():
        raise HarborError(f"{suite_path}: harbor/{task_id}/ is missing; "
                          "re-import the suite with --import-harbor")
    return read_task(folder)


def image_of(engine: ContainerEngine, task: HarborTask) -> str:
    """The task's image: built once per environment content hash (raises BuildError with the log's tail)."""
    cfg = task.config
    return engine.image_for(task.environment, task.environment_hash(), timeout_s=cfg.build_timeout_sec,
                            base_image=cfg.docker_image)


def read_reward(logs: Path) -> dict[str, float]:
    """reward.json's numeric fields, else reward.txt as `reward`; each must be a number in [0, 1]."""
    as_json, as_text = logs / "reward.json", logs / "reward.txt"
    if as_json.is_file():
        try:
            obj = json.loads(as_json.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"reward.json is not JSON ({err.msg})") from None
        if not isinstance(obj, dict):
            raise ValueError("reward.json must be an object of name -> number")
        grades = {str(k): v for k, v in obj.items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool)}
    elif as_text.is_file():
        text = as_text.read_text(encoding="utf-8").strip()
        try:
            grades = {"reward": float(text)}
        except ValueError:
            raise ValueError(f"reward.txt holds {text[:80]!r}, not a number") from None
    else:
        raise ValueError("the verifier wrote neither /logs/verifier/reward.txt nor reward.json")
    if not grades:
        raise ValueError("reward.json holds no numeric field")
    for name, value in grades.items():
        if not math.isfinite(value) or not 0 <= value <= 1:
            raise ValueError(f"reward {name!r} = {value!r} is outside [0, 1]")
    return {name: float(value) for name, value in grades.items()}


def task_network(suite_options: dict, task: HarborTask) -> bool:
    """Network for a task's containers only when the task asks (allow_internet) and the user allowed it at
    import (suite.md `task_network: allowed`, from --allow-task-network)."""
    return task.config.allow_internet and suite_options.get("task_network") == "allowed"


def verify(engine: ContainerEngine, task: HarborTask, image: str, work: Path, logs: Path, *,
           network: bool = False) -> tuple[dict | None, str]:
    """Run tests/test.sh against `work` in a fresh container; (grades, "") or (None, why)."""
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir(parents=True)
    cfg = task.config
    done = engine.run(image, VERIFIER, workdir=task.workdir, env=cfg.verifier_env,
                      binds=[Bind(work, task.workdir, writable=True), Bind(task.tests, "/tests"),
                             Bind(logs, "/logs/verifier", writable=True)],
                      limits=Limits(cfg.cpus, cfg.memory_mb, cfg.verifier_timeout_sec, network))
    (logs.parent / "verifier.log").write_text(done.output, encoding="utf-8")
    if done.timed_out:
        return None, f"verifier timed out after {cfg.verifier_timeout_sec:g} s and was removed"
    try:
        return read_reward(logs), ""
    except ValueError as err:
        return None, f"verifier (exit {done.exit_code}): {err}; output tail: {done.output.strip()[-500:]}"


def run_oracle(engine: ContainerEngine, task: HarborTask, image: str, work: Path, solution: Path, *,
               network: bool = False) -> str:
    """Run `solution`/solve.sh (the task's oracle) against `work` in a fresh
    container; "" or why it failed."""
    cfg = task.config
    timeout = cfg.agent_timeout_sec or ORACLE_TIMEOUT_S
    done = engine.run(image, ORACLE, workdir=task.workdir, binds=[Bind(work, task.workdir, writable=True),
                                                                    Bind(solution, "/solution")],
                      limits=Limits(cfg.cpus, cfg.memory_mb, timeout, network))
    if done.timed_out:
        return f"oracle timed out after {timeout:g} s"
    return "" if done.exit_code == 0 else f"oracle exited {done.exit_code}: {done.output.strip()[-500:]}"


@dataclass(frozen=True)
class OracleCheck:
    task_id: str
    oracle: float | None          # the verifier's mean reward after solve.sh (should be 1)
    null: float | None            # after doing nothing (should be 0)
    error: str = ""

    @property
    def valid(self) -> bool:
        return self.oracle == 1.0 and self.null == 0.0


def _mean(grades: dict | None) -> float | None:
    return sum(grades.values()) / len(grades) if grades else None


def check_task(engine: ContainerEngine, task: HarborTask, solution: Path, inputs: Path, scratch: Path, *,
               network: bool = False) -> OracleCheck:
    """Oracle and do-nothing runs of one task, each from a fresh copy of the task's inputs."""
    try:
        image = image_of(engine, task)
    except BuildError as err:
        return OracleCheck(task.id, None, None, f"image build failed: {err}")
    scores: dict[str, float | None] = {}
    errors = []
    for who in ("oracle", "null"):
        work = scratch / task.id / who / "work"
        shutil.copytree(inputs, work) if inputs.is_dir() else work.mkdir(parents=True)
        if problem := engine.copy_out(image, task.workdir, work):
            # as a cell gets it (eval/graders/harbor_runner.py)
            return OracleCheck(task.id, None, None, problem)
        if who == "oracle" and (problem := run_oracle(engine, task, image, work, solution, network=network)):
            errors.append(problem)
        grades, error = verify(engine, task, image, work, work.parent / "verifier", network=network)
        scores[who] = _mean(grades)
        if error:
            errors.append(f"{who}: {error}")
    return OracleCheck(task.id, scores["oracle"], scores["null"], "; ".join(errors))

