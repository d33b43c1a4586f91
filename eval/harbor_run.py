"""Run a Harbor task's verifier (and, for the oracle check, its solution) in the task's own container.

As Harbor runs a trial (`verify_in`): the agent (or solve.sh) and then the verifier run in ONE container of
the task's image (sandbox/container.py::Trial), so what the first wrote anywhere in it is what the verifier
sees: tests/ is copied in at /tests, /logs/verifier made empty, `bash /tests/test.sh` exec'ed with only
[verifier] env, and /logs/verifier copied out into the cell before the container is removed. When the agent
ran on the host (`--sandbox bwrap|none`) or a cell is re-graded, `verify` runs the verifier in a fresh
container instead: the cell's work dir bound at WORKDIR, tests/ at /tests read-only, a cell folder at
/logs/verifier; only WORKDIR carries over. Either way: no network unless allowed, the task's cpus and memory;
`reward.txt` becomes the test `reward`, a `reward.json` its numeric fields, each in [0, 1]. A verifier that
scores nothing because it could not reach the network it was denied is a grader error, not a 0.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from eval.harbor import HarborError, HarborTask, read_task
from sandbox import SandboxError
from sandbox.container import Bind, BuildError, ContainerEngine, Finished, Limits, Trial

VERIFIER = ["bash", "/tests/test.sh"]        # as Harbor runs it
ORACLE = ["bash", "/solution/solve.sh"]
ORACLE_TIMEOUT_S = 600.0                     # when task.toml gives the agent no timeout
# run as root: an image whose USER is not may still write its logs there
CLEAR_LOGS = ["bash", "-c", "rm -rf /logs/verifier && mkdir -p /logs/verifier && chmod 777 /logs/verifier"]
# What a tool prints when a name does not resolve or no route exists (curl, wget, apt, pip/urllib3, uv, npm,
# Python's socket): the words of a verifier fetching its tools with the network off. Only these count.
NO_NETWORK = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Temporary failure resolving|"
    r"Name or service not known|Failed to establish a new connection|Network is unreachable|"
    r"unable to resolve host address|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|"
    r"failed to lookup address information|"
    r"Could not resolve '[^']+'|No address associated with hostname", re.IGNORECASE)
NETWORK_FIX = ("the suite was imported without --allow-task-network; re-import it with that flag (the task "
               "allows internet) or install the verifier's tools in the task's Dockerfile")


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


def network_withheld(suite_options: dict, task: HarborTask) -> bool:
    """The task allows internet but its suite was imported without --allow-task-network."""
    return task.config.allow_internet and not task_network(suite_options, task)


def _fresh_logs(logs: Path) -> None:
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir(parents=True)


def _judge(task: HarborTask, done: Finished, logs: Path, withheld: bool) -> tuple[dict | None, str]:
    """(grades, "") or (None, why) from a finished verifier and the logs it left."""
    (logs.parent / "verifier.log").write_text(done.output, encoding="utf-8")
    if done.timed_out:
        return None, f"verifier timed out after {task.config.verifier_timeout_sec:g} s and was removed"
    try:
        grades = read_reward(logs)
    except ValueError as err:
        grades = None
        why = f"verifier (exit {done.exit_code}): {err}; output tail: {done.output.strip()[-500:]}"
    if withheld and not any((grades or {}).values()) and (found := NO_NETWORK.search(done.output)):
        return None, (f"verifier could not reach the network ({found.group(0)!r} in its output): "
                      f"{NETWORK_FIX}; output tail: {done.output.strip()[-300:]}")
    return (grades, "") if grades is not None else (None, why)


def verify(engine: ContainerEngine, task: HarborTask, image: str, work: Path, logs: Path, *,
           network: bool = False, withheld: bool = False) -> tuple[dict | None, str]:
    """Run tests/test.sh against `work` in a fresh container (only WORKDIR carries over); (grades, "") or
    (None, why). `withheld`: the network was denied to a task that allows it (a resolution failure is then
    a grader error)."""
    _fresh_logs(logs)
    cfg = task.config
    done = engine.run(image, VERIFIER, workdir=task.workdir, env=cfg.verifier_env,
                      binds=[Bind(work, task.workdir, writable=True), Bind(task.tests, "/tests"),
                             Bind(logs, "/logs/verifier", writable=True)],
                      limits=Limits(cfg.cpus, cfg.memory_mb, cfg.verifier_timeout_sec, network))
    return _judge(task, done, logs, withheld)


def verify_in(trial: Trial, task: HarborTask, logs: Path, *,
              withheld: bool = False) -> tuple[dict | None, str]:
    """Run tests/test.sh in the trial's own container, after its agent, as Harbor does: tests/ copied in at
    /tests (replacing anything there), /logs/verifier emptied, only [verifier] env; /logs/verifier copied out
    to `logs`. (grades, "") or (None, why)."""
    _fresh_logs(logs)
    cleared = trial.exec(CLEAR_LOGS, timeout_s=120, user="0")
    if cleared.exit_code != 0:
        return None, f"verifier could not run: making /logs/verifier failed: {cleared.output.strip()[-300:]}"
    if problem := trial.put(task.tests, "/tests"):
        return None, f"verifier could not run: {problem}"
    done = trial.exec(VERIFIER, env=task.config.verifier_env, timeout_s=task.config.verifier_timeout_sec)
    if problem := trial.take("/logs/verifier", logs):
        return None, f"verifier's logs: {problem}"
    return _judge(task, done, logs, withheld)


def trial_for(engine: ContainerEngine, task: HarborTask, image: str, work: Path, *,
              network: bool) -> Trial:
    """A trial container of the task's image with `work` at its WORKDIR (not started)."""
    cfg = task.config
    return Trial(engine, image, workdir=task.workdir, binds=[Bind(work, task.workdir, writable=True)],
                 limits=Limits(cfg.cpus, cfg.memory_mb, network=network))


def run_oracle(trial: Trial, task: HarborTask, solution: Path) -> str:
    """solve.sh (the task's oracle) in the trial's container, copied in at /solution; "" or why it failed."""
    timeout = task.config.agent_timeout_sec or ORACLE_TIMEOUT_S
    if problem := trial.put(solution, "/solution"):
        return f"oracle could not run: {problem}"
    done = trial.exec(ORACLE, timeout_s=timeout)
    if done.timed_out:
        return f"oracle timed out after {timeout:g} s"
    return "" if done.exit_code == 0 else f"oracle exited {done.exit_code}: {done.output.strip()[-500:]}"


def has_oracle(solution: Path) -> bool:
    """An imported task has an oracle when its suite keeps oracle/<id>/solve.sh."""
    return (Path(solution) / "solve.sh").is_file()


@dataclass(frozen=True)
class OracleCheck:
    task_id: str
    oracle: float | None          # the verifier's mean reward after solve.sh (should be 1); None: not run
    null: float | None            # after doing nothing (should be 0)
    error: str = ""
    build_failed: bool = False    # the image did not build or pull: no verdict on the verifier
    no_oracle: bool = False       # the task ships no solve.sh: only its do-nothing score is checked

    @property
    def valid(self) -> bool:
        return self.null == 0.0 and (self.no_oracle or self.oracle == 1.0)

    @property
    def verdict(self) -> str:
        """ok, no oracle (do-nothing 0, nothing else to check), image build failed, INVALID."""
        if self.build_failed:
            return "image build failed"
        if not self.valid:
            return "INVALID"
        return "no oracle" if self.no_oracle else "ok"


def _mean(grades: dict | None) -> float | None:
    return sum(grades.values()) / len(grades) if grades else None


def _tail(path: Path, n: int = 300) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").strip() if path.is_file() else ""
    return text[-n:]


def check_task(engine: ContainerEngine, task: HarborTask, solution: Path, inputs: Path, scratch: Path, *,
               network: bool = False, withheld: bool = False) -> OracleCheck:
    """Oracle and do-nothing trials of one task, each in its own container from a fresh copy of the task's
    inputs: solve.sh then test.sh in one, test.sh alone in the other (no solve.sh: the second only)."""
    try:
        image = image_of(engine, task)
    except BuildError as err:
        return OracleCheck(task.id, None, None, str(err), build_failed=True)
    no_oracle = not has_oracle(solution)
    scores: dict[str, float | None] = {"oracle": None}
    errors = []
    for who in ("null",) if no_oracle else ("oracle", "null"):
        work = scratch / task.id / who / "work"
        shutil.copytree(inputs, work) if inputs.is_dir() else work.mkdir(parents=True)
        if problem := engine.copy_out(image, task.workdir, work):
            # as a cell gets it (eval/graders/harbor_runner.py)
            return OracleCheck(task.id, None, None, problem)
        trial = trial_for(engine, task, image, work, network=network)
        try:
            trial.start()
            if who == "oracle" and (problem := run_oracle(trial, task, solution)):
                errors.append(problem)
            grades, error = verify_in(trial, task, work.parent / "verifier", withheld=withheld)
        except SandboxError as err:
            grades, error = None, str(err)
        finally:
            trial.close()
        scores[who] = _mean(grades)
        if error:
            errors.append(f"{who}: {error}")
        elif who == "oracle" and scores[who] != 1.0 or who == "null" and scores[who] != 0.0:
            errors.append(f"{who}: scored {scores[who]:.2f}; verifier output tail: "
                          f"{_tail(work.parent / 'verifier.log') or '(none)'}")
    return OracleCheck(task.id, scores["oracle"], scores["null"], "; ".join(errors), no_oracle=no_oracle)
