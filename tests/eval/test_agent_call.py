"""The one agent call (eval/agent_call.py), as a contract over every agent backend: the fakes, the anthropic SDK
loop against the local Messages-API server, the real claude CLI where installed, and a command of your own.

Each runs a build call and a mutator-role call through `call()`: prompt.md and stream.jsonl land in the call's
home, the stream is read once, the call is charged by the one rule (`cost_of`: priced from config.json for our
backends and the fakes, a command's own reported total), and a mutator-role call's result.json is read back.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from eval import agent_call
from eval.agent_call import AgentCall, call, contract_env, cost_of, read_result_json, stage_workspace
from eval.agents import AnthropicBackend, ClaudeCliBackend, CommandBackend
from eval.cost import Price, usd
from eval.stream_metrics import read_stream
from sandbox.none import NoneLauncher
from tests.conftest import ROOT
from tests.eval.agents.messages_server import MessagesServer, message, text, usage

PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)
MODEL = "claude-haiku-4-5"
ANSWER = {"summary": "Tighten the dates rule", "reasoning": "two tasks lose points on dates"}
REPORTED = 0.0123   # what the command agent says it cost

COMMAND = r'''import json, os, pathlib, sys
role = sys.argv[1]
seen = {k: v for k, v in os.environ.items() if k.startswith("SM_")}
pathlib.Path(os.environ["SM_STREAM"]).parent.joinpath("seen-env.json").write_text(json.dumps(seen))
if role == "mutator":
    pathlib.Path("result.json").write_text(json.dumps(%(answer)s))
use = {"input_tokens": 1000, "output_tokens": 100}
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}],
                                                         "usage": use}}) + "\n")
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "usage": use,
                        "total_cost_usd": %(reported)r}) + "\n")
'''


def answer_model(body: dict):
    """A model for both roles and both SDK shapes: a side call (no tools) gets "ok"; otherwise one answer, the
    mutator's closing JSON when it is asked to improve a skill."""
    if not body.get("tools"):
        return message(text("ok"), use=usage(1, 1))
    said = json.dumps(body.get("system", "")) + json.dumps(body.get("messages", []))
    if "improving an agent skill" in said:
        return message(text("Done. " + json.dumps(ANSWER)), use=usage(300, 40))
    return message(text("done"), use=usage(200, 20))


@pytest.fixture
def server(monkeypatch):
    srv = MessagesServer()
    srv.responder = answer_model
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-contract-test-0000")
    yield srv
    srv.close()


def backend_argv(name: str, role: str, tmp_path: Path) -> tuple[list[str], str]:
    """(argv, implementation id) of backend `name` in `role`, as the harness would run it."""
    if name == "fake":
        script = "fake_agent.py" if role == "build" else "fake_mutator.py"
        return [sys.executable, str(ROOT / "fakes" / script)], "fake@contract"
    if name == "anthropic":
        backend = AnthropicBackend()
    elif name == "claude-cli":
        if shutil.which("claude") is None:
            pytest.skip("the claude CLI is not installed (npm install -g @anthropic-ai/claude-code)")
        backend = ClaudeCliBackend()
    else:
        script = tmp_path / "own_agent.py"
        script.write_text(COMMAND % {"answer": repr(ANSWER), "reported": REPORTED})
        backend = CommandBackend(f"{sys.executable} {script} {role}")
    return list(backend.argv(role)), backend.implementation(role) if name != "claude-cli" else "claude-cli@contract"


def base_call(argv: list[str], agent: str, cwd: Path, home: Path, prompt: str, **more) -> AgentCall:
    return AgentCall(argv=argv, agent=agent, model=MODEL, max_turns=5, price=PRICE, prompt=prompt, cwd=cwd, home=home,
                     launcher=NoneLauncher(), silence_ms=120_000, heartbeat_ms=120_000, network=True, **more)


BACKENDS = ["fake", "anthropic", "claude-cli", "command"]


@pytest.mark.parametrize("name", BACKENDS)
def test_a_build_call_runs_reads_and_prices_every_backend_alike(name: str, tmp_path: Path, server) -> None:
    argv, agent = backend_argv(name, "build", tmp_path)
    home, work = tmp_path / "cell", tmp_path / "cell" / "work"
    skill = work / ".claude" / "skills" / "csv-clean"
    shutil.copytree(ROOT / "suites" / "csv-clean", skill)
    spec = base_call(argv, agent, work, home, "Say done when you are done.", skill_dir=skill, writable=(home,),
                     seed=7)
    done = asyncio.run(call(spec))
    assert done.run.failure(done.metrics.has_result) == "", done.run.stderr_tail()
    assert (home / "prompt.md").read_text() == "Say done when you are done."
    assert done.metrics == read_stream(home / "stream.jsonl")           # the stream is the call's, read once
    assert done.metrics.has_result and not done.metrics.is_error and done.metrics.usage.output_tokens > 0
    priced = usd(PRICE, done.metrics.usage)
    assert done.cost.priced_usd == pytest.approx(priced) and priced > 0
    if name == "command":   # your own command knows its real prices: its reported total is charged
        assert (done.cost.reported_usd, done.cost.usd) == (REPORTED, REPORTED)
        seen = json.loads((home / "seen-env.json").read_text())
        assert seen == {"SM_PROMPT_FILE": str(home / "prompt.md"), "SM_STREAM": str(home / "stream.jsonl"),
                        "SM_SKILL_DIR": str(skill), "SM_MODEL": MODEL, "SM_MAX_TURNS": "5", "SM_CELL_SEED": "7"}
    else:                   # ours and the fakes: always config.json's prices, one table for all of them
        assert done.cost.usd == pytest.approx(priced)
    if name in ("anthropic", "claude-cli"):   # what the stream says is what the API served
        served = server.served_usage(MODEL)
        assert (done.metrics.usage.input_tokens, done.metrics.usage.output_tokens) == \
            (served["input_tokens"], served["output_tokens"])


@pytest.mark.parametrize("name", BACKENDS)
def test_a_mutator_role_call_leaves_its_result_json_for_every_backend(name: str, tmp_path: Path, server) -> None:
    argv, agent = backend_argv(name, "mutator", tmp_path)
    workspace = tmp_path / "workspace"
    skill = stage_workspace(workspace, ROOT / "suites" / "csv-clean", "# Briefing\n\nAdd one rule.\n", {})
    prompt = "You are improving an agent skill. Edit ./skill/ and write ./result.json."
    spec = base_call(argv, agent, workspace, workspace, prompt, skill_dir=skill, writable=(skill,),
                     readable=(workspace,), result_json=True, round_no=1, sibling=0)
    done = asyncio.run(call(spec))
    assert done.run.failure(has_result=True) == "", done.run.stderr_tail()
    found = read_result_json(spec.result_path)
    assert isinstance(found.get("summary"), str) and found["summary"].strip()
    assert isinstance(found.get("reasoning"), str)
    if name != "fake":   # the fake mutator picks its own change; the others were told what to say
        assert found == ANSWER
    assert done.cost == cost_of(read_stream(spec.stream), PRICE, agent=agent)


def test_the_contract_env_names_exactly_what_the_agent_is_given(tmp_path: Path) -> None:
    spec = base_call(["agent"], "command@x", tmp_path / "w", tmp_path, "p", env={"FAKE_HOOK": "1",
                                                                                   "SM_MODEL": "not this"})
    harness = {"PATH": "/bin", "SM_SKILL_DIR": "/inherited/skill", "SECRET_TOKEN": "t" * 12}
    env = contract_env(spec, source=harness)
    named = {k: v for k, v in env.items() if k.startswith("SM_")}
    # a bare call has no skill (one inherited from the harness is dropped), and a test's hook cannot rename
    # the contract's own names
    assert named == {"SM_PROMPT_FILE": str(tmp_path / "prompt.md"), "SM_STREAM": str(tmp_path / "stream.jsonl"),
                     "SM_MODEL": MODEL, "SM_MAX_TURNS": "5"}
    assert env["FAKE_HOOK"] == "1" and env["HOME"] == str(tmp_path) and "SECRET_TOKEN" not in env
    meta = contract_env(replace(spec, skill_dir=tmp_path / "skill", round_no=3, sibling=0, task="meta"), source={})
    assert {k: meta[k] for k in (agent_call.SKILL_DIR, agent_call.ROUND, agent_call.SIBLING, agent_call.TASK)} == \
        {"SM_SKILL_DIR": str(tmp_path / "skill"), "SM_ROUND": "3", "SM_SIBLING": "0", "SM_TASK": "meta"}


@pytest.mark.parametrize(("agent", "reported", "invalid", "charged"), [
    ("command@abc", 0.5, "", 0.5),          # your command's own total
    ("command@abc", 0.0, "", 0.0011),       # ... unless it reports none: priced
    ("command@abc", 0.5, "bad usage", 0.0011),   # a stream that breaks the contract reports nothing
    ("anthropic@abc", 0.5, "", 0.0011),     # our backends: always priced
    ("fake@abc", 0.5, "", 0.0011),
])
def test_one_charging_rule(agent: str, reported: float, invalid: str, charged: float) -> None:
    metrics = read_stream(Path("/nonexistent"))
    metrics = replace(metrics, usage=replace(metrics.usage, input_tokens=100, output_tokens=200),
                      reported_cost_usd=reported, invalid=invalid)
    cost = cost_of(metrics, PRICE, agent=agent)
    assert cost.usd == pytest.approx(charged) and cost.priced_usd == pytest.approx(0.0011)
    assert cost_of(None, PRICE, agent=agent).usd == 0.0   # a harness fault before any stream


@pytest.mark.parametrize(("written", "says"), [
    (None, "the mutator wrote no result.json"),
    ("", "the mutator wrote no result.json"),
    ("Sure! {summary: oops", "result.json is not JSON"),
    ("[1, 2]", "result.json must be a JSON object"),
])
def test_result_json_says_what_is_wrong(tmp_path: Path, written: str | None, says: str) -> None:
    path = tmp_path / "result.json"
    if written is not None:
        path.write_text(written)
    with pytest.raises(ValueError, match=says):
        read_result_json(path)
