"""The first paid run's small surprises (issue 27 item 8): every dry command says it is one, commands ask only
for the agents they run, printed commands run from any folder, and Ctrl-C ends quietly with exit 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mutator.config import ROOT, run_py
from tests.conftest import with_sigint

SEED = ROOT / "suites" / "csv-clean"
FAKE_AGENT = ROOT / "fakes" / "fake_agent.py"


def no_key_env(**extra: str) -> dict[str, str]:
    """This environment without any Anthropic credential or endpoint (a user who has not set one)."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC")}, **extra}


def run(*args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd, capture_output=True,
                          text=True, env=env or no_key_env(), timeout=timeout)


def test_a_dry_plan_says_it_is_a_dry_run_and_a_real_plan_needs_no_api_key(tmp_path):
    common = ("--plan", "--suite", "clean-train", "--val", "clean-val", "--data-dir", str(tmp_path / "data"))
    dry = run(*common, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert dry.stderr.startswith("dry run (fake agents): nothing is spent. The fakes know only the demo's "
                                 "CSV rules")
    real = run(*common, "--real", cwd=tmp_path)               # --plan spends nothing: no key is asked for
    assert real.returncode == 0, real.stderr[-2000:]
    assert "Cost:" in real.stdout and "dry run" not in real.stderr


def test_a_real_check_with_an_agent_command_asks_for_no_mutator(tmp_path):
    done = run("--check", str(SEED), "--suite", "clean-val", "--replicates", "1", "--real", "--sandbox",
               "none", "--agent-cmd", f"{sys.executable} {FAKE_AGENT}", "--data-dir", str(tmp_path / "data"),
               cwd=tmp_path)
    # it used to demand the default mutator's API key
    assert done.returncode == 0, done.stderr[-2000:]
    assert "First health check" in done.stdout and "dry run" not in done.stdout + done.stderr


def test_printed_commands_name_run_py_by_a_path_that_runs_here(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert run_py() == "python run.py"
    monkeypatch.chdir(tmp_path)
    assert run_py() == f"python {ROOT / 'run.py'}"


def test_ctrl_c_mid_run_exits_130_with_no_asyncio_noise(tmp_path):
    """SIGINT (its default handler restored: a background job would ignore it) once the first agent is
    running."""
    data = tmp_path / "data"
    argv = [sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val",
            "--rounds", "1", "--replicates", "1", "--data-dir", str(data)]
    child = subprocess.Popen(with_sigint(argv), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=no_key_env(FAKE_AGENT_HANG="1"))
    try:
        # until an agent has started (it hangs until killed)
        while not list(data.glob("evals/**/stream.jsonl")):
            if child.poll() is not None:
                pytest.fail(f"run.py ended before any agent started: {child.stderr.read()[-2000:]}")
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err[-2000:]
    assert "re-run the same command to resume" in err
    assert "is closed" not in err and "Traceback" not in err and "Task was destroyed" not in err


def test_the_fakes_start_without_site_and_keep_their_ids():
    """The dry run's fakes run with -S (the standard library only: no .pth of every installed package imported
    per fake cell); their ids hash the scripts, so stores made before resume with the same keys."""
    import hashlib

    from mutator.cli.agents import fake_agents
    agents = fake_agents()
    for argv, agent_id in ((agents.build_argv, agents.build_id), (agents.mutator_argv, agents.mutator_id)):
        assert argv[:2] == (sys.executable, "-S")
        assert agent_id == f"fake@{hashlib.sha256(Path(argv[2]).read_bytes()).hexdigest()[:10]}"
    # and a fake imports nothing -S hides: it runs as a cell would run it (an empty prompt: it answers and
    # exits 0)
    done = subprocess.run([*agents.build_argv], input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
