"""--executor ray on a simulated two-node cluster (ray.cluster_utils.Cluster, one CPU per worker node): cells
match local ones, a task's arguments are the bundle only, a cancelled evaluation stops its remote cells, and
killing a node mid-cell loses no cell. Which cells run when is steered by a gated agent, never by timing.

One cluster for the module (a few seconds to start); the node-kill test runs last, as it removes a node."""

from __future__ import annotations

import asyncio
import io
import os
import pickle
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]'); the ray executor is optional")

from eval.cells import enumerate_cells  # noqa: E402
from eval.evaluate import EvalRequest, evaluate_async  # noqa: E402
from eval.executors.local import LocalExecutor  # noqa: E402
from eval.executors.ray import RayExecutor  # noqa: E402
from eval.jobs import CellSettings  # noqa: E402
from eval.snapshot import hash_tree  # noqa: E402
from sandbox import get_launcher  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.eval.executors.executor_support import CONTRACT, FAKE, PRICE, job_for, same_outcome, wait_for  # noqa: E402

GATED = [sys.executable, str(ROOT / "tests" / "eval" / "executors" / "gated_agent.py")]


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster
    if ray.is_initialized():
        pytest.skip("another Ray connection is open in this process")
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})   # the head runs no cell
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    c.wait_for_nodes()
    executor = RayExecutor(address=c.address, max_retries=1, concurrency=2)   # joins as a cluster: ships the code
    executor.connect()
    try:
        yield SimpleNamespace(cluster=c, workers=workers, executor=executor)
    finally:
        ray.shutdown()
        c.shutdown()


def request_for(driver: dict, cells_root: Path, argv: list[str], **extra) -> EvalRequest:
    return EvalRequest(skill_dir=driver["skill"], skill_name="csv-clean", suite=driver["suite"], contract=CONTRACT,
                       key="k", cells_root=cells_root, price=PRICE, concurrency=2,
                       settings=CellSettings(agent_argv=argv, launcher=get_launcher("none"), grader_timeout_s=60,
                                             infra_backoff_s=0, **extra))


def started(gate: Path) -> dict[str, list[int]]:
    """seed -> pids of the gated agents that have started."""
    found: dict[str, list[int]] = {}
    for marker in gate.glob("started-*"):
        _, seed, pid = marker.name.split("-")
        found.setdefault(seed, []).append(int(pid))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_cells_on_ray_match_local_cells_and_land_in_the_drivers_folders(cluster, driver: dict) -> None:
    local = asyncio.run(evaluate_async(request_for(driver, driver["data"] / "local", FAKE), executor=LocalExecutor()))
    remote = asyncio.run(evaluate_async(request_for(driver, driver["data"] / "ray", FAKE), executor=cluster.executor))
    key = lambda c: (c.task_id, c.replicate)  # noqa: E731
    pairs = [same_outcome(a, b) for a, b in zip(sorted(local, key=key), sorted(remote, key=key))]
    differ = [(a, b) for a, b in pairs if a != b]   # each side's status and error, when they differ
    assert len(pairs) == 8 and not differ, differ
    workers = {w.node_id for w in cluster.workers}
    for cell in remote:
        assert cell.extra["node"] in workers and cell.retries == 0
        folder = driver["data"] / "ray" / f"{cell.task_id}__r{cell.replicate}"
        assert cell.cell_dir == str(folder)
        assert {"stream.jsonl", "trajectory.md", "cell.json", "grade.stdout"} <= {p.name for p in folder.iterdir()}


def test_a_cell_task_gets_the_bundle_only(cluster, driver: dict) -> None:
    first, second = (job_for(driver, driver["data"] / "evals" / "k", i) for i in (0, 1))
    bundle, skill, suite, environment = cluster.executor.task_args(first)
    assert environment is None and bundle.environment_hash == ""       # not a Harbor suite
    assert cluster.executor.task_args(second)[1:3] == (skill, suite)   # put once, by content hash
    assert bundle.skill_hash == hash_tree(driver["skill"])
    shipped = pickle.dumps((bundle, ray.get(skill), ray.get(suite)))
    for path in (driver["data"], driver["suite"].path, driver["skill"], ROOT):
        assert str(path).encode() not in shipped, path


def test_cancelling_an_evaluation_stops_its_remote_cells(cluster, driver: dict, tmp_path: Path,
                                                         monkeypatch) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    monkeypatch.setenv("FAKE_GATE", str(gate))     # FAKE_* reaches the agent, on a worker too (the bundle's env)

    async def scenario() -> None:
        running = asyncio.create_task(evaluate_async(request_for(driver, driver["data"] / "c", GATED),
                                                     executor=cluster.executor))
        while len(started(gate)) < 2:               # two cells hold both nodes and wait at a closed gate
            assert not running.done()
            await asyncio.sleep(0.05)
        running.cancel()                            # what Ctrl-C does to the evaluation
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(scenario())
    pids = [pid for found in started(gate).values() for pid in found]
    wait_for(lambda: not any(alive(pid) for pid in pids), "the cancelled cells' agents to be gone")
    assert len(started(gate)) == 2                  # and nothing else started
    assert not (driver["data"] / "c").exists()      # no cell stored for a cancelled task


def test_cell_resources_no_node_has_are_refused_with_what_the_nodes_have(cluster) -> None:
    """Ray waits for ever on a task no node can run; the harness refuses it before the first cell, saying what
    the cluster's nodes have (here a head with no CPU and two workers with one each)."""
    from eval.executors.ray_link import infeasible
    assert infeasible({"num_cpus": 1}, ray.nodes()) is None
    too_many = infeasible({"num_cpus": 2}, ray.nodes())
    assert too_many is not None and '{"num_cpus": 2}' in too_many and "3 node(s)" in too_many
    assert too_many.count("CPU 1") == 2 and "cellResources" in too_many
    custom = infeasible({"num_cpus": 1, "agent": 1}, ray.nodes())
    assert custom is not None and "ray start --resources" in custom


def test_killing_a_node_mid_evaluation_loses_no_cell(cluster, driver: dict, tmp_path: Path, monkeypatch) -> None:
    from mutator.round.evaluations import Evaluator
    from mutator.round.progress import Progress
    from mutator.store.db import connect

    gate = tmp_path / "gate"
    gate.mkdir()
    monkeypatch.setenv("FAKE_GATE", str(gate))
    workers = [w.node_id for w in cluster.workers]
    problems: list[BaseException] = []

    def steer() -> None:
        try:
            wait_for(lambda: len(started(gate)) >= 2, "two cells to start")   # one on each node (one CPU each)
            for seed in started(gate):
                (gate / f"go-{seed}").touch()
            # two more started = the first two are done and the next two hold both nodes
            wait_for(lambda: len(started(gate)) >= 4, "the next two cells to start")
            cluster.cluster.remove_node(cluster.workers[1], allow_graceful=False)   # mid-cell
        except BaseException as err:  # noqa: BLE001 - reported by the test below
            problems.append(err)
        finally:
            (gate / "go-all").touch()

    db = connect(driver["data"] / "mutator.db")
    evaluator = Evaluator(db=db, data_dir=driver["data"], contract=CONTRACT,
                          settings=CellSettings(agent_argv=GATED, launcher=get_launcher("none"), grader_timeout_s=60),
                          price=PRICE, concurrency=2, progress=Progress(io.StringIO()), executor=cluster.executor)
    helper = threading.Thread(target=steer)
    helper.start()
    outcome = evaluator.evaluate(driver["skill"], hash_tree(driver["skill"]), "csv-clean", driver["suite"],
                                 label="val")
    helper.join()
    assert not problems, problems
    cells = list(db.query("select task_id, replicate, status, node, retries from cells order by task_id"))
    assert outcome.complete and outcome.ran == 8 and len(cells) == 8
    assert all(c["status"] == "ok" for c in cells)
    assert {c["node"] for c in cells} == set(workers)                  # both nodes ran cells, recorded per cell
    retried = [c for c in cells if c["retries"]]
    assert len(retried) == 1 and retried[0]["retries"] == 1            # the one on the lost node, run again
    assert retried[0]["node"] == workers[0]                            # by the node that is left
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(enumerate_cells(driver["suite"], CONTRACT, "k")) == 8
    db.conn.close()
    assert os.path.isdir(driver["data"] / "evals")
