"""Preflight runs each real agent's resolved programs once inside the chosen sandbox, before anything is paid.

A `python3` that works on the host but not in the sandbox (a wrapper calling a Python outside its folder) is
named with exit 2 and no cell run; a pyenv shim whose version is not installed likewise; and a whole real run
with a pyenv shim first on PATH runs every cell and mutator call with the shim's Python under bwrap.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import get_launcher
from sandbox.probe import probe
from sandbox.resolve import ProgramError
from tests.eval.agents.test_own_mutator import BUILD_AGENT, MUTATOR, own_setup
from tests.eval.agents.test_real_run import clean_env, run_py
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.toolchains import executable, pyenv_tree

SYSTEM_PATH = "/usr/bin:/bin"


def wrapper_python(tmp_path: Path) -> Path:
    """`wrap/bin/python3`: a script that execs a Python kept elsewhere, as hand-made shims do. It works on the
    host; in a sandbox only its own installation is mounted, so the Python it calls is not there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "python3").symlink_to(Path(sys.executable).resolve())
    executable(tmp_path / "wrap" / "bin" / "python3", f'#!/bin/sh\nexec {elsewhere}/python3 "$@"\n')
    return tmp_path / "wrap" / "bin"


@needs_bwrap
def test_probe_names_a_program_that_cannot_run_in_the_sandbox(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{wrapper_python(tmp_path)}:{SYSTEM_PATH}")
    agent = executable(tmp_path / "agents" / "agent.py", "print('hi')\n")
    probe(get_launcher("none"), ["python3", str(agent)], what="the build agent")   # fine without a sandbox
    with pytest.raises(ProgramError) as err:
        probe(get_launcher("bwrap"), ["python3", str(agent)], what="the build agent (--agent-cmd)")
    message = str(err.value)
    assert message.startswith("the build agent (--agent-cmd): `python3` resolves to python3 → "
                              f"{tmp_path}/wrap/bin/python3")
    assert "cannot run in the bwrap sandbox (exit 127)" in message and f"{tmp_path}/elsewhere/python3" in message
    assert f"Mounted for it, read-only: {tmp_path}/wrap" in message and "--sandbox none" in message


@needs_bwrap
def test_probe_runs_the_claude_cli_it_will_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.agents import ClaudeCliBackend
    fake = executable(tmp_path / "npm" / "bin" / "claude", "#!/bin/sh\n[ \"$1\" = --version ] && exit 3\n")
    monkeypatch.setenv("PATH", f"{fake.parent}:{SYSTEM_PATH}")
    with pytest.raises(ProgramError, match=f"`{fake} --version` failed in the sandbox \\(exit 3\\)"):
        probe(get_launcher("bwrap"), ClaudeCliBackend().argv("build"), what="the build agent (--agent claude-cli)")


def real_run(tmp_path: Path, path: str, *, agent: str = BUILD_AGENT,
             mutator: str = MUTATOR) -> tuple[subprocess.CompletedProcess, Path]:
    """A zero-spend real run (own agent and mutator, `python3 SCRIPT`) under bwrap with `path` as PATH."""
    own = own_setup(tmp_path)
    own["agent"].write_text(agent)
    own["mutator"].write_text(mutator)
    data = tmp_path / "data"
    done = run_py("--real", "--agent-cmd", f"python3 {own['agent']}", "--mutator-cmd", f"python3 {own['mutator']}",
                  "--skill-dir", str(own["skill"]), "--suite", str(own["train"]), "--val", str(own["val"]),
                  "--rounds", "1", "--replicates", "1", "--sandbox", "bwrap", "--data-dir", str(data),
                  env={k: v for k, v in clean_env(PATH=path).items() if k != "PYENV_VERSION"})
    return done, data


@needs_bwrap
def test_cli_refuses_before_any_cell_when_the_agent_cannot_run_in_the_sandbox(tmp_path: Path) -> None:
    done, data = real_run(tmp_path, f"{wrapper_python(tmp_path)}:{SYSTEM_PATH}")
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.startswith(f"error: the build agent (--agent-cmd python3 {tmp_path}/agent.py): `python3` "
                                  f"resolves to python3 → {tmp_path}/wrap/bin/python3")
    assert not (data / "evals").exists() and not list(data.glob("**/workspace*"))


@needs_bwrap
def test_cli_names_a_pyenv_version_that_is_not_installed(tmp_path: Path) -> None:
    root = pyenv_tree(tmp_path / ".pyenv", selected="3.98.0")
    done, data = real_run(tmp_path, f"{root}/shims:{SYSTEM_PATH}")
    assert done.returncode == 2, done.stderr[-3000:]
    assert "error: the build agent (--agent-cmd python3 " in done.stderr
    assert "`python3` is a pyenv shim" in done.stderr and "version `3.98.0' is not installed" in done.stderr
    assert not (data / "evals").exists()


@needs_bwrap
def test_real_run_with_a_pyenv_shim_first_on_path(tmp_path: Path) -> None:
    """Every cell and the mutator call run under bwrap by the shim's Python, its lib/ mounted (the agent
    and the mutator import a module that exists only there)."""
    root = pyenv_tree(tmp_path / ".pyenv")
    agent = "import pyenv_marker, sys\nprint(sys.prefix)\n" + BUILD_AGENT     # agent.stdout is kept with the cell
    done, data = real_run(tmp_path, f"{root}/shims:{SYSTEM_PATH}", agent=agent, mutator="import pyenv_marker\n" + MUTATOR)
    assert done.returncode == 0, done.stderr[-3000:]
    ran_by = {p.read_text().strip() for p in data.glob("evals/*/*/agent.stdout")}
    assert ran_by == {str(root / "versions" / "3.99.0")}
    assert "KEEP" in done.stdout and "FAILED 0" in done.stdout
