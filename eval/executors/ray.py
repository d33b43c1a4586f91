"""The `ray` executor: each cell is a Ray task that gets a self-contained bundle (eval/executors/bundle.py)
and gives back the cell's result and files, so workers need no file system shared with the driver.

The skill snapshot, the suite's grader files and a Harbor task's environment (the image's build context) go
into the object store once per content hash (`ray.put`);
a worker or node lost mid-cell is retried by Ray (`max_retries`), and the retry is counted on the cell as an
infrastructure retry; a cell Ray gives up on is an `infra_error`, never a verdict on the skill. A cancelled
evaluation (Ctrl-C, a budget stop) cancels its Ray tasks. `ray` is imported only when this executor runs.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from eval.executors import ExecutorError, ray_link
from eval.executors.bundle import (
    ROOT,
    CellBundle,
    Tree,
    environment_dir,
    make_bundle,
    read_tree,
    run_bundle,
    suite_tree,
    unpack_logs,
)
from eval.jobs import CellJob, CellResult
from eval.runner import infra_result, regrade_cell
from eval.snapshot import hash_tree

DEFAULT_RESOURCES = {"num_cpus": 1}
# Never shipped to a cluster with the code: history, stores, suites (a cell gets
# its suite as a bundle), the SPA.
SHIP_EXCLUDES = (".git", "/data", "/suites", "/webpages", "/reference", "*.db", "*.db-wal", "*.db-shm",
                 "__pycache__", ".pytest_cache", ".ruff_cache", "node_modules")
HEAD_POLL_S = 2.0       # how often a waiting cell asks whether the cluster's head still answers
HEAD_GRACE_S = 10.0     # silent this long = lost (Ray itself ends the driver after 60 s without its head)
KEEP_OBJECTS = 16       # skill snapshots and suites kept in the object store by this driver (newest first)
INSTALL_HINT = "pip install -e '.[ray]' (or: pip install 'ray>=2.60,<3')"


def worker_base() -> Path:
    """Where a worker builds its private suite, skill and cell dirs (node-local; nothing here is shared)."""
    return Path(tempfile.gettempdir()) / "skill-mutator-ray"


def _attempt_number() -> int:
    """Which try of this task this is (0 = the first): Ray re-runs a task whose worker or node died."""
    try:
        import ray
        return int(ray._private.worker.global_worker.core_worker.get_current_task_attempt_number())
    except Exception:   # an API Ray may move: then a retry is not counted, and the cell still runs
        return 0


def run_on_worker(bundle: CellBundle, skill: Tree | None, suite: Tree,
                  environment: Tree | None = None) -> dict[str, Any]:
    """The Ray task: one cell on whichever node Ray picked, with the local runner."""
    import ray
    result, files = run_bundle(bundle, skill, suite, worker_base(), environment)
    return {"result": result, "files": files, "node": ray.get_runtime_context().get_node_id(),
            "attempt": _attempt_number()}


class RayExecutor:
    id = "ray"

    def __init__(self, address: str = "", resources: Mapping[str, float] | None = None, max_retries: int = 1,
                 concurrency: int = 1, exclude: Sequence[Path] = (), timeout_s: float = 60.0) -> None:
        # "" = a private local instance; "auto" or HOST:PORT = join
        self.address = address
        self.timeout_s = timeout_s                  # joining a cluster: its deadline (--ray-timeout-s)
        self.resources = dict(resources or DEFAULT_RESOURCES)
        self.max_retries = max(0, max_retries)
        self.concurrency = concurrency
        self.exclude = tuple(Path(p) for p in exclude)  # folders never shipped with the code (the data dir)
        self._objects: OrderedDict[str, Any] = OrderedDict()
        self._remote: Any = None
        self._head = ""                             # the cluster's GCS HOST:PORT, once connected
        self._silent_since: float | None = None     # when the head first did not answer (None: it answers)
        self.lost = ""                              # why cells can no longer run here ("" while they can)

    # ---- the connection ---------------------------------------------------------------------------------
    def connect(self):
        try:
            import ray
        except ImportError:
            raise ExecutorError(f"--executor ray needs the ray package: {INSTALL_HINT}") from None
        if not ray.is_initialized():
            self._start(ray)
        if self._remote is None:
            self._remote = ray.remote(run_on_worker)
            self._head = ray.get_runtime_context().gcs_address
        return ray

    def _start(self, ray) -> None:
        """Start the private loopback instance or join the cluster (within the deadline), then check that one
        cell fits a node; a refusal shuts Ray down again, so nothing is left running."""
        if self.address:
            ray_link.reachable(self.address, self.timeout_s)
        if not self.address or ray_link.on_loopback(self.address):
            # else Ray rewrites 127.0.0.1 to the machine's address, where nothing listens
            ray_link.loopback_only()
        where = "a private local Ray instance" if not self.address else f"the Ray cluster at {self.address}"
        try:
            if self.address:
                ray_link.within(self.timeout_s, f"joining {where}", lambda: ray.init(**self.init_options()))
            else:
                ray.init(**self.init_options())
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise ExecutorError(f"cannot start or join {where}: {_first_line(err)}; start a head with `ray "
                                "start --head` and pass --ray-address auto, or "
                                "leave --ray-address empty") from None
        problem = self._problem(ray)
        if problem:
            ray.shutdown()
            raise ExecutorError(problem)

    def _problem(self, ray) -> str | None:
        if not self.address and ray.get_runtime_context().gcs_address.rsplit(":", 1)[0] != ray_link.LOOPBACK:
            return (f"the private Ray instance did not bind {ray_link.LOOPBACK} (it is at "
                    f"{ray.get_runtime_context().gcs_address}); refusing to run cells on a Ray that other "
                    "machines can reach: join a cluster with --ray-address, or use --executor local")
        return ray_link.infeasible(self.resources, ray.nodes())

    def describe(self) -> str:
        """Where cells go, said before the first one does."""
        if not self.address:
            return (f"Ray: a private instance on this machine, listening on {ray_link.LOOPBACK} only (cells "
                    f"run here)")
        return ("Ray: cells and their bundles (the skill, the suite's grader files and this project's code) "
                f"go to the cluster at {self.address}")

    def init_options(self) -> dict[str, Any]:
        common = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
        if not self.address:
            # this machine: workers see the project where the driver does; enough logical CPUs for the
            # concurrency asked, so a cell waits on the harness's bound, not on Ray's
            cpus = max(os.cpu_count() or 1, math.ceil(self.concurrency * self.resources.get("num_cpus", 1)))
            path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
            return {**common, "num_cpus": cpus, "_node_ip_address": ray_link.LOOPBACK,
                    "runtime_env": {"env_vars": {"PYTHONPATH": path}}}
        excludes = list(SHIP_EXCLUDES) + ["/" + p.resolve().relative_to(ROOT).as_posix()
                                          for p in self.exclude if p.resolve().is_relative_to(ROOT)]
        return {**common, "address": self.address,
                "runtime_env": {"working_dir": str(ROOT), "excludes": excludes}}

    # ---- one cell ----------------------------------------------------------------------------------------
    def _put(self, key: str, make: Callable[[], Tree]) -> Any:
        """An object in the store by content hash, put once while this driver keeps it."""
        ray = self.connect()
        if key not in self._objects:
            self._objects[key] = ray.put(make())
            while len(self._objects) > KEEP_OBJECTS:
                self._objects.popitem(last=False)
        self._objects.move_to_end(key)
        return self._objects[key]

    def task_args(self, job: CellJob) -> tuple[CellBundle, Any, Any, Any]:
        """What a cell's Ray task receives: the bundle, the skill snapshot, the suite's grader files and the
        task's environment (a Harbor task's; else None)."""
        skill_dir, env_dir = job.skill_dir, environment_dir(job.suite, job.task.id)
        skill_hash = hash_tree(skill_dir) if skill_dir is not None else ""
        skill = (self._put(f"skill:{skill_hash}", lambda: read_tree(skill_dir))
                 if skill_dir is not None else None)
        suite = self._put(f"suite:{job.suite.content_hash}", lambda: suite_tree(job.suite))
        env_hash = hash_tree(env_dir) if env_dir is not None else ""
        environment = self._put(f"environment:{env_hash}", lambda: read_tree(env_dir)) if env_dir else None
        return make_bundle(job, skill_hash, env_hash), skill, suite, environment

    async def run_cell(self, job: CellJob) -> CellResult:
        started = time.monotonic()
        ray = self.connect()
        from ray.exceptions import RayError, RayTaskError
        ref = self._remote.options(max_retries=self.max_retries, retry_exceptions=False,
                                   name=f"cell {job.spec.name}",
                                   **ray_link.task_options(self.resources)).remote(*self.task_args(job))
        waiting = asyncio.wrap_future(ref.future())
        try:
            while not (await asyncio.wait({waiting}, timeout=HEAD_POLL_S))[0]:
                if await self._head_lost():
                    waiting.cancel()
                    return infra_result(job, self.lost, started)
            reply = waiting.result()
        except asyncio.CancelledError:
            waiting.cancel()
            with suppress(Exception):     # a cluster already gone has nothing left to stop
                ray.cancel(ref, force=True)   # Ctrl-C or a stopped evaluation: the cell stops where it runs
            raise
        except RayTaskError as err:       # our code failed on the worker (its disk, a bug): a harness fault
            return infra_result(job, f"harness fault on a Ray worker: {_first_line(err.cause or err)}",
                                started)
        except RayError as err:
            # the worker or node died and Ray's retries are spent, or the head did
            for _ in range(math.ceil(HEAD_GRACE_S / HEAD_POLL_S) + 1):   # the head answers, or is lost
                if await self._head_lost() or self._silent_since is None:
                    break
                await asyncio.sleep(HEAD_POLL_S)
            if self.lost:
                return infra_result(job, self.lost, started)
            lost = infra_result(job, "infrastructure (Ray, not the skill): the node or worker running the "
                                     f"cell was lost ({type(err).__name__}: {_first_line(err)})", started)
            return replace(lost, retries=self.max_retries)
        result = unpack_logs(reply["files"], reply["result"], job.cell_root)
        return replace(result, retries=result.retries + reply["attempt"],
                       extra={**result.extra, "node": reply["node"]})

    async def _head_lost(self) -> bool:
        """Whether the cluster's head is gone: silent for HEAD_GRACE_S (a blip is not a loss). Then `lost`
        says so in one line naming the address, and no further cell is sent (eval/evaluate.py)."""
        if self.lost or not self._head:
            return bool(self.lost)
        if await ray_link.answers(self._head, HEAD_POLL_S):
            self._silent_since = None
            return False
        self._silent_since = self._silent_since or time.monotonic()
        if time.monotonic() - self._silent_since >= HEAD_GRACE_S:
            where = f"the Ray cluster at {self.address}" if self.address else "the private Ray instance"
            self.lost = (f"infrastructure (Ray, not the skill): lost {where} mid-run (its head at "
                         f"{self._head} has not answered for {HEAD_GRACE_S:g} s); the cells in flight are "
                         "stored as infra_error. Start the cluster "
                         "again and re-run the same command to resume")
        return bool(self.lost)

    async def regrade_cell(self, job: CellJob) -> CellResult | None:
        # the kept working dir came back with the cell's files: the driver grades it (the suite is here)
        result = await regrade_cell(job)
        return None if result is None else replace(result, extra={**result.extra, "node": "local"})


def _first_line(err: BaseException | str) -> str:
    text = str(err).strip()
    return (text.splitlines() or [""])[0][:300]
