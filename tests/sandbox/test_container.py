"""The container engine against real podman (or docker): Harbor verifiers run in the task's own image, the oracle
scores 1 and doing nothing 0, a failed build is an error with its log, never a score, and a cell's score is the
verifier's reward. Images are built offline FROM a base made of the host's own programs (sandbox/host_image.py).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.cost import Price
from eval.evaluate import EvalRequest, evaluate
from eval.graders.harbor_runner import _grade
from eval.harbor_run import check_task, suite_task
from eval.jobs import CellSettings
from eval.suite import load_suite
from mutator.after.harbor_import import import_harbor
from sandbox.container import ContainerEngine
from sandbox.none import NoneLauncher
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.container
EXAMPLE = ROOT / "suites" / "harbor-example"
AGENT = """import json, os, pathlib
skill = os.environ.get("SM_SKILL_DIR")
text = pathlib.Path("greeting.txt").read_text()
if skill and "upper case" in pathlib.Path(skill, "SKILL.md").read_text():
    text = text.upper()
pathlib.Path("out.txt").write_text(text)
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                        "usage": {"input_tokens": 10, "output_tokens": 5}}) + "\\n")
"""


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported") / "hx"
    split = out.parent / "split.json"
    split.write_text(json.dumps({"train": ["count-lines", "top-hosts"], "val": ["shout"]}))
    import_harbor(EXAMPLE, out, split_file=split)
    return out


def test_oracle_scores_one_and_doing_nothing_zero(engine: ContainerEngine, suites: Path, tmp_path: Path) -> None:
    for name in ("hx-train", "hx-val"):
        suite = load_suite(suites / name)
        for task in suite.tasks:
            row = check_task(engine, suite_task(suite.path, task.id), suite.path / "oracle" / task.id,
                             suite.fixture_dir(task.id), tmp_path)
            assert (row.task_id, row.oracle, row.null, row.error) == (task.id, 1.0, 0.0, "")
    # reward.json's fields are the tests: the partial-credit task wrote both
    logs = tmp_path / "top-hosts" / "oracle" / "verifier"
    assert json.loads((logs / "reward.json").read_text()) == {"hosts": 1, "count": 1}


def test_failed_build_is_an_error_with_its_log_never_a_score(engine: ContainerEngine, tmp_path: Path) -> None:
    source = shutil.copytree(EXAMPLE, tmp_path / "tasks")
    dockerfile = source / "count-lines" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN echo the-build-broke-here && false\n")
    import_harbor(source, tmp_path / "out" / "hx", seed=0)
    suite = next(load_suite(p) for p in (tmp_path / "out" / "hx").iterdir()
                 if "count-lines" in [t.id for t in load_suite(p).tasks])
    row = check_task(engine, suite_task(suite.path, "count-lines"), suite.path / "oracle" / "count-lines",
                     suite.fixture_dir("count-lines"), tmp_path / "scratch")
    assert (row.oracle, row.null, row.valid, row.verdict) == (None, None, False, "image build failed")
    assert row.error.startswith("the task's image did not build or pull: building")
    assert "the-build-broke-here" in row.error


def request(suite: Path, skill: Path | None, agent: Path, cells: Path) -> EvalRequest:
    return EvalRequest(skill_dir=skill, skill_name="shouting", suite=load_suite(suite), key=cells.name,
                       price=Price(1, 5, 1.25, 0.1), cells_root=cells, concurrency=1,
                       contract=Contract(model="m", replicates=1, max_turns=5, agent="test", silence_ms=60_000,
                                         heartbeat_ms=60_000),
                       settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=NoneLauncher(),
                                             grader_timeout_s=120, prune=False, infra_retries=0))


def test_cell_score_is_the_verifiers_reward(engine: ContainerEngine, suites: Path, tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    scores = {}
    for label, skill in (("skill", EXAMPLE / "shout" / "environment" / "skills" / "shouting"), ("none", None)):
        [cell] = evaluate(request(suites / "hx-val", skill, agent, tmp_path / label))
        assert cell.status == "ok", cell.error
        scores[label] = (cell.score, cell.tests)
        cell_dir = Path(cell.cell_dir)
        assert (cell_dir / "verifier" / "reward.txt").is_file()
        # the greeting exists only in the image (a RUN step made it): the cell got the image's WORKDIR
        assert (cell_dir / "work" / "greeting.txt").read_text() == "hello, harbor\n"
        assert not [p for p in cell_dir.rglob("*") if p.name == "solve.sh"]   # the oracle never enters a cell
    assert scores == {"skill": (1.0, {"reward": 1.0}), "none": (0.0, {"reward": 0.0})}


def test_a_task_whose_image_fails_is_infra_error_before_the_agent(engine: ContainerEngine, suites: Path,
                                                                   tmp_path: Path) -> None:
    broken = shutil.copytree(suites / "hx-val", tmp_path / "broken-val")
    (broken / "suite.md").write_text((broken / "suite.md").read_text().replace("name: hx-val", "name: broken-val"))
    with (broken / "harbor" / "shout" / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo no-such-base-tool && false\n")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    [cell] = evaluate(request(broken, None, agent, tmp_path / "cells"))
    assert (cell.status, cell.score) == ("infra_error", 0.0)
    assert "the task's environment could not be made: the task's image did not build or pull: building" in cell.error
    assert "no-such-base-tool" in cell.error
    assert not (Path(cell.cell_dir) / "stream.jsonl").exists()   # no agent call was spent on it

    class Job:   # at grading (an image gone after the agent ran): a grader error, never a score
        suite = load_suite(broken)
        task = suite.tasks[0]
        cell_root = tmp_path
        settings = CellSettings(agent_argv=[], launcher=NoneLauncher(), grader_timeout_s=60)
    grades, error = _grade(Job(), tmp_path)
    assert grades is None and error.startswith("harbor verifier could not run: the task's image did not build")


def test_validate_suite_command_flags_a_verifier_that_passes_doing_nothing(engine: ContainerEngine, suites: Path,
                                                                           tmp_path: Path) -> None:
    good = run_cli("--validate-suite", str(suites / "hx-val"), timeout=300)
    assert good.returncode == 0, good.stderr
    assert "shout" in good.stdout and "1 of 1 tasks valid" in good.stdout
    lax = shutil.copytree(suites / "hx-val", tmp_path / "lax-val")
    (lax / "suite.md").write_text((lax / "suite.md").read_text().replace("name: hx-val", "name: lax-val"))
    (lax / "harbor" / "shout" / "tests" / "test.sh").write_text("mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\n")
    bad = run_cli("--validate-suite", str(lax), timeout=300)
    assert bad.returncode == 1
    assert "INVALID" in bad.stdout and "0 of 1 tasks valid" in bad.stdout and "fix or drop: shout" in bad.stdout
