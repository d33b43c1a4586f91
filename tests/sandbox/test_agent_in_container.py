"""A Harbor task's agent runs inside the task's container (`--sandbox podman|docker`, sandbox/container_launcher.py):
it finds a program only the image has, reads the genome where the task's Dockerfile puts its skills, has no
network but the model API through the key proxy's socket, and never sees the real key; the verifier then runs in
the same container, as Harbor runs a trial (it sees what the agent left outside WORKDIR); the oracle never enters
the cell. One task image, FROM the tests' offline base image.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eval import reaper
from eval.cells import Contract
from eval.cost import Price
from eval.evaluate import EvalRequest, evaluate
from eval.jobs import CellSettings
from eval.suite import load_suite
from mutator.after.harbor_import import import_harbor
from sandbox import SandboxError, get_launcher
from sandbox.container import ContainerEngine
from sandbox.container_launcher import ContainerSandbox
from sandbox.none import NoneLauncher
from tests.conftest import ROOT, run_cli
from tests.eval.agents.messages_server import MessagesServer, message, text, tool_history, tool_use, usage

pytestmark = pytest.mark.container
SECRET = "sk-ant-real-key-never-in-a-container"
DOCKERFILE = """FROM localhost/sm-harbor-base
WORKDIR /app
RUN mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho only-in-image says 42\\n' > /usr/local/bin/only-in-image && chmod +x /usr/local/bin/only-in-image
COPY skills /root/.claude/skills
"""
# the verifier runs in the agent's own container: it says whether it sees the agent's marker in /tmp
VERIFIER = """#!/bin/bash
mkdir -p /logs/verifier
[ -e /tmp/agent-was-here ] && echo "agent-marker: seen" || echo "agent-marker: absent"
if [ "$(cat /app/answer.txt 2>/dev/null)" = "only-in-image says 42" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
SKILL = "---\nname: house\ndescription: the house way\n---\nTo answer, run only-in-image and save what it prints.\n"
# A command agent: only the skill names the program; it asks the model API once when it is given one.
AGENT = """import json, os, pathlib, re, subprocess, urllib.request
report = {"cwd": os.getcwd(), "key": os.environ.get("ANTHROPIC_API_KEY", ""),
          "interfaces": sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:])}
if os.getcwd() == "/app":
    pathlib.Path("/tmp/agent-was-here").write_text("x")
skill = pathlib.Path("/root/.claude/skills/house/SKILL.md")   # where the task's Dockerfile puts its skills
if not skill.is_file() and os.environ.get("SM_SKILL_DIR"):
    skill = pathlib.Path(os.environ["SM_SKILL_DIR"], "SKILL.md")
if skill.is_file():
    report["skill"] = str(skill)
    program = re.search(r"run (\\S+)", skill.read_text()).group(1)
    try:
        out = subprocess.run([program], capture_output=True, text=True).stdout
        pathlib.Path("answer.txt").write_text(out.strip())
    except FileNotFoundError as err:
        report["missing"] = program
if os.environ.get("ANTHROPIC_BASE_URL"):
    ask = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
                                 data=json.dumps({"model": "m", "max_tokens": 5, "messages": []}).encode(),
                                 headers={"x-api-key": report["key"], "content-type": "application/json"})
    report["reply"] = json.loads(urllib.request.urlopen(ask, timeout=30).read())["content"][0]["text"]
pathlib.Path(os.environ["HOME"], "agent-report.json").write_text(json.dumps(report))
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                        "usage": {"input_tokens": 1, "output_tokens": 1}}) + "\\n")
"""


def harbor_task(root: Path, note: str = "") -> Path:
    """The task imported (train: it, val: a copy); a `note` in its environment makes an image of its own."""
    task = root / "tasks" / "only-in-image"
    (task / "environment" / "skills" / "house").mkdir(parents=True)
    if note:
        (task / "environment" / "note.txt").write_text(note)
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "environment" / "skills" / "house" / "SKILL.md").write_text(SKILL.replace("run only-in-image", "guess"))
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(VERIFIER)
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("only-in-image > /app/answer.txt\n")
    (task / "instruction.md").write_text("Write the answer to /app/answer.txt, the house way.\n")
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 60.0\n'
                                    '[environment]\ncpus = 1\nmemory_mb = 256\nallow_internet = false\n')
    split = root / "split.json"
    split.write_text(json.dumps({"train": ["only-in-image"], "val": ["only-in-image-copy"]}))
    copy = root / "tasks" / "only-in-image-copy"
    subprocess.run(["cp", "-r", str(task), str(copy)], check=True)
    import_harbor(root / "tasks", root / "out" / "ox", split_file=split)
    return root / "out" / "ox" / "ox-train"


def run_cells(suite: Path, tmp_path: Path, launcher, label: str, skill: Path | None, env: dict) -> tuple:
    agent = tmp_path / "agent" / "agent.py"
    agent.parent.mkdir(exist_ok=True)
    agent.write_text(AGENT)
    [cell] = evaluate(EvalRequest(
        skill_dir=skill, skill_name="house", suite=load_suite(suite), key=label, price=Price(1, 5, 1.25, 0.1),
        cells_root=tmp_path / label, concurrency=1,
        contract=Contract(model="m", replicates=1, max_turns=5, agent="test", silence_ms=60_000, heartbeat_ms=60_000),
        settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=launcher, grader_timeout_s=120,
                              prune=False, infra_retries=0, env=env)))
    report = Path(cell.cell_dir) / "agent-report.json"
    return cell, json.loads(report.read_text()) if report.is_file() else {}


def test_a_command_agent_runs_in_the_tasks_container(engine: ContainerEngine, tmp_path: Path) -> None:
    suite = harbor_task(tmp_path)
    genome = tmp_path / "genome" / "house"
    genome.mkdir(parents=True)
    (genome / "SKILL.md").write_text(SKILL)
    sandbox = ContainerSandbox(engine.id, NoneLauncher())
    server = MessagesServer()
    previous = reaper._registry
    reaper.use(tmp_path / "data" / "pids")   # this test's containers carry its own data-dir label
    try:
        server.script(message(text("pong"), use=usage(7, 3)))
        cell, report = run_cells(suite, tmp_path, sandbox, "skill", genome,
                                 {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": SECRET})
        assert server.auth_keys == [SECRET]   # the proxy added the real key on the host side
    finally:
        server.close()
        reaper.use(previous)
    assert (cell.status, cell.score, cell.tests) == ("ok", 1.0, {"reward": 1.0}), cell.error
    assert report["cwd"] == "/app" and report["interfaces"] == ["lo"]   # the task's WORKDIR, no network
    assert report["skill"] == "/root/.claude/skills/house/SKILL.md"     # the genome, where the task expects it
    assert report["reply"] == "pong" and report["key"].startswith("sm-proxy-")   # the API only through the proxy
    assert (cell.input_tokens, cell.output_tokens) == (7, 3)   # metered as served, through the socket
    cell_dir = Path(cell.cell_dir)
    assert SECRET not in "".join(p.read_text(errors="replace") for p in cell_dir.rglob("*") if p.is_file())
    assert not [p for p in cell_dir.rglob("*") if p.name == "solve.sh"]   # the oracle never enters a cell
    mine = f"label={reaper.DATA_DIR_LABEL}={(tmp_path / 'data').resolve()}"   # never another run's containers
    left = subprocess.run(engine.argv("ps", "-a", "--filter", mine, "--format", "{{.Names}}"), capture_output=True,
                          text=True)
    assert left.returncode == 0 and "sm-agent-" not in left.stdout   # the agent's container is gone
    # one container per trial: the verifier saw what the agent wrote outside WORKDIR (/tmp), as in Harbor
    assert "agent-marker: seen" in (cell_dir / "verifier.log").read_text()
    # without the skill the agent never learns the program's name; on the host (the old way) it cannot run it
    bare, _ = run_cells(suite, tmp_path, sandbox, "bare", None, {})
    host, on_host = run_cells(suite, tmp_path, NoneLauncher(), "host", genome, {})
    assert [(c.status, c.score) for c in (bare, host)] == [("ok", 0.0), ("ok", 0.0)]
    assert on_host["missing"] == "only-in-image"
    # an agent on the host: the verifier's fresh container sees only WORKDIR
    assert "agent-marker: absent" in (Path(host.cell_dir) / "verifier.log").read_text()


def test_a_missing_engine_is_refused_before_any_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))   # neither podman nor docker is on it
    with pytest.raises(SandboxError, match="--sandbox docker: `docker` is not on PATH"):
        get_launcher("docker")
    data = tmp_path / "data"
    done = run_cli("--sandbox", "podman", "--data-dir", str(data), env={**os.environ, "PATH": str(tmp_path)},
                   timeout=120)
    assert done.returncode == 2 and "--sandbox podman: `podman` is not on PATH; install podman" in done.stderr
    assert not data.exists()   # refused before a run began


@pytest.mark.parametrize("agent", ["toolserver.py", "anthropic_agent.py"], ids=["warm", "whole-process"])
def test_our_sdk_agents_tools_run_in_the_tasks_container(engine: ContainerEngine, tmp_path: Path, agent: str) -> None:
    """The harness's warm loop with its tool server in the container, and the whole agent process in it."""
    suite = harbor_task(tmp_path)
    server = MessagesServer()
    try:
        server.script(message(tool_use("bash", {"command": "only-in-image > answer.txt; env > env.txt"}),
                              stop="tool_use", use=usage(11, 2)), message(text("done"), use=usage(12, 1)))
        [cell] = evaluate(EvalRequest(
            skill_dir=None, skill_name="house", suite=load_suite(suite), key="sdk", price=Price(1, 5, 1.25, 0.1),
            cells_root=tmp_path / "sdk", concurrency=1,
            contract=Contract(model="m", replicates=1, max_turns=5, agent="anthropic", silence_ms=60_000,
                              heartbeat_ms=60_000),
            settings=CellSettings(agent_argv=[sys.executable, str(ROOT / "eval" / "agents" / agent)],
                                  launcher=ContainerSandbox(engine.id, NoneLauncher()), grader_timeout_s=120,
                                  prune=False, infra_retries=0, network=True,
                                  env={"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": SECRET})))
        assert server.auth_keys == [SECRET, SECRET]
    finally:
        server.close()
    assert (cell.status, cell.score) == ("ok", 1.0), cell.error   # its bash tool ran the image's program
    assert (cell.input_tokens, cell.output_tokens) == (23, 3)
    tool_env = (Path(cell.cell_dir) / "work" / "env.txt").read_text()
    assert SECRET not in tool_env and "PWD=/app" in tool_env


def test_preflight_probes_the_agent_in_each_tasks_container(engine: ContainerEngine, tmp_path: Path) -> None:
    """The agent's programs are probed in the task's image before any cell: the harness's Python starts there through
    the mounted loader, the agent's script is found; a program the image lacks (a host program in a system dir, which
    the container never mounts) is refused naming the task, the image and the fix, with exit 2 and no cell run."""
    from eval.graders.harbor_runner import preflight
    from sandbox.resolve import ProgramError
    suite = harbor_task(tmp_path)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    sandbox = ContainerSandbox(engine.id, NoneLauncher())
    preflight(sandbox, [load_suite(suite)], [sys.executable, str(agent)], what="the build agent")   # runs there
    with pytest.raises(ProgramError) as refused:
        preflight(sandbox, [load_suite(suite)], ["/usr/bin/perl", "-e", "0"], what="the build agent")
    said = str(refused.value)
    assert "the build agent in the container of Harbor task ox-train/only-in-image (image localhost/sm-env:" in said
    assert "/usr/bin/perl is not visible or not executable" in said and "its Dockerfile" in said
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILL_MUTATOR_", "SM_"))}
    done = run_cli("--suite", str(suite), "--val", str(suite.parent / "ox-val"), "--rounds", "0", "--replicates", "1",
                   "--real", "--agent", "command", "--agent-cmd", "/usr/bin/perl -e 0", "--mutator-cmd",
                   f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}", "--no-solve", "--sandbox", engine.id,
                   "--data-dir", str(data), "--skill-dir", str(ROOT / "suites" / "csv-clean"), env=env, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Harbor task ox-train/only-in-image (image localhost/sm-env:" in done.stderr
    assert not (data / "mutator.db").exists() and not (data / "evals").exists()   # refused before any cell


@pytest.mark.skipif(shutil.which("claude") is None,
                    reason="the claude CLI is not installed (npm install -g @anthropic-ai/claude-code)")
def test_the_real_claude_cli_runs_in_the_tasks_container(engine: ContainerEngine, tmp_path: Path) -> None:
    """The claude-cli backend as a run starts it (the adapter, --claude the host's CLI): in the task's container its
    native binary loads the image's libc (the base image carries libc6's librt), its Bash tool runs the image's
    program at /app, and its requests reach the local server through the relay with the real key added outside."""
    suite = harbor_task(tmp_path, note="an image built FROM the base that carries librt\n")

    def model(body: dict) -> object:
        if not body.get("tools"):
            return message(text("ok"), use=usage(1, 1))   # the CLI's side calls
        if not tool_history(body):
            return message(tool_use("Bash", {"command": "only-in-image > answer.txt; pwd > where.txt",
                                             "description": "answer"}), stop="tool_use", use=usage(30, 5))
        return message(text("Done."), use=usage(40, 2))
    server = MessagesServer()
    server.responder = model
    claude = str(Path(shutil.which("claude")).absolute())
    try:
        [cell] = evaluate(EvalRequest(
            skill_dir=None, skill_name="house", suite=load_suite(suite), key="cli", price=Price(1, 5, 1.25, 0.1),
            cells_root=tmp_path / "cli", concurrency=1,
            contract=Contract(model="claude-haiku-4-5", replicates=1, max_turns=5, agent="claude-cli",
                              silence_ms=120_000, heartbeat_ms=120_000),
            settings=CellSettings(agent_argv=[sys.executable, str(ROOT / "eval" / "agents" / "claude_cli.py"),
                                              "--role", "build", "--claude", claude],
                                  launcher=ContainerSandbox(engine.id, NoneLauncher()), grader_timeout_s=120,
                                  prune=False, infra_retries=0, network=True,
                                  env={"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": SECRET})))
        assert server.auth_keys and set(server.auth_keys) == {SECRET}   # every request, the key added outside
    finally:
        server.close()
    assert (cell.status, cell.score) == ("ok", 1.0), cell.error
    assert (Path(cell.cell_dir) / "work" / "where.txt").read_text().strip() == "/app"
    served = server.served_usage("claude-haiku-4-5")
    assert (cell.input_tokens, cell.output_tokens) == (served["input_tokens"], served["output_tokens"])
