"""The `harbor` runner: an imported Harbor task's verifier (tests/test.sh) scores the cell in the task's own
container (eval/harbor_run.py); its reward is the cell's test `reward`.

Before the agent, `prepare_cell` builds the image and copies its WORKDIR into the cell's work dir. The engine
is the one `--sandbox podman|docker` names, else the first of podman and docker that works here; with none,
`--sandbox bwrap` runs the verifier in the task's layout on the host's own system (sandbox/host_layout.py; no
image built). Under `--sandbox auto|podman|docker` with an engine the agent runs in a container of the task's
image (sandbox/container_launcher.py::TaskContainer); under `bwrap` or `none`, on the host in that work dir. An image that fails to build, or no engine at all, makes the cell an
infra_error with the reason (a build log's tail), or a grader error if it happens only at grading; never a score.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from eval.harbor import HarborError, HarborTask
from eval.harbor_run import image_of, suite_task, task_network, verify
from eval.jobs import CellJob
from sandbox import SandboxError
from sandbox.container import ContainerEngine, Limits, get_engine
from sandbox.container_launcher import ContainerSandbox, TaskContainer
from sandbox.host_layout import HostLayout

_ENGINES: dict[str, ContainerEngine] = {}


def engine_for(engine_id: str = "auto") -> ContainerEngine:
    """The checked engine, checked once per process."""
    if engine_id not in _ENGINES:
        _ENGINES[engine_id] = get_engine(engine_id)
    return _ENGINES[engine_id]


def backend_for(launcher) -> ContainerEngine | HostLayout:
    """The container engine (`--sandbox podman|docker`'s, else the first that works); without one, under a
    bwrap launcher, the task's layout on the host's own system."""
    try:
        return launcher.engine() if isinstance(launcher, ContainerSandbox) else engine_for()
    except SandboxError as err:
        if getattr(launcher, "id", "") != "bwrap" or getattr(launcher, "choice", "auto") != "auto":
            raise SandboxError(f"{err}; without an engine, --sandbox bwrap runs the verifier on the host's own "
                               f"system in the task's layout") from None
        return HostLayout()


def _environment(job: CellJob) -> tuple[ContainerEngine | HostLayout, HarborTask, str]:
    """The engine, the Harbor task and its image (built once per content hash); raises SandboxError/HarborError."""
    engine = backend_for(job.settings.launcher)
    task = suite_task(job.suite.path, job.task.id)
    return engine, task, image_of(engine, task)


def _grade(job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
    try:
        engine, task, image = _environment(job)
    except (SandboxError, HarborError) as err:   # BuildError is a SandboxError: its message holds the log tail
        return None, f"harbor verifier could not run: {err}"
    return verify(engine, task, image, work, job.cell_root / "verifier",
                  network=task_network(dict(job.suite.meta), task))


def _prepare(job: CellJob, work: Path) -> tuple[str, TaskContainer | None]:
    """Before the agent: the task's image is built (a broken one costs no agent call) and its WORKDIR copied
    into the work dir, so the agent finds what the image put there. ("" or why the cell cannot run, the
    container the agent runs in or None when it runs on the host)."""
    try:
        engine, task, image = _environment(job)
    except (SandboxError, HarborError) as err:
        return f"the task's environment could not be made: {err}", None
    if problem := engine.copy_out(image, task.workdir, work):
        return problem, None
    if not (isinstance(job.settings.launcher, ContainerSandbox) and isinstance(engine, ContainerEngine)):
        return "", None
    cfg = task.config
    limits = Limits(cfg.cpus, cfg.memory_mb, network=task_network(dict(job.suite.meta), task))
    skills = work / ".claude" / "skills" if job.skill_dir is not None else None
    return "", TaskContainer(engine, image, workdir=task.workdir, work=work, limits=limits, skills=skills,
                             skill_targets=task.skill_targets())


async def prepare_cell(job: CellJob, work: Path) -> tuple[str, TaskContainer | None]:
    return await asyncio.to_thread(_prepare, job, work)


class HarborRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        return await asyncio.to_thread(_grade, job, work)
