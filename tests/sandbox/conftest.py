"""Fixtures for the sandbox proof: a world with secrets around a cell, and the escape agent's plan."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.cost import Price
from eval.evaluate import EvalRequest, evaluate
from eval.jobs import CellResult, CellSettings
from eval.suite import load_suite
from sandbox import Launcher, SandboxError
from sandbox.bwrap import BwrapLauncher
from sandbox.container import ContainerEngine, get_engine
from sandbox.host_image import ensure_base_image
from tests.conftest import ROOT, make_suite

PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)


def bwrap_unavailable() -> str:
    """Why bwrap cannot run here ('' when it can): the only reason the bwrap proofs may skip."""
    try:
        BwrapLauncher().check()
    except SandboxError as err:
        return str(err)
    return ""


# A host whose kernel refuses the engine's default rlimits (this project's VMs) needs them off; an explicit
# CONTAINERS_CONF of the machine's own wins.
NO_ULIMITS = "[containers]\ndefault_ulimits = []\n"


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainerEngine]:
    """The container tests' engine, with the offline base image (sandbox/host_image.py) built once."""
    conf = tmp_path_factory.mktemp("containers") / "containers.conf"
    conf.write_text(NO_ULIMITS)
    before = os.environ.get("CONTAINERS_CONF")
    os.environ.setdefault("CONTAINERS_CONF", str(conf))
    engine = get_engine("auto")     # no engine is a failure here, not a skip: .ci/run installs podman
    ensure_base_image(engine)
    yield engine
    if before is None:
        os.environ.pop("CONTAINERS_CONF", None)


needs_bwrap = pytest.mark.skipif(bool(bwrap_unavailable()), reason=bwrap_unavailable() or "bwrap runs")


@dataclass
class World:
    """Secrets laid out like a real data dir and suites, and host-side traces of each escape."""
    root: Path
    train: Path
    test_suite: Path
    data_dir: Path
    agent_dir: Path
    listener: socket.socket
    signals: list[int] = field(default_factory=list)

    @property
    def agent_argv(self) -> list[str]:
        return [sys.executable, str(self.agent_dir / "escape_agent.py")]

    def plan(self, **overrides: object) -> dict:
        home_files = sorted(p for p in Path.home().iterdir() if p.is_file() and os.access(p, os.R_OK))
        plan = {
            "answer_key": str(self.train / "answers" / "t0.csv"),
            "test_suite": str(self.test_suite / "tasks.jsonl"),
            "sibling_cell": str(self.data_dir / "evals" / "other" / "t0__r0" / "work" / "output.txt"),
            "home": str(home_files[0]) if home_files else "",
            "write_outside": str(self.data_dir / "escaped.txt"),
            "readonly_dir": str(self.agent_dir),
            "port": self.listener.getsockname()[1],
            "harness_pid": os.getpid(),
        }
        return {**plan, **overrides}

    def connections(self) -> int:
        """How many connections reached the listener (accepted without blocking)."""
        count = 0
        self.listener.setblocking(False)
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1

    def host_traces(self) -> dict[str, bool]:
        """What an escape left on the host, judged from outside the sandbox."""
        return {"write_outside": (self.data_dir / "escaped.txt").exists(),
                "write_readonly": (self.agent_dir / "escaped.txt").exists(),
                "connect_localhost": self.connections() > 0,
                "signal_harness": bool(self.signals)}

    def run_cell(self, launcher: Launcher, plan: dict) -> tuple[CellResult, dict]:
        """One real cell of the train suite through eval.evaluate, with the escape agent as build agent."""
        contract = Contract(model="m", replicates=1, max_turns=5, agent="escape", silence_ms=60_000,
                            heartbeat_ms=60_000)
        request = EvalRequest(skill_dir=None, skill_name="none", suite=load_suite(self.train), contract=contract,
                              key="k", cells_root=self.data_dir / "evals" / "k", price=PRICE, concurrency=1,
                              settings=CellSettings(agent_argv=self.agent_argv, launcher=launcher, grader_timeout_s=30,
                                                    env={"ESCAPE_PLAN": json.dumps(plan)}))
        [cell] = evaluate(request)
        report_path = Path(cell.cell_dir) / "escape-report.json"
        report = json.loads(report_path.read_text()) if report_path.is_file() else {}
        return cell, report


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    train = make_suite(tmp_path / "suites", "train", split="train", tasks=1)
    (train / "answers").mkdir()
    (train / "answers" / "t0.csv").write_text("SECRET ANSWER KEY\n")
    test_suite = make_suite(tmp_path / "suites", "held", split="test", tasks=1)
    data_dir = tmp_path / "data"
    sibling = data_dir / "evals" / "other" / "t0__r0" / "work"
    sibling.mkdir(parents=True)
    (sibling / "output.txt").write_text("a sibling cell's answer\n")
    (data_dir / "mutator.db").write_text("not really a database\n")
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    shutil.copy(ROOT / "fakes" / "escape_agent.py", agent_dir / "escape_agent.py")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    w = World(tmp_path, train, test_suite, data_dir, agent_dir, listener)
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: w.signals.append(signum))
    try:
        yield w
    finally:
        signal.signal(signal.SIGUSR1, previous)
        listener.close()
