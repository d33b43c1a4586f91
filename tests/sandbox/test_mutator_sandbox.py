"""The mutator under bwrap: it edits skill/ and writes result.json + its stream, and nothing else."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from eval.cost import Price
from mutator.round.mutate import MutatorAgent, mutate
from sandbox.bwrap import BwrapLauncher
from tests.conftest import ROOT
from tests.sandbox.conftest import needs_bwrap

PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)


def run_mutator(tmp_path: Path, argv: list[str], extra_env: dict[str, str]):
    workspace = tmp_path / "data" / "workspaces" / "run-1" / "round-1-0"
    agent = MutatorAgent(argv=argv, agent="test", model="m", max_turns=5, price=PRICE, launcher=BwrapLauncher(),
                         silence_ms=60_000, heartbeat_ms=60_000, env=extra_env)
    return workspace, mutate(workspace=workspace, parent_dir=ROOT / "suites" / "csv-clean", briefing="# Briefing\n",
                             refs={}, agent=agent, round_no=1, sibling=0)


@needs_bwrap
def test_fake_mutator_round_trip_under_bwrap(tmp_path: Path) -> None:
    workspace, result = run_mutator(tmp_path, [sys.executable, str(ROOT / "fakes" / "fake_mutator.py")],
                                    {})
    assert result.ok, result.error
    assert "dates" in result.summary and result.cost_usd > 0  # result.json and stream.jsonl were written
    assert '"dates"' in (workspace / "skill" / "rules.json").read_text()


@needs_bwrap
def test_mutator_sees_only_its_workspace_and_writes_only_skill(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    shutil.copy(ROOT / "fakes" / "escape_agent.py", agent_dir)
    data = tmp_path / "data"
    (data / "workspaces" / "run-1" / "round-1-1").mkdir(parents=True)
    (data / "workspaces" / "run-1" / "round-1-1" / "briefing.md").write_text("a sibling's briefing\n")
    (data / "mutator.db").write_text("the store\n")
    workspace = data / "workspaces" / "run-1" / "round-1-0"
    plan = {"answer_key": str(data / "mutator.db"),
            "sibling_cell": str(data / "workspaces" / "run-1" / "round-1-1" / "briefing.md"),
            "test_suite": str(ROOT / "suites" / "clean-test" / "tasks.jsonl"),
            "write_outside": str(workspace / "briefing.md"),
            "readonly_dir": str(workspace)}
    report_path = workspace / "skill" / "escape-report.json"
    _, result = run_mutator(tmp_path, [sys.executable, str(agent_dir / "escape_agent.py")],
                            {"ESCAPE_PLAN": json.dumps(plan), "ESCAPE_REPORT": str(report_path)})
    report = json.loads(report_path.read_text())  # skill/ is writable
    assert {name for name, outcome in report.items() if outcome["ok"]} == set(), report
    assert (workspace / "briefing.md").read_text() == "# Briefing\n"
    assert not (workspace / "escaped.txt").exists()
    assert not result.ok and "wrote no result.json" in result.error  # it ran, but returned nothing
