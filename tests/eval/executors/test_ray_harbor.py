"""--executor ray on an imported Harbor suite: a task's environment/ travels to the worker by its own content hash
(once, beside the suite's grader files, which hold neither the environments nor the oracle), the worker builds the
task's image from it, and the cells score as they do locally. A private local Ray; podman for the verifier."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]'); the ray executor is optional")

from eval.cells import Contract  # noqa: E402
from eval.evaluate import EvalRequest, evaluate_async  # noqa: E402
from eval.executors.bundle import read_tree  # noqa: E402
from eval.executors.local import LocalExecutor  # noqa: E402
from eval.executors.ray import RayExecutor, worker_base  # noqa: E402
from eval.harbor import read_task  # noqa: E402
from eval.jobs import CellSettings  # noqa: E402
from eval.snapshot import hash_tree  # noqa: E402
from eval.suite import load_suite  # noqa: E402
from mutator.after.harbor_import import import_harbor  # noqa: E402
from sandbox import get_launcher  # noqa: E402
from sandbox.container import IMAGE_REPO  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.eval.executors.executor_support import PRICE, job_for, same_outcome  # noqa: E402
from tests.sandbox.conftest import engine  # noqa: E402,F401 - the podman fixture (base image built once)
from tests.sandbox.test_host_layout import AGENT  # noqa: E402

pytestmark = pytest.mark.container
CONTRACT = Contract(model="m", replicates=2, max_turns=5, agent="test", silence_ms=60_000, heartbeat_ms=60_000)


def harbor_suite(tmp_path: Path) -> Path:
    """The example's count-lines (with a note of this test's own in its environment, so its image is this test's)
    as the train suite of an import."""
    tasks = tmp_path / "tasks"
    for name in ("count-lines", "shout"):
        shutil.copytree(ROOT / "suites" / "harbor-example" / name, tasks / name)
    (tasks / "count-lines" / "environment" / "ray-note.txt").write_text("shipped to a Ray worker by content hash\n")
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["count-lines"], "val": ["shout"]}))
    import_harbor(tasks, tmp_path / "hx", split_file=split)
    return tmp_path / "hx" / "hx-train"


def request(suite_dir: Path, cells_root: Path, agent: Path) -> EvalRequest:
    return EvalRequest(skill_dir=None, skill_name="s", suite=load_suite(suite_dir), contract=CONTRACT, key="k",
                       cells_root=cells_root, price=PRICE, concurrency=2,
                       settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=get_launcher("none"),
                                             grader_timeout_s=120, infra_retries=0, infra_backoff_s=0,
                                             env={"COUNT": "yes"}))


def test_a_harbor_task_environment_ships_by_content_hash_and_scores_as_locally(engine, tmp_path: Path,  # noqa: F811
                                                                              monkeypatch) -> None:
    if ray.is_initialized():
        pytest.skip("another Ray connection is open in this process")
    monkeypatch.setenv("RAY_agent_register_timeout_ms", "300000")   # a loaded machine starts Ray's agents late
    suite_dir = harbor_suite(tmp_path)
    suite, env_dir = load_suite(suite_dir), suite_dir / "harbor" / "count-lines" / "environment"
    tag = f"{IMAGE_REPO}:{read_task(suite_dir / 'harbor' / 'count-lines').environment_hash()}"
    engine._run(["rmi", "-f", tag], 120)           # so only the worker's copy of the environment can build it
    on_worker = worker_base() / "suites" / suite.content_hash
    shutil.rmtree(on_worker, ignore_errors=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    executor = RayExecutor(concurrency=2)          # a private instance on this machine's loopback
    executor.connect()
    try:
        world = {"suite": suite, "skill": None}
        first = job_for(world, tmp_path / "probe")
        bundle, _, grader_files, environment = executor.task_args(first)
        assert executor.task_args(replace(first, cell_root=tmp_path / "other"))[3] == environment   # put once
        assert bundle.environment_hash == hash_tree(env_dir) and bundle.inputs == {}   # visits.log: in the environment
        assert ray.get(environment) == read_tree(env_dir)
        shipped = ray.get(grader_files)
        assert "harbor/count-lines/tests/test.sh" in shipped
        assert not [rel for rel in shipped if "/environment/" in rel or rel.startswith("oracle/")]
        remote = asyncio.run(evaluate_async(request(suite_dir, tmp_path / "ray", agent), executor=executor))
    finally:
        ray.shutdown()
    assert [(c.status, c.tests) for c in remote] == [("ok", {"reward": 1.0})] * 2, [c.error for c in remote]
    assert engine.has_image(tag)                                  # built on the worker, from what it was sent
    assert hash_tree(on_worker / "harbor" / "count-lines" / "environment") == hash_tree(env_dir)
    assert not (on_worker / "oracle").exists()
    local = asyncio.run(evaluate_async(request(suite_dir, tmp_path / "local", agent), executor=LocalExecutor()))
    key = lambda c: c.replicate  # noqa: E731
    pairs = [same_outcome(a, b) for a, b in zip(sorted(local, key=key), sorted(remote, key=key))]
    assert len(pairs) == 2 and all(a == b for a, b in pairs), pairs
