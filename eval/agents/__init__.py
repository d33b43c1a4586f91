"""Real agent backends and their registry: backend id -> the argv that runs it + its implementation id.

The implementation id is part of the evaluation contract, so it changes whenever the backend's code,
the SDK/CLI version or the user's command changes: cached cells of another agent are never reused.
A backend only describes a child process; it never runs the agent itself.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from eval.errors import SkillMutatorError

HERE = Path(__file__).resolve().parent
ROLES = ("build", "mutator")
KEY_HELP = ("export ANTHROPIC_API_KEY=sk-ant-... (or ANTHROPIC_BASE_URL=http://127.0.0.1:PORT for a local "
            "Messages-API server)")


class AgentSetupError(SkillMutatorError, RuntimeError):
    """A backend cannot run here (no API key, no `claude`, no --agent-cmd); the message says the fix."""


class AgentBackend(Protocol):
    id: str

    def argv(self, role: str) -> tuple[str, ...]:
        """The command that runs this agent in `role` (build or mutator) under the agent process contract."""
        ...

    def implementation(self, role: str) -> str:
        """A stable id of what runs: changes with the code, the SDK/CLI version or the command."""
        ...

    def check(self, environ: Mapping[str, str]) -> None:
        """Raise AgentSetupError, saying the fix, when this backend cannot run (before any spend)."""
        ...


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:10]


def _sources(*names: str) -> list[bytes]:
    return [(HERE / name).read_bytes() for name in names]


def _need_key(environ: Mapping[str, str], what: str) -> None:
    if not (environ.get("ANTHROPIC_API_KEY") or environ.get("ANTHROPIC_AUTH_TOKEN")
            or environ.get("ANTHROPIC_BASE_URL")):
        raise AgentSetupError(f"{what} needs an API key and none is set: {KEY_HELP}; "
                              f"drop --real for a zero-spend dry run")


TOOL_SERVER = HERE / "toolserver.py"


def tool_server_args(argv: Sequence[str]) -> tuple[str, Path | None] | None:
    """(role, config file) when `argv` runs our SDK agent's tool server, whose loop the harness runs itself
    (eval/agents/warm.py); None for any other agent."""
    if len(argv) < 2 or Path(argv[1]).name != TOOL_SERVER.name or Path(argv[1]).resolve() != TOOL_SERVER:
        return None
    words = list(argv[2:])
    option = {flag: words[i + 1] for i, flag in enumerate(words[:-1]) if flag in ("--role", "--config")}
    return option.get("--role", "build"), Path(option["--config"]) if "--config" in option else None


@dataclass(frozen=True)
class AnthropicBackend:
    """Our tool-use loop on the anthropic SDK (eval/agents/loop.py): run by the harness on its warm client,
    its tools in the sandboxed tool server (eval/agents/toolserver.py, the process its argv names)."""
    config_file: Path | None = None    # its pricing gives the result event's total_cost_usd
    id: str = "anthropic"

    def argv(self, role: str) -> tuple[str, ...]:
        extra = ("--config", str(self.config_file)) if self.config_file else ()
        return (sys.executable, str(TOOL_SERVER), "--role", role, *extra)

    def implementation(self, role: str) -> str:
        sdk = importlib.metadata.version("anthropic")
        code = _digest(*_sources("loop.py", "warm.py", "toolserver.py", "tools.py", "stream.py",
                                 "result_json.py", "caching.py"),
                       sdk.encode())
        return f"anthropic{'-mutator' if role == 'mutator' else ''}@{code}"

    def check(self, environ: Mapping[str, str]) -> None:
        _need_key(environ, "the anthropic backend")


def claude_path(environ: Mapping[str, str] | None = None) -> str | None:
    """The claude CLI the claude-cli backend runs: SM_CLAUDE_BIN (a name on PATH or a path), else `claude` on
    PATH; absolute, symlinks kept (an npm `bin/claude` link finds its package through it)."""
    environ = os.environ if environ is None else environ
    found = shutil.which(environ.get("SM_CLAUDE_BIN") or "claude", path=environ.get("PATH"))
    return os.path.abspath(found) if found else None


@dataclass(frozen=True)
class ClaudeCliBackend:
    """Claude Code itself: `claude -p --output-format stream-json` (eval/agents/claude_cli.py)."""
    id: str = "claude-cli"

    def argv(self, role: str) -> tuple[str, ...]:
        # The CLI found here, on the harness's PATH (or SM_CLAUDE_BIN), is the one the adapter runs: a sandbox
        # mounts its installation (an npm or nvm prefix, its node) because the argv names it.
        binary = claude_path()
        return (sys.executable, str(HERE / "claude_cli.py"), "--role", role,
                *(("--claude", binary) if binary else ()))

    def version(self) -> str:
        binary = claude_path()
        if binary is None:
            return "absent"
        try:
            done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        return done.stdout.strip() or "unknown"

    def implementation(self, role: str) -> str:
        code = _digest(*_sources("claude_cli.py", "result_json.py", "key_proxy.py", "meter.py", "hide.py"),
                       self.version().encode())
        return f"claude-cli{'-mutator' if role == 'mutator' else ''}@{code}"

    def check(self, environ: Mapping[str, str]) -> None:
        binary = environ.get("SM_CLAUDE_BIN") or "claude"
        if claude_path(environ) is None:
            raise AgentSetupError(f"the claude-cli backend needs the claude CLI and `{binary}` is not on "
                                  "PATH; install it with `npm install -g @anthropic-ai/claude-code`, or "
                                  "choose the anthropic backend")
        _need_key(environ, "the claude-cli backend (it runs with its own CLAUDE_CONFIG_DIR, so a "
                           "`claude login` session is not used)")


@dataclass(frozen=True)
class CommandBackend:
    """Any executable that follows the agent process contract (--agent-cmd)."""
    command: str = ""
    id: str = "command"

    def argv(self, role: str) -> tuple[str, ...]:
        """The words of the command; a relative program (`./agent.py`) or script (`python3 agent.py`) found
        from where the user typed it is made absolute, since the agent runs in its cell."""
        words = shlex.split(self.command)
        script = next((i for i, word in enumerate(words[1:], 1) if not word.startswith("-")), None)
        for i in (0, script):
            if i is not None and i < len(words) and not os.path.isabs(words[i]) and Path(words[i]).is_file() \
                    and (i > 0 or "/" in words[i]):
                words[i] = os.path.abspath(words[i])
        return tuple(words)

    def implementation(self, role: str) -> str:
        files = [Path(part).read_bytes() for part in self.argv(role) if Path(part).is_file()]
        return f"command@{_digest(self.command.encode(), *files)}"

    def check(self, environ: Mapping[str, str]) -> None:
        if not self.command.strip():
            raise AgentSetupError("--agent command needs --agent-cmd 'PROGRAM ARGS...' (an executable that "
                                  "follows the agent process contract: docs/reference/contracts.md)")
        try:
            program = shlex.split(self.command)[0]
        except ValueError as err:
            raise AgentSetupError(f"--agent-cmd {self.command!r} cannot be parsed: {err}") from None
        if shutil.which(program, path=environ.get("PATH")) is None and not Path(program).is_file():
            raise AgentSetupError(f"--agent-cmd: {program!r} is neither on PATH nor a file")


BACKENDS: dict[str, type] = {"anthropic": AnthropicBackend, "claude-cli": ClaudeCliBackend,
                             "command": CommandBackend}


def make_backend(backend_id: str, *, command: str | None = None,
                 config_file: Path | None = None) -> AgentBackend:
    if backend_id == "anthropic":
        return AnthropicBackend(config_file=config_file)
    if backend_id == "claude-cli":
        return ClaudeCliBackend()
    if backend_id == "command":
        return CommandBackend(command or "")
    raise AgentSetupError(f"unknown agent {backend_id!r}; choose one of: {', '.join(BACKENDS)}")
