"""Agent containers outlive a harness that dies (the engine keeps them); the next start on the same data dir removes
those of dead harnesses, never a live harness's, never another data dir's (eval/reaper.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval import reaper
from sandbox.container import ContainerEngine
from sandbox.host_image import BASE_TAG
from tests.conftest import ROOT

pytestmark = pytest.mark.container

# A harness that records and labels an agent container as the harbor runner does, starts it, and dies.
HARNESS = """import subprocess, sys
from pathlib import Path
from eval import reaper
reaper.use(Path(sys.argv[1]))
name, image, engine = sys.argv[2], sys.argv[3], sys.argv[4:]
reaper.register_container(name, engine)
labels = [a for k, v in reaper.labels().items() for a in ("--label", f"{k}={v}")]
subprocess.run([*engine, "run", "-d", "--name", name, "--network", "none", *labels, image, "tail", "-f", "/dev/null"],
               check=True, capture_output=True)
"""


def running(engine: ContainerEngine, name: str) -> bool:
    done = subprocess.run(engine.argv("ps", "-aq", "--filter", f"name=^{name}$"), capture_output=True, text=True)
    return bool(done.stdout.strip())


def start_as_dead_harness(engine: ContainerEngine, registry: Path, name: str) -> None:
    subprocess.run([sys.executable, "-c", HARNESS, str(registry), name, BASE_TAG, *engine.argv()], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


@pytest.fixture
def names(engine: ContainerEngine) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for name in made:    # one by one: a name already gone fails the whole `rm`
        subprocess.run(engine.argv("rm", "-f", name), capture_output=True, timeout=300)


def test_a_dead_harness_containers_go_on_the_next_start_and_no_one_elses(engine: ContainerEngine, tmp_path: Path,
                                                                         names: list[str]) -> None:
    here, other = tmp_path / "data" / "pids", tmp_path / "other-data" / "pids"
    tag = os.urandom(4).hex()
    dead, elsewhere, live = (f"sm-reaper-test-{who}-{tag}" for who in ("dead", "elsewhere", "live"))
    names += [dead, elsewhere, live]
    start_as_dead_harness(engine, here, dead)
    start_as_dead_harness(engine, other, elsewhere)      # another store's: its own start removes it, never ours
    previous = reaper._registry
    reaper.use(here)                                     # this process: a live harness on the same data dir
    try:
        reaper.register_container(live, engine.argv())
        subprocess.run(engine.argv("run", "-d", "--name", live, "--network", "none",
                                   *[a for k, v in reaper.labels().items() for a in ("--label", f"{k}={v}")],
                                   BASE_TAG, "tail", "-f", "/dev/null"), check=True, capture_output=True)
        assert all(running(engine, n) for n in names)
        assert reaper.reap_containers(here) == [dead]
    finally:
        reaper.use(previous)
    assert not running(engine, dead) and running(engine, live) and running(engine, elsewhere)
    assert sorted(p.name for p in here.iterdir()) == [f"container-{live}"]   # the dead one's record is gone too
    assert reaper.reap_containers(other) == [elsewhere] and not running(engine, elsewhere)
