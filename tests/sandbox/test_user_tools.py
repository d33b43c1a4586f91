"""The user's tools run under bwrap: a pyenv shim first on PATH, a `#!/usr/bin/env python3` script, nvm's claude.

Each builds the manager's real layout (tests/sandbox/toolchains.py) and runs the program in a real sandbox.
Before sandbox/resolve.py, the pyenv case exited 127 (`…/libexec/pyenv: No such file or directory`) and
the nvm claude was "not installed" inside the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox.bwrap import BwrapLauncher
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.toolchains import PY, executable, nvm_tree, pyenv_tree

SYSTEM_PATH = "/usr/bin:/bin"
# What the agent reports: which Python ran it, and that its installation's lib/ was there.
REPORT = ("import json, os, sys, pyenv_marker; json.dump({'prefix': sys.prefix, 'marker': pyenv_marker.VERSION, "
          "'path': os.environ['PATH'].split(':')[0]}, open('report.json', 'w'))")


def run_sandboxed(argv: list[str], work: Path, path: str, **env: str) -> subprocess.CompletedProcess:
    wrapped = BwrapLauncher().wrap(argv, cwd=work, writable=[work], readable=[], network=False)
    return subprocess.run(wrapped, cwd=work, env={"PATH": path, "HOME": str(work), **env}, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


@needs_bwrap
def test_python3_through_a_pyenv_shim_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = pyenv_tree(tmp_path / ".pyenv")
    monkeypatch.setenv("PATH", f"{root}/shims:{SYSTEM_PATH}")
    monkeypatch.delenv("PYENV_VERSION", raising=False)   # the tree's own version file chooses
    agent = executable(tmp_path / "agents" / "agent.py", REPORT + "\n")
    (tmp_path / "work").mkdir()
    done = run_sandboxed(["python3", str(agent)], tmp_path / "work", os.environ["PATH"])
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "work" / "report.json").read_text())
    assert report == {"prefix": str(root / "versions" / "3.99.0"), "marker": "3.99.0",
                      "path": str(root / "versions" / "3.99.0" / "bin")}


@needs_bwrap
def test_env_shebang_script_runs_with_the_shims_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = pyenv_tree(tmp_path / ".pyenv")
    monkeypatch.setenv("PATH", f"{root}/shims:{SYSTEM_PATH}")
    monkeypatch.delenv("PYENV_VERSION", raising=False)   # the tree's own version file chooses
    agent = executable(tmp_path / "agents" / "agent", "#!/usr/bin/env python3\n" + REPORT + "\n")
    (tmp_path / "work").mkdir()
    done = run_sandboxed([str(agent)], tmp_path / "work", os.environ["PATH"])
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "work" / "report.json").read_text())["prefix"] == str(root / "versions" / "3.99.0")


@needs_bwrap
def test_nvm_claude_runs_through_the_claude_cli_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.agents import ClaudeCliBackend
    prefix = nvm_tree(tmp_path / ".nvm")
    monkeypatch.setenv("PATH", f"{prefix}/bin:{SYSTEM_PATH}")
    monkeypatch.delenv("SM_CLAUDE_BIN", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    (work / "prompt.md").write_text("say done")
    done = run_sandboxed(list(ClaudeCliBackend().argv("build")), work, os.environ["PATH"],
                         SM_STREAM=str(work / "stream.jsonl"), SM_PROMPT_FILE=str(work / "prompt.md"))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in (work / "stream.jsonl").read_text().splitlines()]
    assert events[-1]["result"] == "done by nvm's claude" and events[0]["argv0"] == str(prefix / "bin" / "claude")


@needs_bwrap
def test_this_machines_python3_runs_as_the_user_has_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real thing where there is one: a pyenv install's shims first on PATH, as its init puts them."""
    pyenv = shutil.which("pyenv")
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip() if pyenv else ""
    if not root or not (Path(root) / "shims" / "python3").is_file():
        pytest.skip("no pyenv with a python3 shim on this machine (the layout tests above cover it)")
    monkeypatch.setenv("PATH", f"{root}/shims:{SYSTEM_PATH}")
    (tmp_path / "work").mkdir()
    done = run_sandboxed(["python3", "-c", "import sys; print(sys.prefix)"], tmp_path / "work", os.environ["PATH"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(f"{root}/versions/")


def test_interpreter_lib_is_part_of_what_is_mounted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = pyenv_tree(tmp_path / ".pyenv")
    monkeypatch.setenv("PATH", f"{root}/shims:{SYSTEM_PATH}")
    monkeypatch.delenv("PYENV_VERSION", raising=False)   # the tree's own version file chooses
    (tmp_path / "work").mkdir()
    argv = BwrapLauncher().wrap(["python3", "-c", "pass"], cwd=tmp_path / "work", writable=[tmp_path / "work"],
                                readable=[], network=False)
    binds = {argv[i + 2] for i, arg in enumerate(argv) if arg == "--ro-bind"}
    assert str(root / "versions" / "3.99.0") in binds and (root / "versions" / "3.99.0" / "lib" / PY).is_dir()
    assert str(root) not in binds and str(root / "shims") not in binds
    assert argv[argv.index("--setenv") + 1:argv.index("--setenv") + 3] == [
        "PATH", f"{root}/versions/3.99.0/bin:{root}/shims:{SYSTEM_PATH}"]
    assert argv[-3:] == [str(root / "versions" / "3.99.0" / "bin" / "python3"), "-c", "pass"]
