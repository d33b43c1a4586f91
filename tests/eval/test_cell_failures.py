"""Who failed: infra_error for the API or the harness, agent_error for a runaway or malformed agent, and a
grader_error cell that keeps its working dir so it can be re-graded without running the agent again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eval.evaluate import evaluate
from eval.stream_metrics import read_stream
from tests.conftest import make_suite
from tests.eval.test_runner import request, with_settings

HEAD = """import json, os, pathlib, sys
stream = open(os.environ["SM_STREAM"], "a")
def emit(event):
    stream.write(json.dumps(event) + "\\n"); stream.flush()
"""
RESULT = 'emit({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1})\n'
AGENTS = {
    # the SDK's own words after its retries: an outage is nobody's verdict on the skill
    "api_overloaded": HEAD + 'print("anthropic_agent: API error 529: InternalServerError: overloaded", file=sys.stderr)\n'
                             'emit({"type": "result", "subtype": "error_during_execution", "is_error": True, '
                             '"result": "API error 529: InternalServerError: Overloaded"})\nsys.exit(1)\n',
    "declares_api_error": HEAD + 'emit({"type": "result", "subtype": "error_api", "is_error": True, '
                                 '"result": "the model API is unreachable"})\nsys.exit(1)\n',
    "auth_error": HEAD + 'emit({"type": "result", "subtype": "error_during_execution", "is_error": True, '
                         '"result": "API error 401: AuthenticationError: invalid x-api-key"})\nsys.exit(1)\n',
    "wrong_shape": HEAD + 'emit({"type": "assistant", "message": "str"})\n' + RESULT,
    "negative_usage": HEAD + 'emit({"type": "assistant", "message": {"content": [], "usage": {"input_tokens": -5000000}}})\n'
                      + RESULT,
    "absurd_usage": HEAD + 'emit({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, '
                           '"usage": {"input_tokens": 10**12, "output_tokens": 1}})\n',
    "stdout_flood": HEAD + 'chunk = "x" * 65536\nwhile True:\n    sys.stdout.write(chunk)\n',
    "stream_flood": HEAD + 'while True:\n    emit({"type": "system", "subtype": "noise", "pad": "y" * 4096})\n',
}


def agent(tmp_path: Path, name: str) -> list[str]:
    script = tmp_path / f"{name}.py"
    script.write_text(AGENTS[name])
    return [sys.executable, str(script)]


@pytest.mark.parametrize(("name", "status", "says"), [
    ("api_overloaded", "infra_error", "API error 529"),
    ("declares_api_error", "infra_error", "unreachable"),
    ("auth_error", "agent_error", "agent exited 1"),       # a bad key is the setup's fault, not an outage
    ("wrong_shape", "agent_error", "assistant message is str"),
    ("negative_usage", "agent_error", "negative or absurd"),
    ("absurd_usage", "agent_error", "negative or absurd"),
])
def test_each_failure_is_one_cell_with_its_reason(tiny_suite: Path, tmp_path: Path, name: str, status: str,
                                                  says: str) -> None:
    req = with_settings(request(tiny_suite, tmp_path, agent(tmp_path, name)), infra_retries=0)
    cells = evaluate(req)
    assert len(cells) == 2
    for cell in cells:
        assert cell.status == status and says in cell.error and cell.score == 0.0
        assert cell.cost_usd >= 0 and cell.input_tokens >= 0 and cell.retries == 0


@pytest.mark.parametrize("name", ["stdout_flood", "stream_flood"])
def test_an_agent_that_writes_forever_is_killed_at_the_output_cap(tiny_suite: Path, tmp_path: Path, name: str) -> None:
    cap = 1 << 20
    req = with_settings(request(tiny_suite, tmp_path, agent(tmp_path, name)), max_output_bytes=cap)
    for cell in evaluate(req):
        assert cell.status == "agent_error" and "output over 1 MB" in cell.error
        root = Path(cell.cell_dir)
        for log in ("stream.jsonl", "agent.stdout", "agent.stderr"):
            assert (root / log).stat().st_size <= cap + 100      # truncated, with the marker
        flooded = root / ("agent.stdout" if name == "stdout_flood" else "stream.jsonl")
        assert flooded.read_bytes().endswith(b"[truncated by the harness: output over the cap]\n")


def test_the_wall_clock_cap_stops_an_agent_the_watchdog_would_not(tiny_suite: Path, tmp_path: Path) -> None:
    """A stream that keeps growing satisfies the heartbeat; only the wall-clock cap stops it."""
    script = tmp_path / "chatty.py"
    script.write_text(HEAD + "import time\nwhile True:\n    emit({'type': 'system', 'subtype': 'tick'}); time.sleep(0.05)\n")
    req = with_settings(request(tiny_suite, tmp_path, [sys.executable, str(script)]), cell_timeout_ms=1500)
    for cell in evaluate(req):
        assert cell.status == "timeout" and "wall-clock cap" in cell.error and "--cell-timeout-ms" in cell.error


def test_an_infra_error_cell_is_retried_in_place_and_counted(tiny_suite: Path, tmp_path: Path) -> None:
    """Overloaded on the first try of each cell, fine on the second: ok cells, one retry each."""
    script = tmp_path / "flaky.py"
    script.write_text(HEAD + '''tries = pathlib.Path(os.environ["SM_PROMPT_FILE"]).parent.parent / ("tries-" + os.environ["SM_CELL_SEED"])
n = int(tries.read_text()) if tries.exists() else 0
tries.write_text(str(n + 1))
if n == 0:
    emit({"type": "result", "subtype": "error_api", "is_error": True, "result": "overloaded"})
    sys.exit(1)
pathlib.Path("output.txt").write_text("done")
''' + RESULT)
    req = with_settings(request(tiny_suite, tmp_path, [sys.executable, str(script)]), infra_retries=1,
                        infra_backoff_s=0.01)
    cells = evaluate(req)
    assert [(c.status, c.retries) for c in cells] == [("ok", 1), ("ok", 1)]


def test_a_harness_fault_is_an_infra_error_not_a_crash(tiny_suite: Path, tmp_path: Path, ok_agent: list[str]) -> None:
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "t0__r0").write_text("a file where the cell dir goes")   # staging cannot make the cell
    cells = {c.task_id: c for c in evaluate(with_settings(request(tiny_suite, tmp_path, ok_agent),
                                                          infra_retries=0))}
    assert cells["t0"].status == "infra_error" and cells["t0"].error.startswith("harness fault: NotADirectoryError")
    assert cells["t1"].status == "ok"


SLOW_GRADER = """import json, pathlib, sys, time
time.sleep(float(pathlib.Path(DELAY).read_text()))   # beside the suite (graders run from a copy of it)
print(json.dumps({"exists": float((pathlib.Path(sys.argv[1]) / "output.txt").exists())}))
"""


def test_a_grader_error_cell_keeps_its_work_dir_and_is_regraded_without_the_agent(tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suites", grader=SLOW_GRADER.replace("DELAY", repr(str(tmp_path / "suites" / "delay"))),
                       tasks=1)
    (suite.parent / "delay").write_text("5")
    script = tmp_path / "counting.py"
    script.write_text(HEAD + 'pathlib.Path("output.txt").write_text("done")\n'
                      'with open(pathlib.Path(os.environ["SM_PROMPT_FILE"]).parent.parent.parent / "runs", "a") as f:\n'
                      '    f.write("x")\n' + RESULT)
    req = request(suite, tmp_path, [sys.executable, str(script)], grader_timeout_s=0.3)
    req = with_settings(req, prune=True)
    [first] = evaluate(req)
    assert first.status == "grader_error" and "timed out" in first.error
    assert (Path(first.cell_dir) / "work" / "output.txt").is_file()          # kept for re-grading
    (suite.parent / "delay").write_text("0")
    [second] = evaluate(with_settings(req, grader_timeout_s=30), regrade={("t0", 0)})
    assert second.status == "ok" and second.tests == {"exists": 1.0} and second.extra["regraded"] is True
    assert second.cost_usd == first.cost_usd                                  # the same agent run, read again
    assert (tmp_path / "runs").read_text() == "x"                             # the agent ran once
    kept = Path(second.cell_dir) / "work"                                     # graded: only the agent's outputs kept
    assert sorted(p.name for p in kept.iterdir()) == ["output.txt"]


def test_read_stream_never_raises_on_valid_json_of_the_wrong_shape(tmp_path: Path) -> None:
    stream = tmp_path / "stream.jsonl"
    events = [{"type": "assistant", "message": {"content": "not a list"}},
              {"type": "assistant", "message": {"usage": {"output_tokens": "many"}}},
              {"type": "result", "usage": [], "num_turns": -1}, [1, 2], "text", 7]
    stream.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    metrics = read_stream(stream)
    assert metrics.invalid.startswith("malformed stream event on line 1: assistant content is str")
    assert metrics.usage.input_tokens == 0 and metrics.usage.output_tokens == 0 and metrics.bad_lines == 3


LINGERING_GRADER = """import json, pathlib, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])   # inherits stdout and stderr
print(json.dumps({"exists": float((pathlib.Path(sys.argv[1]) / "output.txt").exists())}))
"""


def test_a_grader_that_exits_with_valid_json_is_not_failed_by_a_child_it_left(tmp_path: Path, ok_agent) -> None:
    suite = make_suite(tmp_path / "suites", grader=LINGERING_GRADER, tasks=1)
    [cell] = evaluate(request(suite, tmp_path, ok_agent, grader_timeout_s=20))
    assert cell.status == "ok" and cell.tests == {"exists": 1.0}


def test_a_graders_output_is_read_up_to_a_cap(tmp_path: Path, ok_agent) -> None:
    flood = 'import sys\nsys.stdout.write("x" * (8 << 20))\n'
    suite = make_suite(tmp_path / "suites", grader=flood, tasks=1)
    [cell] = evaluate(request(suite, tmp_path, ok_agent))
    assert cell.status == "grader_error" and "not JSON" in cell.error
    assert (Path(cell.cell_dir) / "grade.stdout").stat().st_size == 1 << 20
