"""Harbor's one-container trial, against real podman (or docker): the oracle writes outside WORKDIR and the
verifier, in the same container, finds it (1.0); doing nothing scores 0 in a container of its own; a task
without an oracle is checked for its do-nothing score ("no oracle"); an oracle scoring 0 shows the verifier's
output; an image that does not build is "image build failed" with its log and exit 9. Harbor-shaped tasks
FROM the tests' offline base image (sandbox/host_image.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.harbor_run import check_task, suite_task
from eval.suite import load_suite
from mutator.after.harbor_import import import_harbor
from sandbox.container import ContainerEngine
from tests.conftest import run_cli

pytestmark = pytest.mark.container
DOCKERFILE = "FROM localhost/sm-harbor-base\nWORKDIR /app\n"
# SkillsBench's civ6-adjacency-optimizer shape: the answer goes to /output, outside WORKDIR
OUTSIDE_SOLVE = "mkdir -p /output && echo 42 > /output/answer.txt\n"
OUTSIDE_TEST = """#!/bin/bash
mkdir -p /logs/verifier
got="$(cat /output/answer.txt 2>/dev/null)"
echo "expected 42 in /output/answer.txt, got '${got}'"
if [ "$got" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def harbor_task(root: Path, task_id: str, *, solve: str | None, test: str = OUTSIDE_TEST,
                dockerfile: str = DOCKERFILE) -> None:
    task = root / task_id
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(test)
    if solve is not None:
        (task / "solution").mkdir()
        (task / "solution" / "solve.sh").write_text(solve)
    (task / "instruction.md").write_text("Write the answer to /output/answer.txt.\n")
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 60.0\n'
                                    '[environment]\ncpus = 1\nmemory_mb = 256\n')


def imported(root: Path, train: dict[str, dict], val: str = "spare") -> Path:
    """The tasks imported, all of `train` in the train suite (a spare one in val)."""
    for task_id, how in train.items():
        harbor_task(root / "tasks", task_id, **how)
    harbor_task(root / "tasks", val, solve=OUTSIDE_SOLVE)
    split = root / "split.json"
    split.write_text(json.dumps({"train": sorted(train), "val": [val]}))
    import_harbor(root / "tasks", root / "out" / "hb", split_file=split)
    return root / "out" / "hb" / "hb-train"


def check(engine: ContainerEngine, suite_path: Path, task_id: str, scratch: Path):
    suite = load_suite(suite_path)
    return check_task(engine, suite_task(suite.path, task_id), suite.path / "oracle" / task_id,
                      suite.fixture_dir(task_id), scratch)


def test_an_oracle_writing_outside_workdir_validates_one(engine: ContainerEngine, tmp_path: Path) -> None:
    suite = imported(tmp_path, {"outside": {"solve": OUTSIDE_SOLVE},
                                "wrong": {"solve": "mkdir -p /output && echo 41 > /output/answer.txt\n"}})
    row = check(engine, suite, "outside", tmp_path / "scratch")
    assert (row.oracle, row.null, row.error) == (1.0, 0.0, "")
    assert row.verdict == "ok"
    # what the cell keeps was copied out of the container before it went: the verifier's logs
    assert (tmp_path / "scratch" / "outside" / "oracle" / "verifier" / "reward.txt").read_text().strip() == "1"
    # an oracle scoring 0 says why, in the verifier's own words
    wrong = check(engine, suite, "wrong", tmp_path / "scratch")
    assert (wrong.oracle, wrong.null, wrong.verdict) == (0.0, 0.0, "INVALID")
    assert wrong.error.startswith("oracle: scored 0.00; verifier output tail: expected 42 in /output/answer.txt, "
                                  "got '41'")


def test_validate_suite_says_no_oracle_and_image_build_failed_with_exit_9(engine: ContainerEngine,
                                                                          tmp_path: Path) -> None:
    suite = imported(tmp_path, {
        "outside": {"solve": OUTSIDE_SOLVE},
        "bare": {"solve": None},
        "unbuilt": {"solve": OUTSIDE_SOLVE,
                    "dockerfile": DOCKERFILE + "RUN echo no-such-package-in-the-mirror && false\n"}})
    assert not (suite / "oracle" / "bare").exists()
    done = run_cli("--validate-suite", str(suite), timeout=300)
    assert done.returncode == 9, done.stdout + done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert lines["outside"].split()[1:4] == ["1.00", "0.00", "ok"]
    assert lines["bare"].split()[1:5] == ["—", "0.00", "no", "oracle"]
    assert "image build failed" in lines["unbuilt"] and "oracle exited" not in done.stdout
    assert "no-such-package-in-the-mirror" in done.stdout and "INVALID" not in done.stdout
    assert ("2 of 3 tasks valid (oracle 1.0, do-nothing 0.0; 1 without an oracle, do-nothing 0.0 only: bare); "
            "image build failed (infrastructure") in done.stdout


AGENT = """import json, os, pathlib
pathlib.Path("/output").mkdir(exist_ok=True)
pathlib.Path("/output/answer.txt").write_text("42\\n")
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                        "usage": {"input_tokens": 1, "output_tokens": 1}}) + "\\n")
"""


def test_a_cell_in_the_tasks_container_is_verified_there_and_keeps_no_mount_point(engine: ContainerEngine,
                                                                                 tmp_path: Path) -> None:
    """The agent writes /output (outside WORKDIR) and the verifier, in the same container, scores it 1. WORKDIR
    holds the agent's own folder (as WORKDIR=/root holds a harness under /root/.pyenv): the engine makes its
    mount point inside the work dir, and the cell does not keep it."""
    import sys

    from eval.cells import Contract
    from eval.cost import Price
    from eval.evaluate import EvalRequest, evaluate
    from eval.jobs import CellSettings
    from sandbox.container_launcher import ContainerSandbox
    from sandbox.none import NoneLauncher
    home = tmp_path / "home"
    agent = home / "agent" / "agent.py"
    agent.parent.mkdir(parents=True)
    agent.write_text(AGENT)
    suite = imported(tmp_path, {"outside": {"solve": OUTSIDE_SOLVE,
                                            "dockerfile": f"FROM localhost/sm-harbor-base\nWORKDIR {home}\n"}})
    [cell] = evaluate(EvalRequest(
        skill_dir=None, skill_name="none", suite=load_suite(suite), key="trial", price=Price(1, 5, 1.25, 0.1),
        cells_root=tmp_path / "cells", concurrency=1,
        contract=Contract(model="m", replicates=1, max_turns=5, agent="test", silence_ms=60_000, heartbeat_ms=60_000),
        settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=ContainerSandbox(engine.id,
                                                                                                 NoneLauncher()),
                              grader_timeout_s=120, prune=False, infra_retries=0)))
    assert (cell.status, cell.score, cell.tests) == ("ok", 1.0, {"reward": 1.0}), cell.error
    cell_dir = Path(cell.cell_dir)
    assert "expected 42 in /output/answer.txt, got '42'" in (cell_dir / "verifier.log").read_text()
    assert (cell_dir / "verifier" / "reward.txt").read_text().strip() == "1"   # copied out of the container
    assert not (cell_dir / "work" / "agent").exists()   # the agent folder's mount point is not in the cell


FETCHING_TEST = """#!/bin/bash
mkdir -p /logs/verifier
# as a verifier installing its tools at test time (curl ... | sh, pip install): it needs pypi.org
if ! (exec 3<>/dev/tcp/pypi.org/443); then echo 0 > /logs/verifier/reward.txt; exit 1; fi
echo 1 > /logs/verifier/reward.txt
"""


def test_a_verifier_denied_the_network_it_fetches_with_is_a_grader_error(engine: ContainerEngine,
                                                                        tmp_path: Path) -> None:
    """Imported without --allow-task-network, a task that allows the internet gets none: its verifier's
    resolution failure (the real one, from the container's resolver) is no 0 but an error naming the flag."""
    suite = imported(tmp_path, {"fetching": {"solve": "true\n", "test": FETCHING_TEST}})
    task = suite_task(suite, "fetching")
    row = check_task(engine, task, suite / "oracle" / "fetching", load_suite(suite).fixture_dir("fetching"),
                     tmp_path / "scratch", withheld=True)
    assert (row.oracle, row.null, row.verdict) == (None, None, "INVALID")
    assert "verifier could not reach the network ('Temporary failure in name resolution' in its output)" in row.error
    assert "re-import it with that flag" in row.error
    plain = check_task(engine, task, suite / "oracle" / "fetching", load_suite(suite).fixture_dir("fetching"),
                       tmp_path / "scratch2", withheld=False)   # the task itself forbids it: a 0 stands
    assert (plain.oracle, plain.null) == (0.0, 0.0)
