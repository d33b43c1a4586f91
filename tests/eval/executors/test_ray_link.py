"""How the driver reaches Ray: a private instance listens on loopback only (its sockets listed from /proc), a
cluster that never answers is given up at --ray-timeout-s with exit 2 and nothing written, and --ray-address is
checked for shape before anything starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]'); the ray executor is optional")

from eval.executors.ray_link import address_problem, task_options  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def test_a_private_ray_instance_listens_on_loopback_only() -> None:
    """Ray's API has no authentication: a server of the private instance on the machine's address (or on every
    address) would run anyone's code. Every listening socket of every Ray process must be a loopback one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "eval" / "executors" / "private_ray_sockets.py")], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert "listening on 127.0.0.1 only" in lines[0]["describe"]
    sockets = lines[1:]
    assert {s["process"] for s in sockets} >= {"gcs_server", "raylet"}, sockets   # the servers were found
    assert [s for s in sockets if s["address"] not in LOOPBACK] == []


def test_joining_a_cluster_that_never_answers_stops_at_the_deadline(tmp_path: Path) -> None:
    """A port that accepts the connection and then says nothing: Ray's own connect would retry for ever and
    ignore Ctrl-C; the harness gives up at --ray-timeout-s, exit 2, before a store or a run exists."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)                      # connections queue in the kernel; nobody ever answers them
    address = f"127.0.0.1:{silent.getsockname()[1]}"
    try:
        done = subprocess.run([sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val",
                               "--rounds", "1", "--executor", "ray", "--ray-address", address, "--ray-timeout-s", "2",
                               "--data-dir", str(tmp_path / "data")],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
    finally:
        silent.close()
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"joining the Ray cluster at {address}: no answer within 2 s (--ray-timeout-s)" in done.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("address, ok", [("", True), ("auto", True), ("10.0.0.5:6379", True), ("head-1:6379", True),
                                         ("[::1]:6379", True), ("http//head", False), ("head", False),
                                         ("head:0", False), ("head:99999", False), ("head:6379/x", False),
                                         (":6379", False)])
def test_ray_address_shapes(address: str, ok: bool) -> None:
    assert (address_problem(address) is None) is ok


def test_cell_resources_become_task_options() -> None:
    assert task_options({"num_cpus": 2}) == {"num_cpus": 2}
    assert task_options({"num_cpus": 1, "agent": 1}) == {"num_cpus": 1, "resources": {"agent": 1}}
