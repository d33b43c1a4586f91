"""--agent-cmd with relative paths: taken from where the user typed the command, since the agent runs in its cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.agents import CommandBackend


def test_relative_program_and_script_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "my_agent.py").write_text("")
    (tmp_path / "data.csv").write_text("")
    monkeypatch.chdir(tmp_path)
    assert CommandBackend("python3 -u my_agent.py data.csv --fast").argv("build") == (
        "python3", "-u", str(tmp_path / "my_agent.py"), "data.csv", "--fast")   # only the script slot
    assert CommandBackend("./agents/run.sh x").argv("build") == (str(tmp_path / "agents" / "run.sh"), "x")
    assert CommandBackend("python3 not_here.py").argv("build") == ("python3", "not_here.py")
