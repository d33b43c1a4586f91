"""Run one of our backends as the harness does, for the key tests: credentials through the secret pipe
(eval/agent_call.py::secret_pipe), inside a launcher, and a tool command that prints every environment it can."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from eval.agent_call import secret_pipe
from sandbox import SandboxError, get_launcher

# `env`, then under a sandbox the environment of every process it can see (/proc/PID/environ).
ENV_ONLY = "env; echo ENV-DONE"
EVERY_ENVIRON = (r"env; for p in /proc/[0-9]*; do echo \"== $p $(tr '\0' ' ' < $p/cmdline)\"; "
                 r"tr '\0' '\n' < $p/environ; done 2>/dev/null; echo ENV-DONE")


def launcher_or_skip(launcher_id: str):
    try:
        return get_launcher(launcher_id)   # checked: bwrap must be installed and able to start a sandbox here
    except SandboxError as err:
        pytest.skip(str(err))


def run_backend(agent: Sequence[str], env: Mapping[str, str], *, launcher, cwd: Path, writable: Sequence[Path],
                readable: Sequence[Path]) -> subprocess.CompletedProcess:
    env, fd = secret_pipe(agent, env)
    assert fd is not None and "ANTHROPIC_API_KEY" not in env
    argv = launcher.wrap(agent, cwd=cwd, writable=writable, readable=readable, network=True)
    try:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, pass_fds=(fd,))
    finally:
        os.close(fd)


def leaks(results: Sequence[str], planted: str) -> list[str]:
    """The process headers (or 'env') of every block of tool output that holds the planted value."""
    return [block.split("\n", 1)[0] for r in results for block in r.split("== ") if planted in block]
