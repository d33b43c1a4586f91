"""A cell as a self-contained bundle, for a machine that shares no file system with the driver.

Driver side: `make_bundle(job)` holds the task, its declared inputs (bytes; a Harbor task's inputs that are
its environment's own files travel in the environment instead, once per content hash), the contract, the agent
command (project files as project-relative paths, the driver's Python as "this Python") and the launcher id;
the skill snapshot and the suite's grader files travel beside it as `Tree`s, each sent once per evaluation.
No path of the driver's data dir or suites is in any of them, but its reaper registry's (eval/reaper.py: a
worker on the driver's machine records its agents' containers there, so a dead driver's go). Worker side:
`run_bundle` rebuilds a private suite dir, skill dir and cell dir (a Harbor task's environment/ put back into
its harbor/<id>/), runs the cell with the same runner as a local cell (eval/runner.py: launcher, watchdog,
caps, group kill, grading after the group is gone) and hands back the result with the cell's files;
`unpack_logs` writes them where a local cell would have them.
"""

from __future__ import annotations

import asyncio
import filecmp
import functools
import os
import shutil
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from eval import reaper
from eval.cells import CellSpec, Contract
from eval.cost import Price
from eval.environment import PREFIXES
from eval.jobs import CELL_TIMEOUT_MS, MAX_OUTPUT_BYTES, CellJob, CellResult, CellSettings
from eval.snapshot import list_files
from eval.suite import Suite, Task

ROOT = Path(__file__).resolve().parents[2]     # the project on this machine (the driver's or a worker's copy)
Tree = dict[str, tuple[bytes, int]]             # relative POSIX path -> (bytes, permission bits)
PYTHON, PROJECT, ARG = "python", "project", "arg"
SUITE_STUB = Path("suite")                      # a bundled suite's path until a worker gives it its own dir
HARBOR, ENVIRONMENT, ORACLE = "harbor", "environment", "oracle"   # an imported Harbor suite's folders


@dataclass(frozen=True)
class CellBundle:
    spec: CellSpec
    task: Task
    suite: Suite                # path and grader stripped (SUITE_STUB); the files come as a Tree
    skill_name: str
    skill_hash: str             # "" = bare (no skill)
    environment_hash: str       # a Harbor task's environment/ (its own Tree, sent once per hash); "" = none
    inputs: Tree                # the task's declared inputs, nothing else from fixtures/
    contract: Contract
    agent_argv: tuple[tuple[str, str], ...]     # (PYTHON | PROJECT | ARG, value)
    launcher_id: str
    price: Price
    grader_timeout_s: float
    env: dict[str, str] = field(default_factory=dict)
    prune: bool = True
    network: bool = False
    cell_timeout_ms: int = CELL_TIMEOUT_MS
    max_output_bytes: int = MAX_OUTPUT_BYTES
    # whose records the worker's agents and containers are (eval/reaper.py)
    reaper_scope: dict | None = None


def read_tree(root: Path, *, skip_top: tuple[str, ...] = ()) -> Tree:
    """The included files of a folder (eval/snapshot.py's rules), optionally
    without some top-level folders."""
    return {rel.as_posix(): ((root / rel).read_bytes(), (root / rel).stat().st_mode & 0o777)
            for rel in list_files(root) if rel.parts[0] not in skip_top}


def suite_tree(suite: Suite) -> Tree:
    """What the grader may need, kept outside every cell: the suite dir without fixtures/ (the inputs travel
    per cell, only those a task declares), without a Harbor suite's oracle/ (no worker needs it) and without
    its tasks' environment/ folders (each travels by its own content hash, only to the cells of its task)."""
    tree = read_tree(suite.path, skip_top=("fixtures", ORACLE) if suite.runner == HARBOR else ("fixtures",))
    if suite.runner != HARBOR:
        return tree
    return {rel: item for rel, item in tree.items()
            if not (rel.startswith(HARBOR + "/") and rel.split("/")[2:3] == [ENVIRONMENT])}


def environment_dir(suite: Suite, task_id: str) -> Path | None:
    """A Harbor task's environment/ (the image's build context) in its suite, or None."""
    folder = suite.path / HARBOR / task_id / ENVIRONMENT
    return folder if suite.runner == HARBOR and folder.is_dir() else None


def in_environment(suite: Suite, task_id: str, rel: str) -> bool:
    """Whether a Harbor task's input is its environment's own file, byte for byte (it travels in the
    environment, once per content hash, and the worker stages it from there: never
    again in each cell's bundle)."""
    folder = environment_dir(suite, task_id)
    if folder is None or Path(rel) not in list_files(folder):   # what read_tree sends of it
        return False
    return filecmp.cmp(folder / rel, suite.fixture_dir(task_id) / rel, shallow=False)


def portable_argv(argv: tuple[str, ...] | list[str], root: Path = ROOT) -> tuple[tuple[str, str], ...]:
    """The agent command without this machine's paths: the running Python and files of the project are
    named so that a worker resolves them against its own Python and its own copy of the project."""
    parts = []
    for arg in argv:
        path = Path(arg)
        if arg == sys.executable:
            parts.append((PYTHON, ""))
        elif path.is_absolute() and path.resolve().is_relative_to(root):
            parts.append((PROJECT, path.resolve().relative_to(root).as_posix()))
        else:
            parts.append((ARG, arg))
    return tuple(parts)


def local_argv(parts: tuple[tuple[str, str], ...], root: Path = ROOT) -> list[str]:
    return [sys.executable if kind == PYTHON else str(root / value) if kind == PROJECT else value
            for kind, value in parts]


def passed_env(job_env: Mapping[str, str], source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The contract's SM_* and the fakes' FAKE_* variables a local agent would inherit from this process
    (eval/environment.py passes them), so a remote cell sees the same; never a secret, never other names."""
    source = os.environ if source is None else source
    return {**{k: v for k, v in source.items() if k.startswith(PREFIXES)}, **job_env}


def make_bundle(job: CellJob, skill_hash: str, environment_hash: str = "") -> CellBundle:
    # what a worker needs of it, without this machine's paths (the retries stay with the driver)
    run = job.settings
    fixtures = job.suite.fixture_dir(job.task.id)
    inputs = {rel: ((fixtures / rel).read_bytes(), (fixtures / rel).stat().st_mode & 0o777)
              for rel in job.task.inputs
              if not (environment_hash and in_environment(job.suite, job.task.id, rel))}
    grader = Path(job.suite.grader.name) if job.suite.grader else None
    return CellBundle(
        spec=job.spec, task=job.task, suite=replace(job.suite, path=SUITE_STUB, grader=grader),
        skill_name=job.skill_name, skill_hash=skill_hash if job.skill_dir is not None else "",
        environment_hash=environment_hash, inputs=inputs,
        contract=job.contract, agent_argv=portable_argv(tuple(run.agent_argv)),
        launcher_id=getattr(run.launcher, "choice", run.launcher.id),   # auto stays auto on the worker
        price=job.price, grader_timeout_s=run.grader_timeout_s, env=passed_env(run.env), prune=run.prune,
        network=run.network, cell_timeout_ms=run.cell_timeout_ms, max_output_bytes=run.max_output_bytes,
        reaper_scope=reaper.scope())


# ---- worker side ----------------------------------------------------------------------------------------

def write_tree(tree: Tree, target: Path) -> Path:
    """Materialise a content-addressed tree once: built beside `target`, then renamed into place (another
    cell on this node building the same one at the same time keeps whichever landed first)."""
    if target.is_dir():
        return target
    staging = target.parent / f".{target.name}.{uuid.uuid4().hex}"
    for rel, (data, mode) in tree.items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    staging.mkdir(parents=True, exist_ok=True)
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)   # lost the race: the same content is already there
    return target


@functools.cache
def _launcher(launcher_id: str):
    """The launcher by id, checked once per worker process (a bwrap check starts a process)."""
    from sandbox import get_launcher
    return get_launcher(launcher_id)


def worker_job(bundle: CellBundle, skill: Tree | None, suite: Tree, base: Path,
               environment: Tree | None = None) -> CellJob:
    """The bundle as a CellJob on this machine: suite, skill and cell dirs private to this node."""
    suite_dir = write_tree(suite, base / "suites" / bundle.suite.content_hash)
    fixtures = suite_dir / "fixtures" / bundle.task.id
    inputs = dict(bundle.inputs)          # a Harbor task's inputs from its environment, sent once by hash
    inputs.update({rel: environment[rel] for rel in bundle.task.inputs
                   if rel not in inputs and environment and rel in environment})
    write_tree(inputs, fixtures)          # content-addressed by the suite's hash too
    if environment is not None:           # where the harbor runner reads the task's build context
        write_tree(environment, suite_dir / HARBOR / bundle.task.id / ENVIRONMENT)
    skill_dir = write_tree(skill, base / "skills" / bundle.skill_hash) if skill is not None else None
    local_suite = replace(bundle.suite, path=suite_dir,
                          grader=suite_dir / bundle.suite.grader.name if bundle.suite.grader else None)
    settings = CellSettings(
        agent_argv=local_argv(bundle.agent_argv), launcher=_launcher(bundle.launcher_id),
        grader_timeout_s=bundle.grader_timeout_s, network=bundle.network,
        cell_timeout_ms=bundle.cell_timeout_ms,
        max_output_bytes=bundle.max_output_bytes, env=dict(bundle.env), prune=bundle.prune)
    return CellJob(
        spec=bundle.spec, task=bundle.task, suite=local_suite, skill_dir=skill_dir,
        skill_name=bundle.skill_name, contract=bundle.contract,
        cell_root=base / "cells" / uuid.uuid4().hex / bundle.spec.name, price=bundle.price, settings=settings)


def run_bundle(bundle: CellBundle, skill: Tree | None, suite: Tree, base: Path,
               environment: Tree | None = None) -> tuple[CellResult, Tree]:
    """Run one bundled cell here with the local runner; its files come back and its private dir goes."""
    from eval.environment import PASS_ENV
    from eval.runner import run_cell
    if PASS_ENV in bundle.env:   # the names the user passes on: their values are this worker's own
        os.environ[PASS_ENV] = bundle.env[PASS_ENV]
    job = worker_job(bundle, skill, suite, base, environment)
    try:
        with reaper.adopted(bundle.reaper_scope, base / "pids"):   # labelled and recorded as the driver's
            result = asyncio.run(run_cell(job))
        return result, read_tree(job.cell_root) if job.cell_root.is_dir() else {}
    finally:
        shutil.rmtree(job.cell_root.parent, ignore_errors=True)


# ---- driver side, again ---------------------------------------------------------------------------------

def unpack_logs(files: Tree, result: CellResult, cell_root: Path) -> CellResult:
    """Write a remote cell's files where a local cell keeps them; the result and
    cell.json name that folder."""
    if cell_root.exists():
        shutil.rmtree(cell_root)      # an earlier try's leftovers: the folder holds one try, as locally
    cell_root.mkdir(parents=True)
    for rel, (data, mode) in files.items():
        path = cell_root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    result = replace(result, cell_dir=str(cell_root))
    if "cell.json" in files:
        result.write_record(cell_root)
    return result
