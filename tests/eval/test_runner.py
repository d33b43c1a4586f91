"""Cells end as a recorded status, never an exception: ok, agent_error, timeout, grader_error."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.cost import Price
from eval.evaluate import EvalRequest, evaluate
from eval.jobs import CellSettings
from eval.suite import load_suite
from sandbox.none import NoneLauncher
from tests.conftest import ROOT, make_suite
from tests.eval.test_reaper import gone, wait_for

PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)


def request(suite_dir: Path, tmp_path: Path, agent: list[str], *, skill: Path | None = None, replicates: int = 1,
            silence_ms: int = 60_000, heartbeat_ms: int = 60_000, grader_timeout_s: float = 30) -> EvalRequest:
    suite = load_suite(suite_dir)
    contract = Contract(model="m", replicates=replicates, max_turns=5, agent="test", silence_ms=silence_ms,
                        heartbeat_ms=heartbeat_ms)
    return EvalRequest(skill_dir=skill, skill_name="csv-clean", suite=suite, contract=contract, key="k",
                       cells_root=tmp_path / "cells", price=PRICE, concurrency=2,
                       settings=CellSettings(agent_argv=agent, launcher=NoneLauncher(), grader_timeout_s=grader_timeout_s,
                                             prune=False))


def with_settings(req: EvalRequest, **changes) -> EvalRequest:
    """The request with some of its cell settings changed (the record is carried whole)."""
    return replace(req, settings=replace(req.settings, **changes))


def test_ok_cells_graded_and_priced(tiny_suite: Path, tmp_path: Path, ok_agent: list[str]) -> None:
    seen = []
    cells = evaluate(request(tiny_suite, tmp_path, ok_agent, replicates=2), on_cell=seen.append)
    assert len(cells) == 4 and len(seen) == 4
    for cell in cells:
        assert cell.status == "ok" and cell.tests == {"exists": 1.0, "says_done": 1.0} and cell.score == 1.0
        assert cell.steps == 1 and cell.input_tokens == 1000 and cell.output_tokens == 100
        assert cell.cost_usd == pytest.approx((1000 * 1.0 + 100 * 5.0) / 1e6)
    # the answer key and other tasks never reach the cell: only declared inputs are staged
    work = Path(cells[0].cell_dir) / "work"
    assert sorted(p.name for p in work.iterdir()) == ["in.txt", "output.txt"]


def test_skip_runs_only_unfinished_cells(tiny_suite: Path, tmp_path: Path, ok_agent: list[str]) -> None:
    cells = evaluate(request(tiny_suite, tmp_path, ok_agent, replicates=2), skip={("t0", 0), ("t1", 1)})
    assert sorted((c.task_id, c.replicate) for c in cells) == [("t0", 1), ("t1", 0)]


def test_skill_copied_into_claude_skills(tiny_suite: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(AGENT_ECHO_SKILL)
    cells = evaluate(request(tiny_suite, tmp_path, [sys.executable, str(probe)], skill=ROOT / "suites" / "csv-clean"))
    work = Path(cells[0].cell_dir) / "work"
    assert (work / "skill_seen.txt").read_text() == "True"   # the agent had the skill ...
    assert (work / "skill_dir.txt").read_text() == str(work / ".claude" / "skills" / "csv-clean")
    assert not (work / ".claude" / "skills").exists()          # ... and it was gone before the grader ran


GRADER_SEES_NO_SKILL = """import json, pathlib, sys
print(json.dumps({"no_skill": float(not (pathlib.Path(sys.argv[1]) / ".claude" / "skills").exists())}))
"""


def test_the_grader_never_sees_the_skill(tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suites", grader=GRADER_SEES_NO_SKILL, tasks=1)
    probe = tmp_path / "probe.py"
    probe.write_text(AGENT_ECHO_SKILL)
    cells = evaluate(request(suite, tmp_path, [sys.executable, str(probe)], skill=ROOT / "suites" / "csv-clean"))
    assert cells[0].status == "ok" and cells[0].tests == {"no_skill": 1.0}


AGENT_ECHO_SKILL = """import json, os, pathlib
pathlib.Path("skill_dir.txt").write_text(os.environ["SM_SKILL_DIR"])
pathlib.Path("skill_seen.txt").write_text(str(pathlib.Path(os.environ["SM_SKILL_DIR"], "SKILL.md").is_file()))
open(os.environ["SM_STREAM"], "a").write(json.dumps({"type": "result", "is_error": False, "num_turns": 1}) + "\\n")
"""


@pytest.mark.parametrize("grader, expected", [
    ("import sys\nsys.stderr.write('boom: KeyError')\nsys.exit(3)\n", "grader exited 3: boom: KeyError"),
    ("print('not json at all')\n", "grader output is not JSON"),
    ("import json\nprint(json.dumps({'a': 1.5}))\n", "scores must be numbers in [0, 1]"),
    ("import time\ntime.sleep(60)\n", "grader timed out after 1 s and was killed"),
])
def test_bad_grader_is_a_recorded_cell_error(tmp_path: Path, ok_agent: list[str], grader: str, expected: str) -> None:
    suite = make_suite(tmp_path / "suites", grader=grader, tasks=1)
    cells = evaluate(request(suite, tmp_path, ok_agent, grader_timeout_s=1))
    assert [c.status for c in cells] == ["grader_error"]
    assert expected in cells[0].error and cells[0].score == 0.0
    assert cells[0].steps == 1  # the agent's work is still measured


def test_agent_crash_is_agent_error_with_stderr(tiny_suite: Path, tmp_path: Path) -> None:
    env_agent = [sys.executable, str(ROOT / "fakes" / "fake_agent.py")]
    req = request(tiny_suite, tmp_path, env_agent)
    req = with_settings(req, env={"FAKE_AGENT_CRASH": "1"})
    cells = evaluate(req)
    assert {c.status for c in cells} == {"agent_error"}
    assert "agent exited 3" in cells[0].error and "stderr:" in cells[0].error


def test_agent_without_result_event_is_agent_error(tiny_suite: Path, tmp_path: Path) -> None:
    cells = evaluate(request(tiny_suite, tmp_path, [sys.executable, "-c", "pass"]))
    assert {c.status for c in cells} == {"agent_error"}
    assert "without a result event" in cells[0].error


def test_hanging_agent_killed_by_watchdog(tiny_suite: Path, tmp_path: Path) -> None:
    agent = [sys.executable, str(ROOT / "fakes" / "fake_agent.py")]
    req = request(tiny_suite, tmp_path, agent, silence_ms=60_000, heartbeat_ms=300)  # generous start-up on a loaded CI box
    req = with_settings(req, env={"FAKE_AGENT_HANG": "1"})
    cells = evaluate(req)
    assert {c.status for c in cells} == {"timeout"}
    assert "heartbeat budget" in cells[0].error
    stream = (Path(cells[0].cell_dir) / "stream.jsonl").read_text().splitlines()
    assert json.loads(stream[0])["type"] == "system"


def test_silent_agent_killed_with_its_children(tiny_suite: Path, tmp_path: Path) -> None:
    """Each cell's agent starts a child and falls silent; the silence budget ends the agent's whole group.

    No race with the clock: each child records its pid as it starts and then waits a minute, so the check is
    that those very processes are gone (a zombie counts), not that a file a slept-for child would write is
    absent. The 1.5 s budget is only the room each child has to start before its group is ended."""
    pids = tmp_path / "pids"
    pids.mkdir()
    child = tmp_path / "child.py"
    child.write_text(f"import os, pathlib, time\npathlib.Path({str(pids)!r}, str(os.getpid())).touch()\n"
                     "time.sleep(60)\n")
    parent = tmp_path / "parent.py"
    parent.write_text(f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, {str(child)!r}])\n"
                      "time.sleep(60)\n")
    cells = evaluate(request(tiny_suite, tmp_path, [sys.executable, str(parent)], silence_ms=1500))
    assert {c.status for c in cells} == {"timeout"}
    assert "silence budget" in cells[0].error
    started = [int(p.name) for p in pids.iterdir()]
    assert len(started) == len(cells)   # every cell's child ran ...
    assert wait_for(lambda: all(gone(pid) for pid in started), 10)   # ... and died with its group


def test_pruned_cell_keeps_trajectory_logs_and_only_the_agents_outputs(tiny_suite: Path, tmp_path: Path,
                                                                       ok_agent: list[str]) -> None:
    req = request(tiny_suite, tmp_path, ok_agent)
    cells = evaluate(with_settings(req, prune=True))
    root = Path(cells[0].cell_dir)
    # kept for a changed grader: what the agent wrote; the untouched input comes back from the fixtures
    assert sorted(p.relative_to(root / "work").as_posix() for p in (root / "work").rglob("*")) == ["output.txt"]
    assert json.loads((root / "restore.json").read_text()) == {"inputs": ["in.txt"]}
    assert {"stream.jsonl", "trajectory.md", "cell.json", "grade.stdout"} <= {p.name for p in root.iterdir()}
    text = (root / "trajectory.md").read_text()
    assert "## Prompt\nWrite done to output.txt" in text and "1. **Write**" in text
    assert "- says_done: 1.000" in text and "## Output output.txt\n```\ndone\n```" in text


GRADER_WRITES_ITS_FOLDER = """import json, os, pathlib, sys
here = pathlib.Path(__file__).parent
(here / "grader.log").write_text("graded " + sys.argv[2])        # beside the grader script
pathlib.Path("cache.json").write_text("{}")                      # into its working directory
seen = sorted(p.name for p in pathlib.Path(os.environ["SM_SUITE_DIR"]).iterdir())
only_mine = sorted(os.listdir(pathlib.Path(os.environ["SM_SUITE_DIR"]) / "fixtures")) == [sys.argv[2]]
print(json.dumps({"first_to_write": float(len(seen) == 6 and only_mine)}))
"""


def test_a_grader_writing_into_its_folder_leaves_the_suite_unchanged(tmp_path: Path, ok_agent: list[str]) -> None:
    from eval.suite import check_unchanged
    suite_dir = make_suite(tmp_path / "suites", grader=GRADER_WRITES_ITS_FOLDER)
    req = request(suite_dir, tmp_path, ok_agent, replicates=2)
    cells = evaluate(req)
    # each cell's grader ran in a private copy: the suite's 4 entries (fixtures: its task's only) plus its 2 writes
    assert [c.status for c in cells] == ["ok"] * 4 and all(c.tests == {"first_to_write": 1.0} for c in cells)
    assert sorted(p.name for p in suite_dir.iterdir()) == ["fixtures", "run-eval.py", "suite.md", "tasks.jsonl"]
    check_unchanged(req.suite)   # the hash the run took still holds
    assert not list((tmp_path / "cells").rglob("grader-suite-*"))   # the copies are gone after grading


GRADER_REWRITES_ITS_FOLDER = """import json, os, pathlib, sys
here = pathlib.Path(__file__).parent
md, tasks = here / "suite.md", here / "tasks.jsonl"
pristine = not md.read_text().startswith("CHANGED") and tasks.stat().st_mode & 0o777 != 0o600
with open(md, "r+") as f:           # in place, the same size: through a hard link it would reach every copy
    f.write("CHANGED")
tasks.chmod(0o600)
print(json.dumps({"pristine": float(pristine)}))
"""


def test_a_grader_rewriting_its_folders_files_in_place_is_seen_by_no_other_cell(tmp_path: Path, ok_agent) -> None:
    """The copy's files are hard links to a template lent to one grader at a time; a template whose files a grader
    changed is dropped, so the next grader of the same task still sees the suite as it is, at any concurrency."""
    from eval.suite import check_unchanged
    suite_dir = make_suite(tmp_path / "suites", grader=GRADER_REWRITES_ITS_FOLDER)
    req = request(suite_dir, tmp_path, ok_agent, replicates=4)
    for concurrency in (1, 2, 4):   # one at a time, two replicates at once, all four at once
        cells = evaluate(replace(req, concurrency=concurrency, cells_root=tmp_path / f"cells-{concurrency}"))
        assert [c.status for c in cells] == ["ok"] * 8 and all(c.tests == {"pristine": 1.0} for c in cells)
    check_unchanged(req.suite)
    assert not (suite_dir / "suite.md").read_text().startswith("CHANGED")


GRADER_SAYS_ITS_INODE = """import json, os, pathlib, sys
st = os.stat(pathlib.Path(__file__))
print(json.dumps({"linked": float(st.st_nlink >= 2), "inode": st.st_ino / 10**12}))
"""


def test_a_cells_grader_files_are_links_to_a_template_reused_by_the_next_cell(tmp_path: Path, ok_agent) -> None:
    """No inode per file per cell: the grader's script is a hard link, and the next cell (one at a time), of any task,
    gets the same template, so the same inode."""
    suite_dir = make_suite(tmp_path / "suites", grader=GRADER_SAYS_ITS_INODE)
    left = tmp_path / ".grader-templates-999999999-gone"   # a killed harness's templates, beside the evaluations
    (left / "t-0").mkdir(parents=True)
    cells = evaluate(replace(request(suite_dir, tmp_path, ok_agent, replicates=3), concurrency=1))
    assert not left.exists() and len(list(tmp_path.glob(".grader-templates-*"))) == 1   # this process's only
    (root,) = tmp_path.glob(".grader-templates-*")
    assert len(list(root.iterdir())) == 1   # one template for both tasks: one grader at a time, one lent at a time
    assert [c.status for c in cells] == ["ok"] * 6 and all(c.tests["linked"] == 1.0 for c in cells)
    for task in {c.task_id for c in cells}:
        assert len({c.tests["inode"] for c in cells if c.task_id == task}) == 1
    assert not list((tmp_path / "cells").rglob("grader-suite-*"))   # each cell's copy is gone after grading


def test_the_graders_copy_keeps_modes_and_links_and_only_its_tasks_fixtures(tmp_path: Path) -> None:
    import os
    import stat

    from eval.graders.script import private_suite
    suite_dir = make_suite(tmp_path / "suites", tasks=3)
    (suite_dir / "helpers").mkdir()
    (suite_dir / "helpers" / "check.sh").write_text("#!/bin/sh\n")
    (suite_dir / "helpers" / "check.sh").chmod(0o750)
    (suite_dir / "answers.csv").symlink_to("helpers/check.sh")
    (suite_dir / "__pycache__").mkdir()
    (suite_dir / "__pycache__" / "x.pyc").write_bytes(b"\0")
    suite = load_suite(suite_dir)
    job = type("Job", (), {"suite": suite, "task": suite.tasks[1], "cell_root": tmp_path / "cell"})()
    job.cell_root.mkdir()
    for _ in range(2):   # the second copy comes from the listing walked once
        root, argv = private_suite(job)
        copy = root / suite_dir.name
        assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*")) == [
            "answers.csv", "fixtures", "fixtures/t1", "fixtures/t1/in.txt", "helpers", "helpers/check.sh",
            "run-eval.py", "suite.md", "tasks.jsonl"]
        assert stat.S_IMODE((copy / "helpers" / "check.sh").stat().st_mode) == 0o750
        assert os.readlink(copy / "answers.csv") == "helpers/check.sh"
        assert str(copy / "run-eval.py") in argv


@pytest.mark.parametrize("grader, no_site", [
    # the standard library only: started with -S (site's import of every installed .pth skipped)
    ("from __future__ import annotations\nimport json, sys\nprint(json.dumps({'no_site': float(sys.flags.no_site)}))\n",
     1.0),
    # an installed package: with site, so it imports
    ("import json, sys\nimport sqlite_utils\nprint(json.dumps({'no_site': float(sys.flags.no_site)}))\n", 0.0),
    # site's exit(): with site, so it exists
    ("import json, sys\nprint(json.dumps({'no_site': float(sys.flags.no_site)}))\nexit(0)\n", 0.0),
    # a module imported by name: with site, whatever the name
    ("import importlib, json, sys\nimportlib.import_module('json')\n"
     "print(json.dumps({'no_site': float(sys.flags.no_site)}))\n", 0.0),
])
def test_a_python_grader_starts_without_site_only_when_it_needs_nothing_site_adds(
        tmp_path: Path, ok_agent: list[str], grader: str, no_site: float) -> None:
    suite = make_suite(tmp_path / "suites", grader=grader, tasks=1)
    cells = evaluate(request(suite, tmp_path, ok_agent))
    assert [c.status for c in cells] == ["ok"], cells[0].error
    assert cells[0].tests == {"no_site": no_site}
