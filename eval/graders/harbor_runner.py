"""The `harbor` runner: an imported Harbor task's verifier (tests/test.sh) scores the cell in the task's own
container (eval/harbor_run.py); its reward is the cell's test `reward`. When the agent ran in the task's
container, the verifier runs in that same container after it (`grade_in_trial`, as Harbor runs a trial); when
it ran on the host (bwrap, none) or a cell is re-graded, in a fresh one over the cell's work dir (`_grade`).

Before the agent, `prepare_cell` builds the image and copies its WORKDIR into the cell's work dir. The engine
is the one `--sandbox podman|docker` names, else the first of podman and docker that works here; with none,
`--sandbox bwrap` runs the verifier in the task's layout on the host's own system (sandbox/host_layout.py; no
image built). Under `--sandbox auto|podman|docker` with an engine the agent runs in a container of the task's
image (sandbox/container_launcher.py::TaskContainer); under `bwrap` or `none`, on the host in that work dir.
An image that fails to build, or no engine at all, makes the cell an infra_error with the reason (a build
log's tail), or a grader error if it happens only at grading; never a score.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from eval import reaper
from eval.harbor import HarborError, HarborTask
from eval.harbor_run import image_of, network_withheld, suite_task, task_network, verify, verify_in
from eval.jobs import CellJob
from sandbox import SandboxError
from sandbox.container import BuildError, ContainerEngine, Limits, get_engine
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
            raise SandboxError(f"{err}; without an engine, --sandbox bwrap runs the verifier on the host's "
                               "own system in the task's layout") from None
        return HostLayout()


def _environment(job: CellJob) -> tuple[ContainerEngine | HostLayout, HarborTask, str]:
    """The engine, the Harbor task and its image (built once per content hash); raises
    SandboxError/HarborError."""
    engine = backend_for(job.settings.launcher)
    task = suite_task(job.suite.path, job.task.id)
    return engine, task, image_of(engine, task)


def _grade(job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
    try:
        engine, task, image = _environment(job)
    except (SandboxError, HarborError) as err:
        # BuildError is a SandboxError: its message holds the log tail
        return None, f"harbor verifier could not run: {err}"
    return verify(engine, task, image, work, job.cell_root / "verifier",
                  network=task_network(dict(job.suite.meta), task),
                  withheld=network_withheld(dict(job.suite.meta), task))


def _grade_in_trial(job: CellJob, container: TaskContainer) -> tuple[dict[str, float] | None, str]:
    try:
        task = suite_task(job.suite.path, job.task.id)
    except HarborError as err:
        return None, f"harbor verifier could not run: {err}"
    return verify_in(container.trial, task, job.cell_root / "verifier",
                     withheld=network_withheld(dict(job.suite.meta), task))


async def grade_in_trial(job: CellJob, work: Path,
                         container: TaskContainer) -> tuple[dict[str, float] | None, str]:
    """The verifier in the cell's own trial container, after its agent (the work dir is bound in it)."""
    return await asyncio.to_thread(_grade_in_trial, job, container)


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
    skills = work / ".claude" / "skills" if job.skill_dir is not None else None
    return "", task_container(engine, image, task, work, network=task_network(dict(job.suite.meta), task),
                              skills=skills)


def task_container(engine: ContainerEngine, image: str, task: HarborTask, work: Path, *, network: bool,
                   skills: Path | None = None) -> TaskContainer:
    """A container of the task's image for one agent call, labelled and recorded for the reaper before it
    starts (a dead harness's is removed on the next start, eval/reaper.py)."""
    cfg = task.config
    container = TaskContainer(engine, image, workdir=task.workdir, work=work, skills=skills,
                              limits=Limits(cfg.cpus, cfg.memory_mb, network=network),
                              skill_targets=task.skill_targets(), labels=reaper.labels())
    reaper.register_container(container.name, engine.argv())
    return container


PROBE_FIX = ("The agent runs inside the task's container: its programs are mounted from the host at their "
             "own paths (a program in a system dir, e.g. /usr/bin, is the image's own, not the host's) and "
             "started with the host's loader. Name a program installed outside the system dirs (a venv, "
             "~/.local, /opt), install it in the task's image (its Dockerfile), or run the agent on the host "
             "with --sandbox bwrap")


def preflight(launcher, suites: Sequence, argv: Sequence[str], *, what: str) -> None:
    """Under a container launcher with an engine: the agent's programs probed once in each Harbor task's image
    (built here, as its first cell would), through the harness's relay, before any cell; ProgramError names
    the task, the image and the fix. An image that does not build is left to its cells
    (infra_error, the log's tail)."""
    from sandbox.probe import probe
    harbor = [suite for suite in suites if suite.runner == "harbor"]
    if not harbor or not isinstance(launcher, ContainerSandbox):
        return
    try:
        engine = launcher.engine()
    except SandboxError:
        if launcher.choice == "auto":
            return   # no engine here: Harbor cells run on the host, which the host probe covered
        raise
    probed: set[str] = set()
    for suite in harbor:
        for task_id in (t.id for t in suite.tasks):
            task = suite_task(suite.path, task_id)
            try:
                image = image_of(engine, task)
            except BuildError as err:
                print(f"warning: {suite.name}/{task_id}: the task's image did not build; its cells will be "
                      f"infra_error ({str(err).splitlines()[0]})", file=sys.stderr)
                continue
            if image in probed:
                continue
            probed.add(image)
            with tempfile.TemporaryDirectory(prefix="sm-preflight-") as tmp:
                container = task_container(engine, image, task, Path(tmp), network=False)
                try:
                    probe(container, argv, what=f"{what} in the container of Harbor task "
                                                f"{suite.name}/{task_id} (image {image})", fix=PROBE_FIX)
                finally:
                    container.close()
                    reaper.unregister_container(container.name)


async def prepare_cell(job: CellJob, work: Path) -> tuple[str, TaskContainer | None]:
    return await asyncio.to_thread(_prepare, job, work)


class HarborRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        return await asyncio.to_thread(_grade, job, work)
