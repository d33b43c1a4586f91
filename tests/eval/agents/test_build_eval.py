"""The anthropic build agent through the real evaluation path: cells staged, agent run, graded, stored."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from eval.agents import AnthropicBackend
from eval.cells import Contract
from eval.cost import Usage, parse_pricing, usd
from eval.jobs import CellSettings
from eval.suite import load_suite
from mutator.round.evaluations import Evaluator
from mutator.round.progress import Progress
from mutator.store.db import connect
from sandbox.none import NoneLauncher
from tests.eval.agents.messages_server import csv_agent, message, text

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "suites" / "csv-clean"
PRICE = parse_pricing({"claude-haiku-4-5": {"input": 1, "output": 5, "cacheWrite": 1.25, "cacheRead": 0.10}})[
    "claude-haiku-4-5"]


def small_suite(tmp_path: Path, tasks: int) -> Path:
    """The first `tasks` tasks of clean-train, graded by its own run-eval.py."""
    src, dst = ROOT / "suites" / "clean-train", tmp_path / "clean-train"
    shutil.copytree(src, dst)
    lines = (src / "tasks.jsonl").read_text().splitlines()[:tasks]
    (dst / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return dst


def evaluator(tmp_path: Path, *, heartbeat_ms: int = 60_000, replicates: int = 1) -> Evaluator:
    backend = AnthropicBackend()
    contract = Contract(model="claude-haiku-4-5", replicates=replicates, max_turns=10,
                        agent=backend.implementation("build"), silence_ms=60_000, heartbeat_ms=heartbeat_ms)
    return Evaluator(db=connect(tmp_path / "data" / "mutator.db"), data_dir=tmp_path / "data", contract=contract,
                     settings=CellSettings(agent_argv=backend.argv("build"), launcher=NoneLauncher(), grader_timeout_s=60),
                     price=PRICE, concurrency=3, progress=Progress(io.StringIO()))


@pytest.fixture
def api_env(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("SM_ANTHROPIC_BACKOFF_S", "0.01")
    for name in [k for k in os.environ if k.startswith("SM_") and k != "SM_ANTHROPIC_BACKOFF_S"]:
        monkeypatch.delenv(name)
    return server


def test_build_agent_completes_demo_tasks_and_usage_matches_the_script(api_env, tmp_path: Path) -> None:
    server = api_env
    server.responder = csv_agent
    suite = load_suite(small_suite(tmp_path, 4))
    ev = evaluator(tmp_path, replicates=2)
    outcome = ev.evaluate(SEED, "seedhash", "csv-clean", suite, label="seed on train")
    db = ev.db
    cells = [dict(r) for r in db.query("select * from cells order by task_id, replicate")]
    assert len(cells) == 8 and outcome.ran == 8
    assert all(c["status"] == "ok" and c["agent_subtype"] == "success" for c in cells), cells
    # read SKILL.md, read rules.json, read the input, write the output, answer: five turns
    assert {c["steps"] for c in cells} == {5}
    # the seed's rules (trim, headers) applied exactly: those tests pass, the rules it lacks cost points
    by_test: dict[str, set[float]] = {}
    for r in db.query("select name, score from tests"):
        by_test.setdefault(r["name"], set()).add(r["score"])
    assert by_test["parses"] == by_test["headers"] == by_test["text"] == {1.0}
    assert min(by_test["dates"]) < 1.0
    scores = {(c["task_id"], c["replicate"]): c["score"] for c in cells}
    assert all(scores[(t, 0)] == scores[(t, 1)] > 0.4 for t, _ in scores)  # a deterministic model
    served = server.served_usage()
    stored = {k: sum(c[col] for c in cells) for k, col in (
        ("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
        ("cache_creation_input_tokens", "cache_write_tokens"), ("cache_read_input_tokens", "cache_read_tokens"))}
    assert stored == served and served["input_tokens"] > 0 and served["cache_read_input_tokens"] > 0
    assert sum(c["cost_usd"] for c in cells) == pytest.approx(usd(PRICE, Usage(**served)), rel=1e-12)
    assert outcome.ran_cost == pytest.approx(usd(PRICE, Usage(**served)), rel=1e-12)
    # every cell read the skill on demand from its own copy, never from the suite or the seed folder
    paths = {call["input"].get("path") for body in server.requests for call in
             (b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
              if b.get("type") == "tool_use")}
    assert ".claude/skills/csv-clean/SKILL.md" in paths and ".claude/skills/csv-clean/rules.json" in paths


def test_watchdog_kills_a_silent_agent_and_the_evaluation_goes_on(api_env, tmp_path: Path, monkeypatch) -> None:
    from eval.agents import key_proxy
    # the cut call never answers: the metering proxy's grace for its usage (10 s) would only lengthen the test
    monkeypatch.setattr(key_proxy, "METER_GRACE_S", 1.0)
    server = api_env
    suite = load_suite(small_suite(tmp_path, 2))
    silent_task = suite.tasks[0].prompt

    def model(body: dict):
        first = body["messages"][0]["content"]
        if first == silent_task:
            return _hang()
        return csv_agent(body)

    def _hang():
        reply = message(text("too late"))
        reply.hang_s = 60
        return reply
    server.responder = model
    ev = evaluator(tmp_path, heartbeat_ms=10_000)  # generous: a loaded machine must not starve the other cell
    ev.evaluate(SEED, "seedhash", "csv-clean", suite, label="watchdog")
    cells = {r["task_id"]: dict(r) for r in ev.db.query("select * from cells")}
    silent, other = cells[suite.tasks[0].id], cells[suite.tasks[1].id]
    assert silent["status"] == "timeout" and "watchdog" in silent["error"] and silent["score"] == 0
    assert other["status"] == "ok" and other["score"] > 0.5
