"""The SDK agent as the harness runs it: the loop on the harness's warm client through the real SDK and the
metering proxy, the tools in a sandboxed tool server that never imports the SDK (eval/agents/warm.py)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest

from eval import agents
from eval.agent_call import AgentCall, call
from eval.agents import AnthropicBackend
from eval.agents.meter import read_meter
from eval.cost import Price
from eval.runner import classify
from tests.eval.agents.messages_server import Reply, error, message, text, tool_use, usage
from tests.eval.agents.sandboxed import launcher_or_skip

PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)
SCRIPT = Path(agents.__file__).resolve().parent / "anthropic_agent.py"
# the tool server's own environment and what it imported: neither may hold the model API
PROBE = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c ^ANTHROPIC_ || true"


def turns(command: str = PROBE):
    return (message(text("Writing it."), tool_use("write", {"path": "out/answer.txt", "content": "42\n"}),
                    stop="tool_use", use=usage(120, 30, 10, 0)),
            message(tool_use("bash", {"command": command}), stop="tool_use", use=usage(150, 12, 0, 40)),
            message(text("All done."), use=usage(180, 8, 0, 40)))


def agent_call(argv, tmp_path: Path, server, *, name: str, launcher="none", **more) -> AgentCall:
    home = tmp_path / name
    work = home / "work"
    work.mkdir(parents=True)
    return AgentCall(argv=argv, agent="anthropic@test", model="claude-haiku-4-5", max_turns=10, price=PRICE,
                     prompt="Do the task.", cwd=work, home=home, launcher=launcher_or_skip(launcher),
                     silence_ms=120_000, heartbeat_ms=120_000, writable=(home,), network=True,
                     env={"PYTHONPROFILEIMPORTTIME": "1", "SM_ANTHROPIC_BACKOFF_S": "0.01"},
                     meter=home / "meter.jsonl", **more)


@pytest.fixture
def api(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-warm-test-0000")
    return server


def imported(stderr: Path) -> set[str]:
    """Every module the agent process imported (-X importtime lines in its stderr)."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.read_text().splitlines()
            if line.startswith("import time:") and "|" in line}


def comparable(events: list[dict], cwd: Path) -> list[dict]:
    """The events without what differs between any two runs (session, wall time, message and tool ids, the dir)."""
    events = [{k: v for k, v in event.items() if k not in ("session_id", "duration_ms")} for event in events]
    return json.loads(re.sub(r"(msg|toolu)_\w+", r"\1_ID", json.dumps(events).replace(str(cwd), "CWD")))


@pytest.mark.parametrize("launcher", ["none", "bwrap"])
def test_the_sandboxed_process_never_imports_the_sdk_nor_holds_the_api(api, tmp_path: Path, launcher: str) -> None:
    api.script(*turns())
    spec = agent_call(list(AnthropicBackend().argv("build")), tmp_path, api, name="cell", launcher=launcher)
    done = asyncio.run(call(spec))
    assert done.run.returncode == 0 and done.metrics.has_result and not done.metrics.is_error, done.run.stderr_tail()
    modules = imported(spec.home / "agent.stderr")
    assert "json" in modules and "tools" in {m.rsplit(".", 1)[-1] for m in modules}   # the probe saw its imports
    assert not {m for m in modules if m.split(".")[0] in ("anthropic", "pydantic", "httpx", "httpx2")}
    events = [json.loads(line) for line in spec.stream.read_text().splitlines()]
    assert events[4]["message"]["content"][0]["content"] == "exit code 0\nstdout:\n0\n\n"   # no ANTHROPIC_* at all
    assert (spec.cwd / "out" / "answer.txt").read_text() == "42\n"
    assert api.auth_keys == ["sk-ant-warm-test-0000"] * 3      # the proxy's real key; the agent had only a nonce
    assert read_meter(spec.meter).total() == usage(450, 50, 10, 80)


def test_the_warm_loop_leaves_the_stream_the_whole_agent_process_leaves(api, tmp_path: Path) -> None:
    """The same scripted model through the harness's loop and through the standalone script: the same events."""
    streams = []
    for name, argv in (("warm", list(AnthropicBackend().argv("build"))),
                       ("script", [sys.executable, str(SCRIPT), "--role", "build"])):
        api.script(*turns("ls; cat out/answer.txt"))
        spec = agent_call(argv, tmp_path, api, name=name)
        done = asyncio.run(call(spec))
        assert done.run.returncode == 0, done.run.stderr_tail()
        streams.append(comparable([json.loads(line) for line in spec.stream.read_text().splitlines()], spec.cwd))
        if name == "script":   # the whole agent in one process imports the SDK: the probe above can tell
            assert "anthropic" in imported(spec.home / "agent.stderr")
    warm, script = streams
    assert [e["type"] for e in warm] == ["system", "assistant", "user", "assistant", "user", "assistant", "result"]
    assert warm == script and warm[0]["cwd"] == "CWD"
    assert warm[4]["message"]["content"][0]["content"] == "exit code 0\nstdout:\nout\n42\n\n"


def test_an_api_outage_ends_with_an_error_result_and_exit_1(api, tmp_path: Path) -> None:
    api.script(*[error(529, "overloaded_error")] * 20)
    spec = agent_call(list(AnthropicBackend().argv("build")), tmp_path, api, name="cell")
    done = asyncio.run(call(spec))
    assert done.run.returncode == 1 and done.metrics.is_error
    assert "OverloadedError" in done.run.stderr_tail()     # the log went to the cell's agent.stderr, so:
    assert classify(done.run, done.metrics)[0] == "infra_error"
    result = json.loads(spec.stream.read_text().splitlines()[-1])
    assert result["type"] == "result" and result["subtype"] == "error_during_execution" and result["retries"] > 0


def test_a_deadline_cuts_the_warm_loop_and_kills_the_tool_server(api, tmp_path: Path) -> None:
    # the model answers 2.5 s after the cut: within the proxy's grace, so what it served is on the meter
    api.script(Reply(content=[text("late")], usage=usage(700, 9), hang_s=4))
    spec = agent_call(list(AnthropicBackend().argv("build")), tmp_path, api, name="cell", wall_ms=1500)
    done = asyncio.run(call(spec))
    assert done.run.timed_out and "wall-clock cap" in done.run.reason
    events = [json.loads(line) for line in spec.stream.read_text().splitlines()] if spec.stream.exists() else []
    assert "result" not in [e["type"] for e in events]          # cut mid-request: no result, as a killed agent
    assert done.metrics.usage.input_tokens == 700 == api.served_usage()["input_tokens"]


def test_the_implementation_id_covers_the_code_the_warm_path_runs(monkeypatch) -> None:
    read: list[str] = []
    real = agents._sources
    monkeypatch.setattr(agents, "_sources", lambda *names: read.extend(names) or real(*names))
    AnthropicBackend().implementation("build")
    assert {"loop.py", "warm.py", "toolserver.py", "tools.py", "stream.py", "caching.py"} <= set(read)
