"""The claude-cli adapter: with a recorded stream-json transcript, when `claude` is missing, and (when
it is installed) the real Claude Code CLI against the local Messages-API server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eval.stream_metrics import read_stream
from tests.eval.agents.messages_server import message, text, tool_history, tool_use, usage
from tests.eval.agents.sandboxed import ENV_ONLY, EVERY_ENVIRON, launcher_or_skip, leaks, run_backend

ROOT = Path(__file__).resolve().parents[3]
ADAPTER = ROOT / "eval" / "agents" / "claude_cli.py"
TRANSCRIPT = Path(__file__).with_name("claude_transcript.jsonl")

FAKE_CLAUDE = """#!{python}
import json, os, pathlib, sys
pathlib.Path(os.environ["ARGS_OUT"]).write_text(json.dumps({{"argv": sys.argv[1:], "stdin": sys.stdin.read(),
    "config": os.environ.get("CLAUDE_CONFIG_DIR"), "cwd": os.getcwd(),
    "scrub": os.environ.get("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"), "key": os.environ.get("ANTHROPIC_API_KEY"),
    "base": os.environ.get("ANTHROPIC_BASE_URL")}}))
sys.stdout.write(pathlib.Path(os.environ["TRANSCRIPT"]).read_text())
"""


def adapter_env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SM_", "CLAUDE_"))}
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Clean input.csv into output.csv")
    return {**env, "SM_STREAM": str(tmp_path / "stream.jsonl"), "SM_PROMPT_FILE": str(prompt),
            "SM_MODEL": "claude-haiku-4-5", "SM_MAX_TURNS": "7", **extra}


def test_recorded_transcript_is_copied_and_read_like_every_backend(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(FAKE_CLAUDE.format(python=sys.executable))
    fake.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = adapter_env(tmp_path, PATH=f"{fake.parent}:{os.environ['PATH']}", ARGS_OUT=str(tmp_path / "args.json"),
                      TRANSCRIPT=str(TRANSCRIPT), ANTHROPIC_API_KEY="sk-ant-REAL-0000",
                      ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    proc = subprocess.run([sys.executable, str(ADAPTER), "--role", "build"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads((tmp_path / "args.json").read_text())
    argv = seen["argv"]
    assert argv[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--max-turns"] and argv[5] == "7"
    assert argv[argv.index("--model") + 1] == "claude-haiku-4-5"
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"  # not --dangerously-skip-permissions
    assert "--dangerously-skip-permissions" not in argv and "Bash" in argv
    assert seen["stdin"] == "Clean input.csv into output.csv"
    # Its own config dir: a temp dir outside the cell (and a mutator's workspace), removed when it is done.
    assert seen["cwd"] == str(work) and not Path(seen["config"]).is_relative_to(tmp_path)
    assert Path(seen["config"]).name.startswith("claude-config-") and not Path(seen["config"]).exists()
    assert seen["scrub"] == "0"   # its own scrub needs a bwrap sandbox of its own, which cannot nest in ours
    # The CLI never holds the key: it talks to the adapter's loopback proxy with a one-cell nonce.
    assert seen["key"].startswith("sm-proxy-") and seen["base"].startswith("http://127.0.0.1:")
    assert seen["base"] != "http://127.0.0.1:9"
    assert (tmp_path / "stream.jsonl").read_text() == TRANSCRIPT.read_text()
    metrics = read_stream(tmp_path / "stream.jsonl")
    assert metrics.has_result and not metrics.is_error and metrics.subtype == "success"
    assert metrics.num_turns == 3 and metrics.tool_uses == 2
    assert (metrics.usage.input_tokens, metrics.usage.output_tokens, metrics.usage.cache_creation_input_tokens,
            metrics.usage.cache_read_input_tokens) == (5230, 412, 1800, 9100)


def test_mutator_role_forbids_shell_and_scopes_writes(tmp_path: Path) -> None:
    from eval.agents.claude_cli import claude_argv
    argv = claude_argv("claude", "mutator", model="claude-opus-4-5", max_turns=5)
    assert argv[argv.index("--tools") + 1] == "Read,Write,Edit,Glob,Grep"
    assert "Write(./skill/**)" in argv and "Edit(./skill/**)" in argv and "Write(./result.json)" in argv
    assert argv[argv.index("--disallowedTools") + 1] == "Bash"
    assert "Write" not in argv[argv.index("--allowedTools") + 1:argv.index("--disallowedTools")]


def test_missing_cli_is_a_clear_error_result(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    env = adapter_env(tmp_path, SM_CLAUDE_BIN="claude-definitely-not-installed")
    proc = subprocess.run([sys.executable, str(ADAPTER)], cwd=tmp_path / "work", env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 127 and "npm install -g @anthropic-ai/claude-code" in proc.stderr
    result = json.loads((tmp_path / "stream.jsonl").read_text().splitlines()[-1])
    assert result["type"] == "result" and result["is_error"] and "not installed" in result["result"]


needs_claude = pytest.mark.skipif(shutil.which("claude") is None,
                                  reason="the claude CLI is not installed (npm install -g @anthropic-ai/claude-code)")


@needs_claude
def test_real_claude_cli_builds_through_the_local_server(server, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "input.csv").write_text("A ,B\n 1, 2\n")

    def model(body: dict) -> object:
        if not body.get("tools"):
            return message(text("ok"), use=usage(1, 1))  # side calls the CLI may make
        done = tool_history(body)
        if not done:
            return message(tool_use("Read", {"file_path": str(work / "input.csv")}), stop="tool_use",
                           use=usage(300, 20, 50, 0))
        if len(done) == 1:
            return message(tool_use("Write", {"file_path": str(work / "output.csv"), "content": "a,b\n1,2\n"}),
                           stop="tool_use", use=usage(340, 30, 0, 50))
        return message(text("Wrote output.csv."), use=usage(380, 10, 0, 50))
    server.responder = model
    env = adapter_env(tmp_path, ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test")
    proc = subprocess.run([sys.executable, str(ADAPTER), "--role", "build"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert (work / "output.csv").read_text() == "a,b\n1,2\n"
    metrics = read_stream(tmp_path / "stream.jsonl")
    assert metrics.has_result and metrics.subtype == "success" and metrics.num_turns == 3
    served = server.served_usage("claude-haiku-4-5")
    assert (metrics.usage.input_tokens, metrics.usage.output_tokens) == (served["input_tokens"],
                                                                         served["output_tokens"])
    assert metrics.usage.cache_read_input_tokens == served["cache_read_input_tokens"] == 100
    assert not list(tmp_path.rglob(".claude*"))  # its own config, never ~/.claude nor in the cell; removed after


@needs_claude
def test_real_claude_cli_mutator_cannot_write_outside_skill(server, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "skill").mkdir(parents=True)
    (ws / "skill" / "SKILL.md").write_text("old\n")
    (ws / "briefing.md").write_text("brief\n")

    def model(body: dict) -> object:
        if not body.get("tools"):
            return message(text("ok"), use=usage(1, 1))
        turn = len(body["messages"])
        if turn == 1:
            return message(tool_use("Read", {"file_path": str(ws / "briefing.md")}),
                           tool_use("Read", {"file_path": str(ws / "skill" / "SKILL.md")}), stop="tool_use")
        if turn == 3:
            return message(tool_use("Write", {"file_path": str(ws / "evil.txt"), "content": "x"}),
                           tool_use("Edit", {"file_path": str(ws / "briefing.md"), "old_string": "brief",
                                             "new_string": "hacked"}),
                           tool_use("Edit", {"file_path": str(ws / "skill" / "SKILL.md"), "old_string": "old",
                                             "new_string": "new"}), stop="tool_use")
        return message(text('Done. {"summary": "Reword SKILL.md", "reasoning": "clearer"}'))
    server.responder = model
    env = adapter_env(tmp_path, ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test",
                      SM_MODEL="claude-opus-4-5")
    proc = subprocess.run([sys.executable, str(ADAPTER), "--role", "mutator"], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert not (ws / "evil.txt").exists() and (ws / "briefing.md").read_text() == "brief\n"
    assert (ws / "skill" / "SKILL.md").read_text() == "new\n"
    assert json.loads((ws / "result.json").read_text()) == {"summary": "Reword SKILL.md", "reasoning": "clearer"}
    result = json.loads((tmp_path / "stream.jsonl").read_text().splitlines()[-1])
    denied = {d["tool_input"].get("file_path") for d in result.get("permission_denials", [])}
    assert str(ws / "evil.txt") in denied and str(ws / "briefing.md") in denied




@needs_claude
@pytest.mark.parametrize("launcher_id", ["none", "bwrap"])
def test_real_claude_cli_bash_tool_never_sees_the_key(server, tmp_path: Path, launcher_id: str) -> None:
    """The CLI's requests reach the API with the key, but the key never enters the CLI: its Bash tool's
    `env` shows only a one-cell nonce. Under bwrap the tool cannot read it from any process's
    /proc/PID/environ either: it reached the adapter through a pipe, and the adapter is not dumpable."""
    launcher = launcher_or_skip(launcher_id)
    work = tmp_path / "work"
    work.mkdir()
    planted = "sk-ant-PLANTED-cli-0123456789abcdef"
    scan = EVERY_ENVIRON if launcher_id == "bwrap" else ENV_ONLY

    def model(body: dict) -> object:
        if not body.get("tools"):
            return message(text("ok"), use=usage(1, 1))
        if not tool_history(body):
            return message(tool_use("Bash", {"command": scan, "description": "show env"}),
                           stop="tool_use", use=usage(10, 5))
        return message(text("Done."), use=usage(10, 2))
    server.responder = model
    agent = [sys.executable, str(ADAPTER), "--role", "build"]
    env = adapter_env(tmp_path, ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY=planted)
    proc = run_backend(agent, env, launcher=launcher, cwd=work, writable=[tmp_path],
                       readable=[ROOT, Path(shutil.which("claude")).resolve().parent.parent])
    assert proc.returncode == 0, proc.stderr
    results = [r for body in server.requests for _call, r, _err in tool_history(body)]
    assert results and "ENV-DONE" in results[-1]      # the command ran and its output came back
    assert "PATH=" in results[-1] and "ANTHROPIC_API_KEY=sm-proxy-" in results[-1]
    assert not leaks(results, planted), f"the key is readable in: {leaks(results, planted)}"
    assert set(server.auth_keys) == {planted}          # every request reached the API with the real key
    assert planted not in (tmp_path / "stream.jsonl").read_text()


def cli_copy_agent(body: dict) -> object:
    """A build model for the claude CLI on the demo tasks: one Bash call that copies input.csv to output.csv and
    prints its environment, then an answer."""
    if not body.get("tools"):
        return message(text("ok"), use=usage(1, 1))
    if not tool_history(body):
        return message(tool_use("Bash", {"command": "cp input.csv output.csv && env && echo COPIED && echo "
                                                    "PID1=$(tr '\\0' ' ' < /proc/1/cmdline)",
                                         "description": "copy the table"}), stop="tool_use", use=usage(40, 10))
    return message(text("Copied input.csv to output.csv."), use=usage(60, 5))


@needs_claude
def test_a_real_run_with_the_claude_cli_under_the_default_sandbox(server, tmp_path: Path) -> None:
    """The whole harness path: run.py --real --agent claude-cli (sandbox auto: bwrap where it works) evaluates
    the seed and a candidate with the real CLI, whose Bash tool works there and never sees the key."""
    from mutator.store.db import connect_readonly
    from sandbox import SandboxError, get_launcher
    from tests.eval.agents.test_real_run import clean_env, demo_subset, run_py
    server.responder = cli_copy_agent
    planted = "sk-ant-PLANTED-e2e-0123456789abcdef"
    data = tmp_path / "data"
    train, val = demo_subset(tmp_path, "clean-train", 1), demo_subset(tmp_path, "clean-val", 1)   # a CLI cell: ~2 s CPU
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY=planted)
    done = run_py("--suite", str(train), "--val", str(val), "--real", "--agent", "claude-cli", "--mutator-cmd",
                  f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}", "--rounds", "1", "--replicates", "1",
                  # the copy agent ties the candidate with the seed (Δ 0): the lenient gate keeps a tie, so the
                  # candidate's train evidence runs too (the default 'positive' rule would reject it: 3 cells)
                  "--keep-rule", "lenient", "--data-dir", str(data), env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    db = connect_readonly(data / "mutator.db")
    cells = [dict(r) for r in db.query("select status, error from cells")]
    assert len(cells) == 4 and all(c["status"] == "ok" for c in cells), cells   # seed and candidate, train and val
    db.conn.close()
    results = [r for body in server.requests for _call, r, _err in tool_history(body)]
    assert len(results) == 4 and all("COPIED" in r and "ANTHROPIC_API_KEY=sm-proxy-" in r for r in results)
    assert set(server.auth_keys) == {planted}
    assert not any(planted in r for r in results)
    try:   # where bwrap works, `auto` chose it: the agent's pid 1 is bwrap
        get_launcher("bwrap").check()
        assert all(f"PID1={shutil.which('bwrap')} " in r for r in results), results[0][-300:]   # bwrap, by its path
    except SandboxError:
        pass
    assert planted.encode() not in b"".join(p.read_bytes() for p in data.rglob("*") if p.is_file())
