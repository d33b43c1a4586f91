"""Real agents never run unsandboxed unless asked: with no working bubblewrap a real run refuses to start (exit 2,
before any cell or mutator call), naming the fix; `--sandbox none`, said outright, runs them with a warning."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.eval.agents.test_own_mutator import BUILD_AGENT, MUTATOR, own_setup
from tests.eval.agents.test_real_run import ROOT, clean_env

# Each leaves a mark outside its cell the moment it runs (what a hostile command would do).
MARK = "import pathlib; pathlib.Path({mark!r}).joinpath({who!r}).write_text('ran bare')\n"


def no_bwrap_path(tmp_path: Path) -> str:
    """A PATH holding a python3 and a shell, and no bwrap: a machine where bubblewrap is not installed."""
    bin_dir = tmp_path / "no-bwrap-bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    for tool in ("sh", "env", "git"):
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    assert shutil.which("bwrap", path=str(bin_dir)) is None
    return str(bin_dir)


def hidden_bwrap(argv: list[str]) -> list[str]:
    """argv in a mount namespace of its own where the bwrap binary is /dev/null (installed, but cannot run)."""
    bwrap = shutil.which("bwrap")
    script = f'mount --bind /dev/null "{bwrap}" && exec "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *argv]


def real_run(tmp_path: Path, *flags: str, path: str, wrap=lambda argv: argv) -> tuple[subprocess.CompletedProcess,
                                                                                          Path, Path]:
    own = own_setup(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    own["agent"].write_text(MARK.format(mark=str(marks), who="agent") + BUILD_AGENT)
    own["mutator"].write_text(MARK.format(mark=str(marks), who="mutator") + MUTATOR)
    data = tmp_path / "data"
    argv = [sys.executable, str(ROOT / "run.py"), "--real", "--agent-cmd", f"{sys.executable} {own['agent']}",
            "--mutator-cmd", f"{sys.executable} {own['mutator']}", "--skill-dir", str(own["skill"]), "--suite",
            str(own["train"]), "--val", str(own["val"]), "--rounds", "1", "--replicates", "1", "--data-dir",
            str(data), *flags]
    env = {k: v for k, v in clean_env(PATH=path).items() if k != "PYENV_VERSION"}
    done = subprocess.run(wrap(argv), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return done, data, marks


def can_hide_bwrap() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("bwrap") is None:
        return False
    return subprocess.run(hidden_bwrap(["true"]), capture_output=True).returncode == 0


@pytest.mark.parametrize("how", ["bwrap not on PATH", "bwrap hidden by unshare -m"])
@pytest.mark.parametrize("sandbox", [(), ("--sandbox", "auto"), ("--sandbox", "bwrap")])
def test_a_real_run_without_a_working_sandbox_refuses_before_any_cell(tmp_path: Path, how: str,
                                                                      sandbox: tuple[str, ...]) -> None:
    if how.startswith("bwrap hidden"):
        if not can_hide_bwrap():
            pytest.skip("needs root, unshare and bwrap to hide bwrap in a mount namespace")
        done, data, marks = real_run(tmp_path, *sandbox, path=os.environ["PATH"], wrap=hidden_bwrap)
    else:
        done, data, marks = real_run(tmp_path, *sandbox, path=no_bwrap_path(tmp_path))
    assert done.returncode == 2, done.stderr[-3000:]
    assert "bubblewrap" in done.stderr and "--sandbox none" in done.stderr, done.stderr
    assert list(marks.iterdir()) == []                   # neither the agent nor the mutator ever ran
    assert not (data / "evals").exists() and not (data / "mutator.db").exists()


def test_sandbox_none_said_outright_runs_with_a_warning(tmp_path: Path) -> None:
    done, data, marks = real_run(tmp_path, "--sandbox", "none", path=no_bwrap_path(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warning: --sandbox none: the agents run as bare processes" in done.stderr
    assert sorted(p.name for p in marks.iterdir()) == ["agent", "mutator"]


def test_the_dry_run_with_our_fakes_still_falls_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {k: v for k, v in clean_env(PATH=no_bwrap_path(tmp_path)).items() if k != "PYENV_VERSION"}
    own = own_setup(tmp_path)
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "--suite", str(own["train"]), "--val", str(own["val"]),
                           "--skill-dir", str(own["skill"]), "--rounds", "1", "--replicates", "1", "--data-dir",
                           str(data)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (data / "mutator.db").exists() and "warning" not in done.stderr
