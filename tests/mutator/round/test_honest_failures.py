"""A broken setup never wins: an unhealthy seed stops the run before any mutation, a fixed setup resumes
with exactly the failed cells, a grader that timed out is re-graded without re-running the agent, and a
champion is proposed only for a real improvement."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mutator.store.db import connect_readonly
from tests.conftest import AGENT_OK, ROOT, environ_without, make_suite, run_py

RUNS = "runs"


OFFLINE = ("SKILL_MUTATOR_", "SM_", "ANTHROPIC_")   # run.py as if none of our variables were set


def rows(data: Path, sql: str, params=()) -> list[dict]:
    return [dict(r) for r in connect_readonly(data / "mutator.db").query(sql, params)]


COUNTING = """import pathlib
with open(pathlib.Path(__file__).with_name("runs"), "a") as f:
    f.write("x")
"""
FAILING = "import sys\nprint('boom: the agent cannot start', file=sys.stderr)\nsys.exit(1)\n"
# broken while a file beside it says so: the setup is fixed without changing the agent (its code is part of
# the evaluation contract, so a changed agent would start a new run)
SOMETIMES = """import pathlib, sys
if pathlib.Path(__file__).with_name("broken").exists():
    print("boom: a missing dependency", file=sys.stderr)
    sys.exit(1)
""" + AGENT_OK
NO_RESULT = "import pathlib\npathlib.Path('output.txt').write_text('done')\n"
FLOOD = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"   # killed at the output cap, every time


@pytest.fixture
def setup(tmp_path: Path):
    """Two tiny suites (train, val), a seed skill copy, and an agent script whose body a test swaps. Bare
    processes (--sandbox none): the agent counts its runs in a file beside it, outside any sandbox."""
    suites = tmp_path / "suites"
    train, val = make_suite(suites, "tiny-train", split="train"), make_suite(suites, "tiny-val", split="val")
    agent = tmp_path / "agent.py"

    def command(*extra: str, body: str) -> subprocess.CompletedProcess:
        agent.write_text(COUNTING + body)
        return run_py("--suite", str(train), "--val", str(val), "--rounds", "0", "--replicates", "2", "--real",
                      "--agent", "command", "--agent-cmd", f"{sys.executable} {agent}",
                      "--mutator-cmd", f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}",
                      "--skill-dir", str(ROOT / "suites" / "csv-clean"), "--no-solve", "--sandbox", "none",
                      "--data-dir", str(tmp_path / "data"), *extra, env=environ_without(*OFFLINE))
    return command, tmp_path / "data", tmp_path / RUNS, train


@pytest.mark.parametrize(("body", "says", "extra"), [
    (FAILING, "agent exited 1; stderr: boom: the agent cannot start", ()),
    (NO_RESULT, "agent exited 0 without a result event", ()),
    (FLOOD, "writes past the output cap (--max-output-mb", ("--max-output-mb", "1")),
], ids=["exits-1", "no-result-event", "output-cap"])
def test_an_agent_that_always_fails_stops_the_run_before_any_mutation(setup, body: str, says: str,
                                                                      extra: tuple[str, ...]) -> None:
    command, data, runs, _ = setup
    done = command(*extra, body=body)
    assert done.returncode == 7, done.stderr[-2000:]
    assert "the seed's evaluation is unhealthy" in done.stderr and "4 of 4 cells failed (4 agent_error)" in done.stderr
    assert "likely cause: the build agent" in done.stderr and says in done.stderr and "--retry-failed" in done.stderr
    [run] = rows(data, "select * from runs")
    assert run["status"] == "stopped" and "unhealthy" in run["error"]
    assert rows(data, "select verdict from attempts") == [{"verdict": "SEED"}]
    assert rows(data, "select * from proposals") == []
    assert runs.read_text() == "x" * 4          # val only: the run stopped before the train evaluation counted


def test_after_the_setup_is_fixed_retry_failed_runs_exactly_the_failed_cells(setup, tmp_path: Path) -> None:
    command, data, runs, _ = setup
    (tmp_path / "broken").write_text("")
    assert command(body=SOMETIMES).returncode == 7
    again = command(body=SOMETIMES)
    assert again.returncode == 7 and runs.read_text() == "x" * 4     # a cached failure is not re-run unasked
    (tmp_path / "broken").unlink()
    fixed = command("--retry-failed", body=SOMETIMES)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert "--retry-failed: 4 failed cell(s)" in fixed.stdout + fixed.stderr
    cells = rows(data, "select e.suite, c.status, c.retries from cells c join evaluations e on e.id = c.evaluation_id "
                       "order by e.suite, c.task_id, c.replicate")
    assert [(c["suite"], c["status"], c["retries"]) for c in cells] == \
        [("tiny-train", "ok", 0)] * 2 + [("tiny-val", "ok", 1)] * 4    # train evidence: 1 replicate (evidenceReplicates)
    assert runs.read_text() == "x" * (4 + 4 + 2)                       # 4 failed, 4 re-run, 2 train
    [run] = rows(data, "select * from runs")
    assert run["status"] == "finished" and run["error"] is None
    # the train evaluation holds the evidence's first replicate only (evidenceReplicates 1), so it stays partial
    assert rows(data, "select suite, status, n_done, n_failed from evaluations order by suite") == \
        [{"suite": "tiny-train", "status": "partial", "n_done": 2, "n_failed": 0},
         {"suite": "tiny-val", "status": "done", "n_done": 4, "n_failed": 0}]


def test_a_grader_that_always_fails_stops_the_run_and_names_the_grader(setup) -> None:
    command, data, runs, train = setup
    for suite in (train, train.parent / "tiny-val"):
        (suite / "run-eval.py").write_text("import sys\nprint('grader bug', file=sys.stderr)\nsys.exit(3)\n")
    done = command(body=AGENT_OK)
    assert done.returncode == 8, done.stderr[-2000:]    # cells that are not results: exit 8, as the README's table says
    assert "4 grader_error cells of 4 are not results" in done.stderr
    assert "likely cause: the suite's grader (script in" in done.stderr and "grader bug" in done.stderr
    assert rows(data, "select count(*) as n from attempts where verdict in ('KEEP', 'REJECT')") == [{"n": 0}]


SLOW_GRADER = """import json, pathlib, sys, time
time.sleep(2)
print(json.dumps({"exists": float((pathlib.Path(sys.argv[1]) / "output.txt").exists())}))
"""


def test_a_grader_timeout_then_a_longer_one_regrades_without_running_the_agent(setup) -> None:
    command, data, runs, train = setup
    for suite in (train, train.parent / "tiny-val"):
        (suite / "run-eval.py").write_text(SLOW_GRADER)
    first = command("--grader-timeout-ms", "300", body=AGENT_OK)
    assert first.returncode == 8 and "grader_error" in first.stderr
    assert runs.read_text() == "x" * 4
    second = command("--grader-timeout-ms", "20000", body=AGENT_OK)
    assert second.returncode == 0, second.stderr[-2000:]
    assert runs.read_text() == "x" * (4 + 2)          # val re-graded with no agent run; train's 2 (evidenceReplicates 1) ran once
    val = rows(data, "select c.status, c.retries, c.score from cells c join evaluations e on e.id = c.evaluation_id "
                     "where e.suite = 'tiny-val'")
    assert val == [{"status": "ok", "retries": 0, "score": 1.0}] * 4


def test_a_champion_below_propose_min_delta_is_not_proposed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = run_py("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1",
                  "--propose-min-delta", "5", "--data-dir", str(data), env=environ_without(*OFFLINE))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "No proposal: " in done.stdout and "below proposeMinDelta 5" in done.stdout
    assert rows(data, "select * from proposals") == []


def test_a_newer_champion_supersedes_the_open_proposal(tmp_path: Path) -> None:
    data = tmp_path / "data"
    args = ("--suite", "clean-train", "--val", "clean-val", "--replicates", "1", "--data-dir", str(data))
    # at 1 replicate round 6's dearer tie is kept only by the lenient gate with every tie kept (the default keep
    # rule 'positive' keeps no tie)
    ties = {"SKILL_MUTATOR_TIE_RULE": "keep", "SKILL_MUTATOR_KEEP_RULE": "lenient"}
    assert run_py(*args, "--rounds", "2", env=environ_without(*OFFLINE, **ties)).returncode == 0
    later = run_py(*args, "--rounds", "6", env=environ_without(*OFFLINE, **ties))
    assert later.returncode == 0, later.stderr[-2000:]
    found = rows(data, "select id, genome_hash, status from proposals order by id")
    assert [p["status"] for p in found] == ["superseded", "proposed"]
    assert found[0]["genome_hash"] != found[1]["genome_hash"]
    [decision] = rows(data, "select note from proposal_decisions where action = 'supersede'")
    assert decision["note"] == f"superseded by proposal {found[1]['id']}"


def test_run_py_help_documents_the_failure_flags() -> None:
    text = run_py("--help", env=environ_without(*OFFLINE)).stdout
    for flag in ("--cell-timeout-ms", "--max-output-mb", "--infra-retries", "--max-failed-share",
                 "--propose-min-delta", "--retry-failed"):
        assert flag in text


def test_a_test_run_on_a_broken_grader_reports_nothing(setup, tmp_path: Path) -> None:
    command, data, runs, train = setup
    assert command(body=AGENT_OK).returncode == 0
    broken = make_suite(train.parent, "tiny-test", split="test",
                        grader="import sys\nprint('grader bug', file=sys.stderr)\nsys.exit(3)\n")
    [run] = rows(data, "select id from runs")
    done = run_py("--test-run", run["id"], "--suite", str(broken), "--data-dir", str(data), "--sandbox", "none",
                  env=environ_without(*OFFLINE))
    assert done.returncode == 8, done.stderr[-2000:]
    assert "grader_error cells of 4 are not results" in done.stderr and "grader bug" in done.stderr
    assert rows(data, "select status, report from test_runs") == [{"status": "failed", "report": None}]
