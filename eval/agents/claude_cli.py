"""The `claude-cli` agent: runs `claude -p --output-format stream-json` under the agent process contract.

Claude Code's stdout already is the stream-json shape, so it is copied line by line into SM_STREAM.
The CLI gets its own CLAUDE_CONFIG_DIR, a temp dir removed when it exits: never the user's ~/.claude, and
never the cell or the mutator's workspace (a mutator may write only skill/ and result.json), and an
allow-list with permission mode `dontAsk` (it refuses --dangerously-skip-permissions as root).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if not __package__:  # run as a script: the project root, when this process can see it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

try:
    from eval.agents.hide import take_secrets, undumpable
    from eval.agents.key_proxy import KeyProxy, credentials
    from eval.agents.result_json import settle_mutator_result
except ImportError:  # run as a script, e.g. in a sandbox that shows only this folder: siblings are top-level
    from hide import take_secrets, undumpable  # type: ignore[no-redef]
    from key_proxy import KeyProxy, credentials  # type: ignore[no-redef]
    from result_json import settle_mutator_result  # type: ignore[no-redef]

BUILD_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep", "Skill")
# No Bash for the mutator: a shell could write outside skill/. Edit rules cover Write and Edit alike.
MUTATOR_TOOLS = ("Read", "Write", "Edit", "Glob", "Grep")
MUTATOR_ALLOW = ("Read", "Glob", "Grep", "Edit(./skill/**)", "Write(./skill/**)", "Edit(./result.json)",
                 "Write(./result.json)")
# The key never reaches the CLI (key_proxy.py), so its Bash tool has none to print. The CLI's own scrub is off:
# it would run every Bash command in a bubblewrap sandbox of its own (needing socat), which cannot start
# inside our bwrap sandbox ("Creating new namespace failed"), so every Bash call of a build agent would fail.
QUIET_ENV = {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "0"}
# Never in the CLI's environment: the credentials, and the network proxies (it talks only to 127.0.0.1).
WITHHELD = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY",
            "https_proxy", "http_proxy", "all_proxy")
NOT_INSTALLED = ("the claude CLI is not installed (no `{bin}` on PATH); install it with "
                 "`npm install -g @anthropic-ai/claude-code`, or use --agent anthropic")


def claude_binary() -> str | None:
    return shutil.which(os.environ.get("SM_CLAUDE_BIN") or "claude")


def claude_argv(binary: str, role: str, *, model: str, max_turns: int) -> list[str]:
    argv = [binary, "-p", "--output-format", "stream-json", "--verbose", "--max-turns", str(max_turns),
            "--model", model, "--permission-mode", "dontAsk"]
    if role == "mutator":
        return [*argv, "--tools", ",".join(MUTATOR_TOOLS), "--allowedTools", *MUTATOR_ALLOW,
                "--disallowedTools", "Bash", "--"]
    return [*argv, "--tools", ",".join(BUILD_TOOLS), "--allowedTools", *BUILD_TOOLS, "--"]


def error_result(stream: Path | None, text: str) -> None:
    if stream is None:
        return
    with open(stream, "a", encoding="utf-8") as f:
        f.write(json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True,
                            "num_turns": 0, "duration_ms": 0, "total_cost_usd": 0, "result": text,
                            "usage": {"input_tokens": 0, "output_tokens": 0}}) + "\n")


def config_home() -> Path:
    """The CLI's own config dir: a fresh temp dir (the system's, private to the cell under bwrap), outside the
    cell and the mutator's workspace, where the tamper check would fail every mutation that wrote it."""
    return Path(tempfile.mkdtemp(prefix="claude-config-"))


def read_prompt() -> str:
    prompt_file = os.environ.get("SM_PROMPT_FILE")
    if prompt_file and Path(prompt_file).is_file():
        return Path(prompt_file).read_text(encoding="utf-8")
    return "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="claude_cli")
    parser.add_argument("--role", choices=("build", "mutator"), default="build")
    parser.add_argument("--claude", help="the CLI to run, as the harness found it (default: SM_CLAUDE_BIN or "
                                         "`claude` on PATH)")
    options = parser.parse_args(argv)
    role = options.role
    stream = Path(os.environ["SM_STREAM"]) if os.environ.get("SM_STREAM") else None
    binary = options.claude or claude_binary()
    if binary is None or not os.access(binary, os.X_OK):   # a --claude path the sandbox does not show
        message = NOT_INSTALLED.format(bin=options.claude or os.environ.get("SM_CLAUDE_BIN") or "claude")
        print(f"claude_cli: {message}", file=sys.stderr)
        error_result(stream, message)
        return 127
    take_secrets()
    undumpable()   # this process holds the key: its tools' tools may not read /proc/PID/environ
    cwd = Path.cwd()
    config_dir = config_home()
    env = {k: v for k, v in os.environ.items() if k not in WITHHELD}
    env.update(QUIET_ENV, CLAUDE_CONFIG_DIR=str(config_dir))
    auth = credentials(os.environ)
    proxy = KeyProxy(os.environ.get("ANTHROPIC_BASE_URL", ""), auth).start() if auth else None
    if proxy is not None:
        env.update(ANTHROPIC_BASE_URL=proxy.base_url, ANTHROPIC_API_KEY=proxy.nonce)
    command = claude_argv(binary, role, model=os.environ.get("SM_MODEL") or "claude-haiku-4-5",
                          max_turns=int(os.environ.get("SM_MAX_TURNS") or 30))
    final_text = ""
    out = open(stream, "a", encoding="utf-8") if stream else None  # noqa: SIM115
    try:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, encoding="utf-8", errors="replace")
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(read_prompt())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        for line in proc.stdout:
            if out and line.strip():
                out.write(line if line.endswith("\n") else line + "\n")
                out.flush()
            if '"result"' in line:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(event, dict) and event.get("type") == "result":
                    final_text = str(event.get("result") or "")
        code = proc.wait()
    finally:
        if out:
            out.close()
        if proxy is not None:
            proxy.close()
        shutil.rmtree(config_dir, ignore_errors=True)
    if role == "mutator" and code == 0:
        settle_mutator_result(cwd, final_text)
    return code


if __name__ == "__main__":
    sys.exit(main())
