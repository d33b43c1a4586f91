"""Graders fixtures: a suite builder for any runner and an agent that writes a given output per task."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.cost import Price
from eval.evaluate import EvalRequest
from eval.jobs import CellSettings
from eval.suite import load_suite
from sandbox.none import NoneLauncher

PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)

# Writes the text found in fixture `answer.txt` (staged as an input) to the task's output file.
AGENT_ECHO = """import json, os, pathlib, sys
prompt = sys.stdin.read()
out = prompt.split("write ")[-1].strip()
pathlib.Path(out).write_text(pathlib.Path("answer.txt").read_text())
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "name": "Write", "input": {"file_path": out}}],
        "usage": {"input_tokens": 500, "output_tokens": 50}}}) + "\\n")
    f.write(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "Wrote " + out}],
        "usage": {"input_tokens": 10, "output_tokens": 5}}}) + "\\n")
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
                        "result": "Wrote " + out, "usage": {"input_tokens": 510, "output_tokens": 55}}) + "\\n")
"""


def write_suite(root: Path, tasks: list[dict], answers: dict[str, str], *, name: str = "exp",
                runner: str = "expectations", extra_meta: str = "") -> Path:
    """tasks: dicts without 'inputs'; answers: task id -> the text the echo agent writes."""
    suite = root / name
    (suite / "fixtures").mkdir(parents=True)
    (suite / "suite.md").write_text(f"---\nname: {name}\nsplit: val\nrunner: {runner}\n{extra_meta}---\nTest.\n")
    lines = []
    for task in tasks:
        (suite / "fixtures" / task["id"]).mkdir()
        (suite / "fixtures" / task["id"] / "answer.txt").write_text(answers.get(task["id"], ""))
        lines.append(json.dumps({"inputs": ["answer.txt"], **task}))
    (suite / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return suite


def request(suite_dir: Path, tmp_path: Path, agent: list[str], *, grader_timeout_s: float = 30,
            agent_id: str = "test", env: dict | None = None, replicates: int = 1) -> EvalRequest:
    suite = load_suite(suite_dir)
    contract = Contract(model="claude-haiku-4-5", replicates=replicates, max_turns=5, agent=agent_id,
                        silence_ms=60_000, heartbeat_ms=60_000)
    return EvalRequest(skill_dir=None, skill_name="csv-clean", suite=suite, contract=contract, key="k",
                       cells_root=tmp_path / "evals" / "k", price=PRICE, concurrency=2,
                       settings=CellSettings(agent_argv=agent, launcher=NoneLauncher(), grader_timeout_s=grader_timeout_s,
                                             env=env or {}, prune=False))


@pytest.fixture
def echo_agent(tmp_path: Path) -> list[str]:
    script = tmp_path / "agent_echo.py"
    script.write_text(AGENT_ECHO)
    return [sys.executable, str(script)]
