"""bwrap's argv and its up-front errors: missing program, namespaces unavailable, the demo under bwrap."""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path

import pytest

from sandbox import SandboxError, get_launcher
from sandbox.bwrap import BwrapLauncher
from tests.conftest import ROOT, run_cli
from tests.sandbox.conftest import needs_bwrap


def test_missing_bwrap_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        get_launcher("bwrap")


def test_no_namespaces_says_what_to_enable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(SandboxError, match="No permissions to create new namespace.*user namespaces"):
        get_launcher("bwrap")


def test_cli_reports_sandbox_error_before_any_cell(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    result = run_cli("--suite", "clean-train", "--val", "clean-val", "--sandbox", "bwrap",
                     "--data-dir", str(tmp_path / "data"), env=env)
    assert result.returncode == 2 and "bubblewrap" in result.stderr
    assert not (tmp_path / "data" / "evals").exists()


def test_argv_binds_only_what_it_is_given(tmp_path: Path) -> None:
    cell, work = tmp_path / "data" / "evals" / "k" / "t0__r0", tmp_path / "data" / "evals" / "k" / "t0__r0" / "work"
    work.mkdir(parents=True)
    argv = BwrapLauncher().wrap([sys.executable, str(ROOT / "fakes" / "fake_agent.py")], cwd=work, writable=[cell],
                                readable=[], network=False)
    binds = {(argv[i], argv[i + 2]) for i, arg in enumerate(argv) if arg in ("--bind", "--ro-bind")}
    assert ("--bind", str(cell)) in binds and ("--ro-bind", str(ROOT / "fakes")) in binds
    assert [dest for kind, dest in binds if kind == "--bind"] == [str(cell)]  # the one writable place
    for hidden in (ROOT, ROOT / "suites", tmp_path / "data", Path.home()):
        assert str(hidden) not in {dest for _, dest in binds}
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop"):
        assert flag in argv
    assert "--share-net" not in argv
    assert argv[argv.index("--chdir") + 1] == str(work) and argv[-2:] == [sys.executable, str(ROOT / "fakes" / "fake_agent.py")]
    # bwrap by its path, found once: an exec of a bare name tries every PATH folder first, at every spawn
    assert shutil.which("bwrap") is None or argv[0] == shutil.which("bwrap")


def test_writable_child_mounts_over_readonly_parent(tmp_path: Path) -> None:
    (tmp_path / "ws" / "skill").mkdir(parents=True)
    argv = BwrapLauncher().wrap(["/bin/true"], cwd=tmp_path / "ws", writable=[tmp_path / "ws" / "skill"],
                                readable=[tmp_path / "ws"], network=False)
    assert argv.index(str(tmp_path / "ws")) < argv.index(str(tmp_path / "ws" / "skill"))


@needs_bwrap
def test_demo_dry_run_under_bwrap(tmp_path: Path) -> None:
    result = run_cli("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "2",
                     "--replicates", "2", "--data-dir", str(tmp_path / "data"), "--sandbox", "bwrap")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2/2 rounds" in result.stdout and "status finished" in result.stdout
    assert "FAILED 0" in result.stdout and "KEEP" in result.stdout


def test_file_arguments_never_expose_their_folder(tmp_path: Path) -> None:
    """A real backend's `--config /project/config.json` binds that file, not the project (suites/, data/)."""
    project, work = tmp_path / "project", tmp_path / "cell" / "work"
    (project / "eval" / "agents").mkdir(parents=True)
    work.mkdir(parents=True)
    agent, config = project / "eval" / "agents" / "backend.py", project / "config.json"
    agent.write_text("")
    config.write_text("{}")
    argv = BwrapLauncher().wrap([sys.executable, str(agent), "--role", "build", "--config", str(config)],
                                cwd=work, writable=[tmp_path / "cell"], readable=[], network=True)
    dests = {argv[i + 2] for i, arg in enumerate(argv) if arg in ("--bind", "--ro-bind")}
    assert str(config) in dests and str(agent.parent) in dests
    assert str(project) not in dests and "--share-net" in argv


def test_script_folder_holding_the_cell_is_not_bound_whole(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text("")
    (tmp_path / "data" / "cell").mkdir(parents=True)
    argv = BwrapLauncher().wrap([sys.executable, str(script)], cwd=tmp_path / "data" / "cell",
                                writable=[tmp_path / "data" / "cell"], readable=[], network=False)
    dests = {argv[i + 2] for i, arg in enumerate(argv) if arg in ("--bind", "--ro-bind")}
    assert str(script) in dests and str(tmp_path) not in dests
