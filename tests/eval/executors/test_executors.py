"""The executor seam without a cluster: the registry, the bundle a remote cell travels as (it runs like a local
cell and holds no path of the driver's data dir or suites), retry accounting, and that the executor is never
part of a run's identity. Ray itself is exercised in test_ray_executor.py."""

from __future__ import annotations

import asyncio
import json
import pickle
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from eval.cells import enumerate_cells
from eval.evaluate import EvalRequest, evaluate_async
from eval.executors import EXECUTOR_IDS, ExecutorError, get_executor
from eval.executors.bundle import make_bundle, portable_argv, read_tree, run_bundle, suite_tree, unpack_logs
from eval.jobs import CellJob, CellResult, CellSettings
from eval.runner import run_cell
from eval.snapshot import hash_tree
from eval.suite import load_suite
from sandbox import get_launcher
from tests.conftest import ROOT
from tests.eval.executors.executor_support import CONTRACT, FAKE, PRICE, job_for, same_outcome


def test_registry() -> None:
    assert EXECUTOR_IDS == ("local", "ray")
    assert get_executor().id == "local" and get_executor("local").id == "local"
    with pytest.raises(ExecutorError, match="unknown executor 'k8s'; choose one of: local, ray"):
        get_executor("k8s")


def test_a_bundle_runs_like_a_local_cell_and_lands_where_a_local_cell_does(driver: dict, tmp_path: Path) -> None:
    local = asyncio.run(run_cell(job_for(driver, driver["data"] / "evals" / "local")))
    job = job_for(driver, driver["data"] / "evals" / "remote")
    bundle = make_bundle(job, hash_tree(job.skill_dir))
    remote, files = run_bundle(bundle, read_tree(job.skill_dir), suite_tree(job.suite), tmp_path / "worker")
    # the worker keeps no cell behind; the graders' suite templates stay for its next cells (eval/graders/script.py)
    assert [p for p in (tmp_path / "worker" / "cells").iterdir() if not p.name.startswith(".grader-templates-")] == []
    assert {"stream.jsonl", "trajectory.md", "cell.json", "grade.stdout", "prompt.md"} <= set(files)
    local_kept = sorted(p.relative_to(Path(local.cell_dir)).as_posix() for p in Path(local.cell_dir).rglob("work/*")
                        if p.is_file())
    assert sorted(rel for rel in files if rel.startswith("work/")) == local_kept and local_kept   # pruned as locally:
    assert "restore.json" in files                                   # the agent's outputs kept, to grade again
    stored = unpack_logs(files, remote, job.cell_root)
    left, right = same_outcome(local, stored)
    assert left == right and local.status == "ok"
    assert stored.cell_dir == str(job.cell_root)
    assert json.loads((job.cell_root / "cell.json").read_text())["cell_dir"] == str(job.cell_root)
    assert (job.cell_root / "trajectory.md").read_text().startswith(f"# {job.task.id} · replicate 0 · ok")
    # the worker's suite copy has the grader and the answer key but only the inputs cells asked for
    worker_suite = tmp_path / "worker" / "suites" / job.suite.content_hash
    assert (worker_suite / "answers" / f"{job.task.id}.csv").is_file()
    assert [p.name for p in (worker_suite / "fixtures").iterdir()] == [job.task.id]


def test_a_cell_bundle_holds_no_path_of_the_drivers_data_dir_or_suites(driver: dict) -> None:
    job = job_for(driver, driver["data"] / "evals" / "k")
    shipped = pickle.dumps((make_bundle(job, hash_tree(job.skill_dir)), read_tree(job.skill_dir),
                            suite_tree(job.suite)))
    for path in (driver["data"], driver["suite"].path, driver["skill"], ROOT):
        assert str(path).encode() not in shipped, path
    assert b"answers/" in shipped            # the grader's files do travel, beside the cell, not in it


def test_the_agent_command_names_no_machine_path() -> None:
    assert portable_argv([sys.executable, str(ROOT / "fakes" / "fake_agent.py"), "--flag", "/opt/x"]) == (
        ("python", ""), ("project", "fakes/fake_agent.py"), ("arg", "--flag"), ("arg", "/opt/x"))


class Scripted:
    """An executor whose cells fail on the infrastructure first (with its own retries inside), then finish; with
    `lose_at`, where cells run goes away during that cell (the cell's result is an infra_error)."""
    id = "scripted"
    lost = ""

    def __init__(self, plan: list[tuple[str, int]], lose_at: int | None = None) -> None:
        self.plan, self.lose_at, self.calls = plan, lose_at, 0

    async def run_cell(self, job: CellJob) -> CellResult:
        self.calls += 1
        if self.calls == self.lose_at:
            self.lost = "lost the cluster at 127.0.0.1:6379"
        status, retries = self.plan.pop(0) if not self.lost else ("infra_error", 0)
        return CellResult(task_id=job.spec.task_id, replicate=job.spec.replicate, status=status, score=0.0, tests={},
                          cost_usd=0.0, steps=0, input_tokens=0, output_tokens=0, cache_write_tokens=0,
                          cache_read_tokens=0, duration_ms=0, agent_subtype="", error="", cell_dir="",
                          retries=retries)

    async def regrade_cell(self, job: CellJob) -> CellResult | None:
        return None


@pytest.mark.parametrize("plan, status, retries", [
    ([("ok", 0)], "ok", 0),
    ([("ok", 1)], "ok", 1),                                   # Ray re-ran it once (a lost node)
    ([("infra_error", 2), ("ok", 1)], "ok", 4),               # 2 inside the first try + our re-run + 1 inside
    ([("infra_error", 1), ("infra_error", 0)], "infra_error", 2),
])
def test_an_executors_own_retries_add_to_the_infrastructure_retries(driver: dict, tmp_path: Path, plan, status,
                                                                    retries) -> None:
    suite = replace(driver["suite"], tasks=driver["suite"].tasks[:1])
    request = EvalRequest(skill_dir=None, skill_name="csv-clean", suite=suite, contract=CONTRACT, key="k",
                          cells_root=tmp_path, price=PRICE, concurrency=1,
                          settings=CellSettings(agent_argv=FAKE, launcher=get_launcher("none"), grader_timeout_s=60,
                                                infra_retries=1, infra_backoff_s=0))
    [cell] = asyncio.run(evaluate_async(request, executor=Scripted(list(plan))))
    assert (cell.status, cell.retries) == (status, retries)


@pytest.mark.parametrize("concurrency", [1, 2])
def test_an_executor_lost_mid_evaluation_starts_and_retries_nothing_more(driver: dict, tmp_path: Path,
                                                                         concurrency: int) -> None:
    """The cells in flight when it goes are reported (infra_error, not retried), none other starts, and the
    evaluation ends with ExecutorLost (exit 8): the run stops and resumes those cells."""
    from eval.executors import ExecutorLost
    request = EvalRequest(skill_dir=None, skill_name="csv-clean", suite=driver["suite"], contract=CONTRACT, key="k",
                          cells_root=tmp_path, price=PRICE, concurrency=concurrency,
                          settings=CellSettings(agent_argv=FAKE, launcher=get_launcher("none"), grader_timeout_s=60,
                                                infra_retries=3, infra_backoff_s=0))
    executor, seen = Scripted([("ok", 0)] * 8, lose_at=2), []
    with pytest.raises(ExecutorLost, match="127.0.0.1:6379") as stop:
        asyncio.run(evaluate_async(request, executor=executor, on_cell=seen.append))
    assert stop.value.exit_code == 8
    assert executor.calls == 2                                   # no retry of the lost cell, no third cell
    assert [(c.status, c.retries) for c in seen] == [("ok", 0), ("infra_error", 0)]


def test_the_executor_is_not_part_of_the_run(tmp_path: Path) -> None:
    from mutator.config import load_settings
    from mutator.round.evaluations import executor_for
    from mutator.round.loop import Loop
    from mutator.round.session import Agents, Suites, run_id_for
    from strategies import make_strategy

    agents = Agents(build_argv=tuple(FAKE), build_id="fake", mutator_argv=tuple(FAKE), mutator_id="fake")
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"))
    ids, kinds = set(), []
    for flags in ({}, {"executor": "ray", "ray_address": "auto"}):
        settings = load_settings({"data_dir": tmp_path / "data", **flags}, environ={})
        loop = Loop(settings, suites, agents, get_launcher("none"), make_strategy(settings.strategy, {}))
        ids.add(run_id_for(loop.identity("seed-hash")))
        kinds.append(loop.session.evaluator.executor.id)
        loop.session.db.conn.close()
        assert executor_for(settings, loop.session.evaluator.settings).id == settings.executor
    assert len(ids) == 1 and kinds == ["local", "ray"]   # building the ray executor starts nothing (lazy)


@pytest.mark.parametrize("flags, environ, message", [
    ({"executor": "k8s"}, {}, "'executor' must be local or ray, got 'k8s'"),
    ({}, {"SKILL_MUTATOR_CELL_RESOURCES": '{"num_cpus": -1}'}, "'cellResources' must be an object of Ray resource"),
    ({}, {"SKILL_MUTATOR_CELL_RESOURCES": '{"num_cpus": true}'}, "'cellResources' must be an object of Ray resource"),
])
def test_executor_settings_are_checked(tmp_path: Path, flags: dict, environ: dict, message: str) -> None:
    from mutator.config import ConfigError, load_settings
    with pytest.raises(ConfigError, match=message):
        load_settings(flags, environ=environ)


def test_executor_settings_default_to_local(tmp_path: Path) -> None:
    from mutator.config import load_settings
    settings = load_settings({}, environ={"SKILL_MUTATOR_CELL_RESOURCES": '{"num_cpus": 2, "agent": 0.5}'})
    assert (settings.executor, settings.ray_address) == ("local", "")
    assert settings.cell_resources == {"num_cpus": 2, "agent": 0.5}


def test_ray_missing_is_said_before_the_run_opens(monkeypatch) -> None:
    import importlib.util

    from mutator.config import ConfigError
    from mutator.round.preflight import check_executor
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    check_executor("local")
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[ray\]'"):
        check_executor("ray")


def test_a_remote_grader_error_keeps_its_working_dir_so_the_driver_regrades_it(tmp_path: Path) -> None:
    from eval.runner import regrade_cell
    from tests.conftest import AGENT_OK, GRADER_OK, make_suite
    agent = tmp_path / "agent_ok.py"
    agent.write_text(AGENT_OK)
    suite_dir = make_suite(tmp_path / "suites", grader="import sys; sys.exit(3)\n")
    suite = load_suite(suite_dir)
    spec = enumerate_cells(suite, CONTRACT, "k")[0]
    job = CellJob(spec=spec, task=suite.tasks[0], suite=suite, skill_dir=None, skill_name="csv-clean",
                  contract=CONTRACT, cell_root=tmp_path / "data" / "evals" / "k" / spec.name, price=PRICE,
                  settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=get_launcher("none"),
                                        grader_timeout_s=60))
    remote, files = run_bundle(make_bundle(job, ""), None, suite_tree(suite), tmp_path / "worker")
    assert remote.status == "grader_error" and "work/output.txt" in files
    unpack_logs(files, remote, job.cell_root)
    (suite_dir / "run-eval.py").write_text(GRADER_OK)        # the grader fixed: re-graded, the agent not re-run
    regraded = asyncio.run(regrade_cell(job))
    assert regraded is not None and regraded.status == "ok" and regraded.tests == {"exists": 1.0, "says_done": 1.0}


def test_a_harbor_tasks_environment_files_travel_once_by_hash_not_in_each_bundle(tmp_path: Path) -> None:
    """An imported Harbor task's inputs are its environment's files: the bundle carries none of their bytes (the
    environment goes once per content hash), and the worker stages the very same inputs from the environment, so a
    cell sees what it saw before (the suite and every key are unchanged: stores resume as they were)."""
    from eval.executors.bundle import environment_dir, worker_job
    from mutator.after.harbor_import import import_harbor
    tasks = tmp_path / "tasks"
    for name in ("count-lines", "shout"):
        shutil.copytree(ROOT / "suites" / "harbor-example" / name, tasks / name)
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["count-lines"], "val": ["shout"]}))
    import_harbor(tasks, tmp_path / "hx", split_file=split)
    suite = load_suite(tmp_path / "hx" / "hx-train")
    [task] = suite.tasks
    assert task.inputs == ("visits.log",)
    job = CellJob(spec=enumerate_cells(suite, CONTRACT, "k")[0], task=task, suite=suite, skill_dir=None,
                  skill_name="s", contract=CONTRACT, cell_root=tmp_path / "cells" / "c", price=PRICE,
                  settings=CellSettings(agent_argv=FAKE, launcher=get_launcher("none"), grader_timeout_s=60))
    env_dir = environment_dir(suite, task.id)
    log = (env_dir / "visits.log").read_bytes()
    bundle = make_bundle(job, "", hash_tree(env_dir))
    assert bundle.inputs == {} and log not in pickle.dumps(bundle)
    assert make_bundle(job, "").inputs == {"visits.log": (log, 0o644)}   # no environment shipped: as before
    on_worker = worker_job(bundle, None, suite_tree(suite), tmp_path / "worker", read_tree(env_dir))
    assert (on_worker.suite.fixture_dir(task.id) / "visits.log").read_bytes() == log
    (suite.fixture_dir(task.id) / "visits.log").write_text("edited by hand\n")   # no longer the environment's
    assert make_bundle(job, "", hash_tree(env_dir)).inputs == {"visits.log": (b"edited by hand\n", 0o644)}


def test_a_worker_grades_a_task_whose_inputs_landed_after_its_first_grading(driver: dict, tmp_path: Path) -> None:
    """A worker's suite copy (worker/suites/<hash>) gains each task's inputs as its first cell arrives, while
    the script grader lends templates of the suite made from a listing kept per process (eval/graders/script.py).
    The Ray demo once failed with `KeyError: 'fixtures/subscriptions-15/input.csv'`: a template listed before
    that task's inputs landed was lent to a cell of that task. Forced here in order, no race needed: two tasks'
    cells, one after the other, in one worker process and one fresh worker dir (a re-run finds every task's
    inputs already there, which is why the failure went away on re-runs)."""
    worker = tmp_path / "worker"
    results = []
    for index in (0, 1):        # two tasks (one replicate each)
        job = job_for(driver, driver["data"] / "evals" / f"remote-{index}", index)
        bundle = make_bundle(job, hash_tree(job.skill_dir))
        remote, _ = run_bundle(bundle, read_tree(job.skill_dir), suite_tree(job.suite), worker)
        local = asyncio.run(run_cell(job_for(driver, driver["data"] / "evals" / f"local-{index}", index)))
        results.append((job.task.id, remote.status, remote.error, *same_outcome(local, remote)))
    assert results[0][0] != results[1][0]
    for task_id, status, error, local, remote in results:
        assert (status, error) == ("ok", "") and local == remote, task_id
    # and the template lent to the second task is whole again for the next cell of either task
    again = job_for(driver, driver["data"] / "evals" / "remote-again", 1)
    remote, _ = run_bundle(make_bundle(again, hash_tree(again.skill_dir)), read_tree(again.skill_dir),
                           suite_tree(again.suite), worker)
    assert (remote.status, remote.error) == ("ok", "")
