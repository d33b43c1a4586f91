"""`run.py --real`: start-up checks before any spend, and a full 2-round demo against the local server."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from eval.cost import Usage, parse_pricing, usd
from mutator.store.db import connect_readonly
from tests.conftest import run_py
from tests.eval.agents.messages_server import demo_agent

ROOT = Path(__file__).resolve().parents[3]
DEMO = ("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test")
PRICES = parse_pricing({"claude-haiku-4-5": {"input": 1, "output": 5, "cacheWrite": 1.25, "cacheRead": 0.10},
                        "claude-opus-4-5": {"input": 5, "output": 25, "cacheWrite": 6.25, "cacheRead": 0.50}})


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "SM_", "SKILL_MUTATOR_", "CLAUDE_"))}
    return {**env, **extra}


@pytest.mark.parametrize(("flags", "env_extra", "says"), [
    ((), {}, "ANTHROPIC_API_KEY"),
    (("--model", "claude-mystery-9"), {"ANTHROPIC_API_KEY": "x"}, "'claude-mystery-9' has no price"),
    (("--mutator-model", "gpt-nope"), {"ANTHROPIC_API_KEY": "x"}, "'gpt-nope' has no price"),
    (("--agent", "claude-cli"), {"ANTHROPIC_API_KEY": "x", "SM_CLAUDE_BIN": "claude-not-here"},
     "npm install -g @anthropic-ai/claude-code"),
    (("--agent", "command"), {"ANTHROPIC_API_KEY": "x"}, "--agent command needs --agent-cmd"),
    (("--agent", "command", "--agent-cmd", "/no/such/agent --fast"), {"ANTHROPIC_API_KEY": "x"},
     "neither on PATH nor a file"),
], ids=["no-key", "build-price", "mutator-price", "no-claude", "no-cmd", "bad-cmd"])
def test_real_run_refuses_to_start_before_any_spend(tmp_path: Path, flags, env_extra, says) -> None:
    data = tmp_path / "data"
    done = run_py(*DEMO, "--real", *flags, "--data-dir", str(data), env=clean_env(**env_extra), timeout=120)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (data / "mutator.db").exists()  # stopped before the store, let alone a cell


def demo_subset(tmp_path: Path, name: str, tasks: int) -> Path:
    """A demo suite cut to its first `tasks` tasks: every agent process pays the SDK's import (~2 s of CPU)."""
    src, dst = ROOT / "suites" / name, tmp_path / "suites" / name
    shutil.copytree(src, dst)
    (dst / "tasks.jsonl").write_text("\n".join((src / "tasks.jsonl").read_text().splitlines()[:tasks]) + "\n")
    return dst


def test_two_round_real_demo_against_the_local_server(server, tmp_path: Path) -> None:
    server.responder = demo_agent
    data = tmp_path / "data"
    train, val = demo_subset(tmp_path, "clean-train", 2), demo_subset(tmp_path, "clean-val", 3)
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", SM_ANTHROPIC_BACKOFF_S="0.01")
    done = run_py("--suite", str(train), "--val", str(val), "--holdout", "clean-test", "--real", "--agent",
                  "anthropic", "--solve", "--rounds", "2", "--replicates", "1", "--concurrency", "4", "--data-dir", str(data),
                  env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["status"] == "finished" and run["rounds_done"] == 2
    assert run["agent"].startswith("anthropic@")
    attempts = [dict(r) for r in db.query("select * from attempts where round > 0 order by round")]
    assert [a["summary"] for a in attempts] == ["Add the dates rule", "Add the amounts rule"]
    assert [a["verdict"] for a in attempts] == ["KEEP", "KEEP"]
    assert all(a["mutator_cost_usd"] > 0 for a in attempts)
    for a in attempts:   # tokens are stored, not only the cost, and the cost is what they price to
        used = Usage(a["mutator_input_tokens"], a["mutator_output_tokens"], a["mutator_cache_write_tokens"],
                     a["mutator_cache_read_tokens"])
        assert used.input_tokens > 0 and a["mutator_retries"] == 0
        assert a["mutator_cost_usd"] == pytest.approx(usd(PRICES["claude-opus-4-5"], used), rel=1e-9)
    solve = json.loads(run["solve"])
    assert solve["usage"]["input_tokens"] > 0 and solve["usage"]["retries"] == 0
    # the mutator's edit reached the genome the build agents were evaluated on
    champion = data / "genomes" / run["incumbent_hash"]
    assert '"op": "amounts"' in next(champion.rglob("rules.json")).read_text()
    cells = [dict(r) for r in db.query("select c.*, e.model from cells c join evaluations e on e.id = c.evaluation_id")]
    assert cells and all(c["status"] == "ok" for c in cells)
    haiku = server.served_usage("claude-haiku-4-5", cells_only=True)   # the API check is no cell's
    stored = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    for c in cells:
        if c["model"] == "claude-haiku-4-5":
            stored["input_tokens"] += c["input_tokens"]
            stored["output_tokens"] += c["output_tokens"]
            stored["cache_creation_input_tokens"] += c["cache_write_tokens"]
            stored["cache_read_input_tokens"] += c["cache_read_tokens"]
    assert stored == haiku
    opus = server.served_usage("claude-opus-4-5")  # the solve phase, the mutator calls, the API check
    haiku = server.served_usage("claude-haiku-4-5")   # the cells' and the API check's: all charged to the run
    expected = usd(PRICES["claude-haiku-4-5"], Usage(**haiku)) + usd(PRICES["claude-opus-4-5"], Usage(**opus))
    assert run["cost_usd"] == pytest.approx(expected, rel=1e-9)


def test_bring_your_own_build_agent_with_our_mutator(server, tmp_path: Path) -> None:
    """--agent command: any program that follows the agent process contract (here the fake build agent)."""
    server.responder = demo_agent
    data = tmp_path / "data"
    train, val = demo_subset(tmp_path, "clean-train", 3), demo_subset(tmp_path, "clean-val", 3)
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test")
    cmd = f"{sys.executable} {ROOT / 'fakes' / 'fake_agent.py'}"
    done = run_py("--suite", str(train), "--val", str(val), "--real", "--agent", "command", "--agent-cmd", cmd,
                  "--rounds", "1", "--replicates", "1", "--data-dir", str(data), env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["agent"].startswith("command@") and run["status"] == "finished"
    assert run["solve"] is None   # a real run solves only when asked (--solve): it is paid at the mutator's price
    attempt = dict(next(iter(db.query("select * from attempts where round = 1"))))
    # The change was evaluated and gated. Which way the gate went depends on the cells' seeds, and those hash
    # the agent command, which holds this checkout's path: only its agreement with the stored figures is fixed.
    assert attempt["summary"] == "Add the dates rule" and attempt["verdict"] in ("KEEP", "REJECT")
    gate = json.loads(attempt["gate"])
    assert (attempt["verdict"] == "KEEP") == bool(gate["keep"])
    assert {r["model"] for r in server.requests} == {"claude-opus-4-5"}  # only the mutator asked the API
