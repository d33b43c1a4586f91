"""The resolver: PATH, shims (pyenv, asdf, mise), symlinks (nvm) and #! lines to real binaries and installations."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sandbox.resolve import ProgramError, find_program, resolve_command
from tests.sandbox.toolchains import executable, nvm_tree, pyenv_tree

SYSTEM_PATH = "/usr/bin:/bin"


def test_pyenv_shim_resolves_through_pyenv_which(tmp_path: Path) -> None:
    root = pyenv_tree(tmp_path / ".pyenv")
    env = {"PATH": f"{root}/shims:{SYSTEM_PATH}"}
    command = resolve_command(("python3", "-u", "agent.py"), cwd=tmp_path, environ=env)
    real = root / "versions" / "3.99.0" / "bin" / "python3"
    assert command.argv == (str(real), "-u", "agent.py")          # never the shim: it cannot run in a sandbox
    assert command.program.shimmed and command.path_dirs() == [real.parent]
    mounts = command.mounts()
    assert root / "versions" / "3.99.0" in mounts                 # the whole prefix, its lib/ with it
    assert Path(sys.base_prefix).resolve() in {m.resolve() for m in mounts}   # the venv's base Python
    assert not {root, root / "shims", root / "libexec"} & set(mounts)
    assert "pyenv which python3" in command.program.chain()


def test_pyenv_layout_is_followed_when_its_manager_cannot_run(tmp_path: Path) -> None:
    root = pyenv_tree(tmp_path / ".pyenv")
    (root / "libexec" / "pyenv").unlink()   # the shim's manager is gone: its version file still says which
    program = find_program("python3", cwd=tmp_path, environ={"PATH": f"{root}/shims:{SYSTEM_PATH}"})
    assert program.path == root / "versions" / "3.99.0" / "bin" / "python3" and program.shimmed


def test_pyenv_version_not_installed_is_named(tmp_path: Path) -> None:
    root = pyenv_tree(tmp_path / ".pyenv", selected="3.98.0")
    with pytest.raises(ProgramError) as err:
        find_program("python3", cwd=tmp_path, environ={"PATH": f"{root}/shims:{SYSTEM_PATH}"})
    message = str(err.value)
    assert f"`python3` is a pyenv shim ({root}/shims/python3)" in message
    assert "`pyenv which python3` failed: pyenv: version `3.98.0' is not installed" in message
    assert "pyenv install" in message


def test_env_shebang_script_runs_by_the_shims_real_interpreter(tmp_path: Path) -> None:
    root = pyenv_tree(tmp_path / ".pyenv")
    script = executable(tmp_path / "agents" / "agent.py", "#!/usr/bin/env python3\nprint('hi')\n")
    command = resolve_command((str(script), "--fast"), cwd=tmp_path,
                              environ={"PATH": f"{root}/shims:{SYSTEM_PATH}"})
    real = root / "versions" / "3.99.0" / "bin" / "python3"
    assert command.argv == (str(real), str(script), "--fast")
    assert command.program.via_env and command.program.interpreter and command.program.interpreter.shimmed
    assert {script.parent, root / "versions" / "3.99.0"} <= set(command.mounts())


def test_nvm_claude_mounts_its_node_version_prefix(tmp_path: Path) -> None:
    prefix = nvm_tree(tmp_path / ".nvm")
    program = find_program("claude", cwd=tmp_path, environ={"PATH": f"{prefix}/bin:{SYSTEM_PATH}"})
    assert program.path == prefix / "bin" / "claude" and not program.shimmed     # the link kept: npm's layout
    assert program.interpreter is not None and program.interpreter.path == prefix / "bin" / "node"
    home = Path.home()
    installs = program.installations(home)
    assert installs[0] == prefix and (prefix / "lib" / "node_modules" / "@anthropic-ai" / "claude-code") in installs


def test_claude_cli_backend_names_the_cli_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.agents import ClaudeCliBackend
    prefix = nvm_tree(tmp_path / ".nvm")
    monkeypatch.setenv("PATH", f"{prefix}/bin:{SYSTEM_PATH}")
    monkeypatch.delenv("SM_CLAUDE_BIN", raising=False)
    argv = ClaudeCliBackend().argv("build")
    assert argv[-2:] == ("--claude", str(prefix / "bin" / "claude"))
    command = resolve_command(argv, cwd=tmp_path)
    assert [tool.path for tool in command.tools] == [prefix / "bin" / "claude"]
    assert prefix in command.mounts()
    monkeypatch.setenv("SM_CLAUDE_BIN", str(prefix / "lib" / "node_modules" / "@anthropic-ai" / "claude-code" /
                                            "cli.js"))
    assert ClaudeCliBackend().argv("build")[-1].endswith("claude-code/cli.js")


def test_asdf_shim_asks_asdf(tmp_path: Path) -> None:
    real = executable(tmp_path / ".asdf" / "installs" / "python" / "3.99.0" / "bin" / "python3", "#!/bin/sh\n")
    asdf = executable(tmp_path / ".asdf" / "bin" / "asdf",
                      f'#!/bin/sh\n[ "$1" = which ] && [ "$2" = python3 ] && echo {real}\n')
    executable(tmp_path / ".asdf" / "shims" / "python3", "#!/usr/bin/env bash\n# asdf-plugin: python 3.99.0\n"
                                                        f'exec {asdf} exec "python3" "$@"\n')
    program = find_program("python3", cwd=tmp_path, environ={"PATH": f"{tmp_path}/.asdf/shims:{SYSTEM_PATH}"})
    assert program.path == real and program.shimmed
    assert program.installations(Path.home())[0] == real.parent.parent


def test_mise_symlink_shim_asks_mise(tmp_path: Path) -> None:
    real = executable(tmp_path / "mise" / "installs" / "node" / "99" / "bin" / "node", "#!/bin/sh\n")
    mise = executable(tmp_path / "bin" / "mise", f'#!/bin/sh\n[ "$1" = which ] && echo {real}\n')
    (tmp_path / "shims").mkdir()
    (tmp_path / "shims" / "node").symlink_to(mise)
    program = find_program("node", cwd=tmp_path, environ={"PATH": f"{tmp_path}/shims:{SYSTEM_PATH}"})
    assert program.path == real and program.shimmed


def test_home_is_never_mounted_and_dot_local_only_its_bin_and_lib(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / ".local" / "lib").mkdir(parents=True)
    (home / ".local" / "share" / "keyrings").mkdir(parents=True)
    tool = executable(home / ".local" / "bin" / "tool", "#!/bin/sh\n")
    mine = executable(home / "bin" / "mine", "#!/bin/sh\n")
    env = {"PATH": f"{home}/.local/bin:{home}/bin:{SYSTEM_PATH}"}
    def mounts(name: str) -> list[Path]:   # beside /bin/sh's, which the launcher's system dirs cover
        return [m for m in resolve_command((name,), cwd=tmp_path, environ=env).mounts() if m.is_relative_to(home)]
    assert mounts("tool") == [home / ".local" / "bin", home / ".local" / "lib"] and tool.is_file()
    assert mounts("mine") == [mine]


@pytest.mark.parametrize(("argv", "says"), [
    (("no-such-program-xyz",), "`no-such-program-xyz` is not on PATH"),
    (("./missing.py",), "does not exist"),
])
def test_missing_programs_say_what_to_do(tmp_path: Path, argv: tuple[str, ...], says: str) -> None:
    with pytest.raises(ProgramError, match=says) as err:
        resolve_command(argv, cwd=tmp_path, environ={"PATH": SYSTEM_PATH})
    assert "full path" in str(err.value)


def test_a_wrapper_that_execs_another_tool_is_no_shim(tmp_path: Path) -> None:
    wrapper = executable(tmp_path / "bin" / "python3", '#!/bin/sh\nexec docker exec -i box python3 "$@"\n')
    program = find_program("python3", cwd=tmp_path, environ={"PATH": f"{tmp_path}/bin:{SYSTEM_PATH}"})
    assert program.path == wrapper and not program.shimmed and program.interpreter is not None
