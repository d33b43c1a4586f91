"""The anthropic tool-use agent as a real child process against the scripted local Messages API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval.stream_metrics import read_stream
from tests.eval.agents.messages_server import error, message, system_text, text, tool_use, usage

ROOT = Path(__file__).resolve().parents[3]
AGENT = ROOT / "eval" / "agents" / "anthropic_agent.py"


def run_agent(server, cwd: Path, prompt: str = "Do the task.", *, role: str = "build", max_turns: int = 10,
              stream_api: bool = True, extra_env: dict | None = None) -> tuple[subprocess.CompletedProcess, list]:
    cwd.mkdir(parents=True, exist_ok=True)
    stream = cwd.parent / f"{cwd.name}.stream.jsonl"
    prompt_file = cwd.parent / f"{cwd.name}.prompt.md"
    prompt_file.write_text(prompt)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SM_"))}
    env.update({"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test", "SM_STREAM": str(stream),
                "SM_PROMPT_FILE": str(prompt_file), "SM_MODEL": "claude-haiku-4-5",
                "SM_MAX_TURNS": str(max_turns), "SM_ANTHROPIC_STREAM": "1" if stream_api else "0",
                "SM_ANTHROPIC_BACKOFF_S": "0.01", **(extra_env or {})})
    proc = subprocess.run([sys.executable, str(AGENT), "--role", role], cwd=cwd, env=env, input=prompt,
                          capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in stream.read_text().splitlines()] if stream.exists() else []
    return proc, events


def result_of(events: list) -> dict:
    assert events[-1]["type"] == "result", events[-1]
    return events[-1]


@pytest.mark.parametrize("stream_api", [True, False], ids=["sse", "json"])
def test_tool_turns_then_end_turn(server, tmp_path: Path, stream_api: bool) -> None:
    server.script(
        message(text("Writing it."), tool_use("write", {"path": "out/answer.txt", "content": "42\n"}),
                stop="tool_use", use=usage(120, 30, 10, 0)),
        message(tool_use("read", {"path": "out/answer.txt"}), stop="tool_use", use=usage(150, 12, 0, 40)),
        message(text("All done."), use=usage(180, 8, 0, 40)))
    proc, events = run_agent(server, tmp_path / "work", stream_api=stream_api)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "work" / "out" / "answer.txt").read_text() == "42\n"
    assert [e["type"] for e in events] == ["system", "assistant", "user", "assistant", "user", "assistant", "result"]
    assert events[0]["subtype"] == "init" and events[0]["tools"] == ["bash", "read", "write", "edit", "list"]
    assert events[4]["message"]["content"][0]["content"] == "42\n"  # the read tool's result went back
    result = result_of(events)
    assert result["subtype"] == "success" and not result["is_error"] and result["num_turns"] == 3
    assert result["usage"] == usage(450, 50, 10, 80) == server.served_usage()
    assert result["result"] == "All done."
    assert all(r.get("stream", False) == stream_api for r in server.requests)
    metrics = read_stream(tmp_path / "work.stream.jsonl")
    assert metrics.has_result and metrics.steps == 3 and metrics.tool_uses == 2
    assert metrics.usage.input_tokens == 450 and metrics.usage.cache_read_input_tokens == 80


def test_rate_limit_then_success(server, tmp_path: Path) -> None:
    server.script(error(429, "rate_limit_error", {"retry-after-ms": "5"}), message(text("ok")))
    proc, events = run_agent(server, tmp_path / "work")
    assert proc.returncode == 0 and result_of(events)["subtype"] == "success"
    assert len(server.requests) == 2  # the SDK retried once on its own


def test_overloaded_outlasts_sdk_retries_then_our_backoff_succeeds(server, tmp_path: Path) -> None:
    server.script(*[error(529, "overloaded_error", {"retry-after-ms": "5"})] * 3, message(text("ok")))
    proc, events = run_agent(server, tmp_path / "work")
    assert proc.returncode == 0, proc.stderr
    assert result_of(events)["subtype"] == "success"
    assert len(server.requests) == 4  # 1 + 2 SDK retries, then one round of our own
    assert "OverloadedError" in proc.stderr and "retry 1 of 3" in proc.stderr


def test_overloaded_forever_ends_as_error_result(server, tmp_path: Path) -> None:
    server.script(*[error(529, "overloaded_error", {"retry-after-ms": "5"})] * 6)
    proc, events = run_agent(server, tmp_path / "work", extra_env={"SM_ANTHROPIC_RETRIES": "1"})
    assert proc.returncode == 1
    result = result_of(events)
    assert result["is_error"] and result["subtype"] == "error_during_execution"
    assert "529" in result["result"] and "Overloaded" in result["result"]
    assert len(server.requests) == 6


def test_auth_error_is_not_retried(server, tmp_path: Path) -> None:
    server.script(error(401, "authentication_error"))
    proc, events = run_agent(server, tmp_path / "work")
    assert proc.returncode == 1 and "401" in result_of(events)["result"]
    assert len(server.requests) == 1


def test_unparseable_response_ends_as_error_result(server, tmp_path: Path) -> None:
    server.script(server_garbage := message())
    server_garbage.raw_body = "this is not json"
    proc, events = run_agent(server, tmp_path / "work", stream_api=False)
    assert proc.returncode == 1 and result_of(events)["is_error"]


def test_max_tokens_mid_answer_continues(server, tmp_path: Path) -> None:
    server.script(message(text("Here is the ans"), stop="max_tokens"), message(text("wer: 42.")))
    proc, events = run_agent(server, tmp_path / "work")
    assert proc.returncode == 0
    result = result_of(events)
    assert result["subtype"] == "success" and result["num_turns"] == 2
    second = server.requests[1]["messages"]
    assert second[1] == {"role": "assistant", "content": [{"type": "text", "text": "Here is the ans"}]}
    assert "cut off at the output token limit" in second[2]["content"][-1]["text"]


def test_max_tokens_inside_a_tool_call_does_not_run_it(server, tmp_path: Path) -> None:
    server.script(message(tool_use("write", {"path": "half.txt", "content": "trunc"}), stop="max_tokens"),
                  message(text("Sorry, stopping.")))
    proc, events = run_agent(server, tmp_path / "work")
    assert proc.returncode == 0 and not (tmp_path / "work" / "half.txt").exists()
    cut = server.requests[1]["messages"][2]["content"][0]
    assert cut["type"] == "tool_result" and cut["is_error"] and "cut off" in cut["content"]


def test_malformed_tool_calls_are_error_results_and_the_loop_goes_on(server, tmp_path: Path) -> None:
    server.script(
        message(tool_use("write", {"path": "x.txt"}), tool_use("teleport", {}), tool_use("read", {"path": 5}),
                tool_use("read", "not an object"), tool_use("edit", {"path": "x.txt", "old": "a"}),
                tool_use("read", {"path": "../outside.txt"}), tool_use("write", {"path": "/etc/evil", "content": ""}),
                stop="tool_use"),
        message(text("I give up.")))
    (tmp_path / "outside.txt").write_text("secret")
    # plain JSON: over SSE the SDK itself rejects a tool input that is not an object
    proc, events = run_agent(server, tmp_path / "work", stream_api=False)
    assert proc.returncode == 0 and result_of(events)["subtype"] == "success"
    results = server.requests[1]["messages"][2]["content"]
    assert len(results) == 7 and all(r["is_error"] for r in results)
    said = [r["content"] for r in results]
    assert "missing required field 'content'" in said[0]
    assert "unknown tool 'teleport'" in said[1]
    assert "'path' must be a string" in said[2]
    assert "must be a JSON object" in said[3]
    assert "missing required field 'old_string'" in said[4]
    assert "outside the working directory" in said[5] and "secret" not in said[5]
    assert "outside the working directory" in said[6] and not Path("/etc/evil").exists()


def test_model_that_never_stops_hits_max_turns(server, tmp_path: Path) -> None:
    server.responder = lambda body: message(tool_use("list", {}), stop="tool_use")
    proc, events = run_agent(server, tmp_path / "work", max_turns=3)
    assert proc.returncode == 0
    result = result_of(events)
    assert result["subtype"] == "error_max_turns" and result["is_error"] and result["num_turns"] == 3
    assert len(server.requests) == 3


def test_refusal_ends_as_error_result(server, tmp_path: Path) -> None:
    server.script(message(text("I can't help with that."), stop="refusal"))
    proc, events = run_agent(server, tmp_path / "work")
    assert proc.returncode == 0
    result = result_of(events)
    assert result["is_error"] and "refused" in result["result"]


def test_bash_runs_in_cwd_and_is_killed_on_timeout(server, tmp_path: Path) -> None:
    server.script(message(tool_use("bash", {"command": "pwd; echo hi > made.txt; echo oops >&2; exit 3"}),
                          tool_use("bash", {"command": "sleep 30; echo late", "timeout": 1}), stop="tool_use"),
                  message(text("done")))
    proc, events = run_agent(server, tmp_path / "work")
    assert proc.returncode == 0
    first, second = server.requests[1]["messages"][2]["content"]
    assert first["content"].startswith("exit code 3") and str(tmp_path / "work") in first["content"]
    assert "oops" in first["content"] and (tmp_path / "work" / "made.txt").read_text() == "hi\n"
    assert second["is_error"] and "killed after 1 s" in second["content"]


def test_skill_is_offered_by_name_and_description(server, tmp_path: Path) -> None:
    work = tmp_path / "work"
    skill = work / ".claude" / "skills" / "csv-clean"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text((ROOT / "suites" / "csv-clean" / "SKILL.md").read_text())
    server.script(message(text("ok")))
    _, events = run_agent(server, work, extra_env={"SM_SKILL_DIR": str(skill)})
    system = system_text(server.requests[0])
    assert "<name>\ncsv-clean\n</name>" in system and "Normalise a messy CSV" in system
    assert "<location>\n.claude/skills/csv-clean/SKILL.md\n</location>" in system
    assert "rules.json" not in system  # the body is read on demand, not preloaded
    assert events[0]["skills"] == ["csv-clean"]


def test_mutator_may_write_only_inside_skill(server, tmp_path: Path) -> None:
    work = tmp_path / "ws"
    (work / "skill").mkdir(parents=True)
    (work / "skill" / "SKILL.md").write_text("old\n")
    (work / "briefing.md").write_text("brief\n")
    server.script(
        message(tool_use("write", {"path": "evil.txt", "content": "x"}),
                tool_use("edit", {"path": "briefing.md", "old_string": "brief", "new_string": "hacked"}),
                tool_use("write", {"path": "skill/../evil2.txt", "content": "x"}),
                tool_use("write", {"path": "skill", "content": "x"}),
                tool_use("edit", {"path": "skill/SKILL.md", "old_string": "old", "new_string": "new"}),
                stop="tool_use"),
        message(tool_use("write", {"path": "result.json",
                                   "content": json.dumps({"summary": "s", "reasoning": "r"})}), stop="tool_use"),
        message(text("done")))
    proc, events = run_agent(server, work, role="mutator")
    assert proc.returncode == 0 and result_of(events)["subtype"] == "success"
    assert [t["name"] for t in server.requests[0]["tools"]] == ["read", "write", "edit", "list"]  # no shell
    results = server.requests[1]["messages"][2]["content"]
    assert [r.get("is_error", False) for r in results] == [True, True, True, True, False]
    assert all("may write only inside skill/" in r["content"] for r in results[:4])
    assert not (work / "evil.txt").exists() and not (tmp_path / "evil2.txt").exists()
    assert (work / "briefing.md").read_text() == "brief\n" and (work / "skill" / "SKILL.md").read_text() == "new\n"
    assert json.loads((work / "result.json").read_text()) == {"summary": "s", "reasoning": "r"}


@pytest.mark.parametrize(("answer", "expected"), [
    ('Changed it.\n```json\n{"summary": "Add dates", "reasoning": "dates fail"}\n```',
     {"summary": "Add dates", "reasoning": "dates fail"}),
    ("I changed a few things, hope it helps", None),
])
@pytest.mark.parametrize("pretouched", [False, True], ids=["absent", "empty"])
def test_mutator_final_json_answer_becomes_result_json(server, tmp_path: Path, answer: str, expected,
                                                       pretouched: bool) -> None:
    from mutator.round.mutate import read_result
    (tmp_path / "ws" / "skill").mkdir(parents=True)
    if pretouched:  # the harness pre-creates result.json so a sandbox can bind that one file writable
        (tmp_path / "ws" / "result.json").touch()
    server.script(message(text(answer)))
    proc, _ = run_agent(server, tmp_path / "ws", role="mutator")
    assert proc.returncode == 0
    written = (tmp_path / "ws" / "result.json").read_text()
    if expected is None:
        assert written == answer  # the raw text is kept for the record
        with pytest.raises(ValueError, match="not JSON"):
            read_result(tmp_path / "ws" / "result.json")
    else:
        assert json.loads(written) == expected
