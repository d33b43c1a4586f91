"""What a Harbor cell's container is started with (sandbox/container_launcher.py), read from the trial's start
command and the agent's `exec` argv: no engine runs here (the engine's commands are recorded). The container
tests (test_agent_in_container.py) show the same container at work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sandbox import SandboxError
from sandbox.container import ContainerEngine, Finished, Limits
from sandbox.container_launcher import RELAY, RUNTIME, TaskContainer


class Recorded(ContainerEngine):
    """podman as far as argv goes; each command recorded, none run."""

    def __init__(self) -> None:
        super().__init__("podman", ["--runtime", "runc"])
        self.calls: list[list[str]] = []

    def _run(self, args, timeout_s):
        self.calls.append(list(args))
        return Finished(0, "")

    def started(self) -> list[str]:
        [start] = [call for call in self.calls if call[:2] == ["run", "-d"]]
        return start


def container(tmp_path: Path, network: bool = False) -> tuple[TaskContainer, Path]:
    cell = tmp_path / "cell"
    work = cell / "work"
    (work / ".claude" / "skills" / "house").mkdir(parents=True)
    return TaskContainer(Recorded(), "localhost/sm-env:abc", workdir="/app",
                         work=work, limits=Limits(2, 512, network=network), skills=work / ".claude" / "skills",
                         skill_targets=["/root/.claude/skills"]), cell


def binds(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == "-v"]


def test_the_cell_in_the_tasks_layout_the_runtime_by_the_hosts_loader(tmp_path: Path) -> None:
    box, cell = container(tmp_path)
    agent = tmp_path / "agent" / "agent.py"
    agent.parent.mkdir()
    agent.write_text("print(1)\n")
    try:
        argv = box.wrap([sys.executable, str(agent)], cwd=cell / "work", writable=[cell], readable=[], network=True,
                        env={"PATH": "/host/bin", "SM_STREAM": str(cell / "stream.jsonl"), "HOME": str(cell),
                             "ANTHROPIC_BASE_URL": "http://127.0.0.1:4567", "ANTHROPIC_API_KEY": "sm-proxy-nonce"})
        start = box.engine.started()
        mounted = binds(start)
        assert argv[:2] == ["env", "-i"] and argv[argv.index("podman") + 3] == "exec"
        assert "--network" in start and start[start.index("--network") + 1] == "none"
        assert start[start.index("--workdir") + 1] == "/app" and start[start.index("--cpus") + 1] == "2"
        assert argv[argv.index("--workdir") + 1] == "/app"
        assert f"{cell.resolve()}:{cell}:rw" in mounted and f"{(cell / 'work').resolve()}:/app:rw" in mounted
        assert f"{(cell / 'work' / '.claude' / 'skills').resolve()}:/root/.claude/skills:ro" in mounted
        assert f"{agent.parent.resolve()}:{agent.parent}:ro" in mounted
        assert "sm-proxy-nonce" not in " ".join(argv)   # values only in the env file
        env_file = Path(argv[argv.index("--env-file") + 1])
        assert env_file.stat().st_mode & 0o077 == 0
        assert sorted(line.split("=")[0] for line in env_file.read_text().splitlines()) == \
            ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HOME", "SM_STREAM"]   # the image keeps its own PATH
        assert start[start.index("localhost/sm-env:abc") + 1:] == ["tail", "-f", "/dev/null"]   # it only waits
        name = argv.index(box.name)
        relay, agent_at = argv.index(str(RELAY)), argv.index(str(agent))
        assert argv[name + 1].startswith(f"{RUNTIME}/") and name < relay < agent_at
        assert any(bind.endswith(f":{argv[name + 1]}:ro") for bind in mounted)   # the host's loader, mounted
        assert argv[relay + 1:relay + 4] == [str(box.api_socket), "4567", "--"]
    finally:
        box.close()
    assert not box.api_socket.parent.exists()


def test_a_real_key_never_enters_a_container(tmp_path: Path) -> None:
    box, cell = container(tmp_path)
    try:
        with pytest.raises(SandboxError, match="ANTHROPIC_API_KEY would enter the task's container"):
            box.wrap([sys.executable, "-c", "1"], cwd=cell / "work", writable=[cell], readable=[], network=True,
                     env={"ANTHROPIC_API_KEY": "sk-ant-real"})
    finally:
        box.close()


def test_an_agent_and_the_relay_with_different_libraries_mount_each_folder_once(tmp_path: Path) -> None:
    """A non-Python agent (here perl) behind the relay (the harness's Python): two loaders' library folders, every
    mount destination once (the engine refuses a duplicate destination)."""
    box, cell = container(tmp_path)
    try:
        box.wrap(["/usr/bin/perl", "-e", "0"], cwd=cell / "work", writable=[cell], readable=[], network=True,
                 env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:4567"})
    finally:
        box.close()
    targets = [bind.split(":")[1] for bind in binds(box.engine.started())]
    assert len(targets) == len(set(targets)), targets
    assert sum(target.startswith(f"{RUNTIME}/") for target in targets) >= 3   # a loader and its libraries
