"""Shared fixtures: one real dry run per session (a small store the API and browser tests read)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import built_once, copy_store

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "test-token-123"
ARTIFACTS = Path(__file__).parent / "artifacts"   # the browser tests' screenshots
# `python -c LOCK_HOLDER DATA_DIR RUN_ID`: holds a run's lock as its writer would, says "held", then waits to be
# killed (a writer dying with no write, as kill -9 leaves it)
LOCK_HOLDER = """import sys, time
from pathlib import Path
from mutator.store.lock import RunLock
RunLock.acquire(Path(sys.argv[1]), sys.argv[2], what="the run")
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="session")
def dry_store(tmp_path_factory) -> Path:
    """A store written by `run.py` itself: 3 rounds × 2 replicates of the demo with the winner's-curse guard,
    the meta skill every 2 rounds and a solve phase (min score 0: the fakes cannot solve bare), plus one test
    run."""
    return built_once(tmp_path_factory, "dry-store", _build_dry_store) / "data"


def _build_dry_store(folder: Path) -> None:
    data_dir = folder / "data"
    common = ["--data-dir", str(data_dir), "--concurrency", "8"]
    extras = ["--confirm", "--meta-skill-every", "2", "--solve", "--solve-attempts", "2",
              "--solve-min-score", "0"]
    # the screen off (screen.tasks 0): every round's candidate queries val, the shape these tests read
    subprocess.run([sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val",
                    "--holdout", "clean-test", "--rounds", "3", "--replicates", "2", *extras, *common],
                   cwd=ROOT, check=True, capture_output=True, timeout=600,
                   env={**os.environ, "SKILL_MUTATOR_SCREEN_TASKS": "0"})
    run_id = _run_id(data_dir)
    subprocess.run([sys.executable, str(ROOT / "run.py"), "--test-run", run_id, "--suite", "clean-test",
                    "--data-dir", str(data_dir)], cwd=ROOT, check=True, capture_output=True, timeout=600)


def _run_id(data_dir: Path) -> str:
    with sqlite3.connect(data_dir / "mutator.db") as conn:
        return conn.execute("select id from runs").fetchone()[0]


@pytest.fixture(scope="session")
def run_id(dry_store: Path) -> str:
    return _run_id(dry_store)


@pytest.fixture
def store_copy(dry_store: Path, tmp_path: Path) -> Path:
    """A private copy for tests that write (launches, doctored rows)."""
    target = tmp_path / "project" / "data"
    copy_store(dry_store, target)
    return target


@pytest.fixture(scope="session")
def mixed_store(tmp_path_factory) -> Path:
    """One store with every shape the loop writes: a greedy demo run (its round 4 is a CRITIC no-change
    attempt, genome == parent; round 5 a broken reference), a branching run (siblings, a better sibling
    rejecting a gate-passing one), a population run (children off non-incumbent parents, crossover refs, KEEPs
    that are not the leader), an A/A run (`aa-…`, newest of all), and test runs of the greedy and branching
    runs after they proposed."""
    return built_once(tmp_path_factory, "mixed-store", _build_mixed_store) / "data"


def _build_mixed_store(folder: Path) -> None:
    data_dir = folder / "data"
    base = [sys.executable, str(ROOT / "run.py"), "--suite", "clean-train", "--val", "clean-val",
            "--replicates", "1", "--data-dir", str(data_dir), "--concurrency", "4"]
    for extra in (["--rounds", "5"], ["--rounds", "2", "--strategy", "branching"],
                  ["--rounds", "3", "--strategy", "population"], ["--aa", "3"]):
        subprocess.run([*base, *extra], cwd=ROOT, check=True, capture_output=True, timeout=600)
    with sqlite3.connect(data_dir / "mutator.db") as conn:
        tested = [conn.execute(f"select id from runs where strategy = '{s}'").fetchone()[0]
                  for s in ("greedy", "branching")]
    for run_id in tested:
        subprocess.run([sys.executable, str(ROOT / "run.py"), "--test-run", run_id, "--suite", "clean-test",
                        "--data-dir", str(data_dir)], cwd=ROOT, check=True, capture_output=True, timeout=600)


# ---- the browser tests' fixtures (a module with its own `store` or `server` overrides these)
# ----------------
@pytest.fixture
def page():
    """A page of the system Chromium (tests/browser_support.py); console errors collected on it."""
    from tests.browser_support import chromium_page
    with chromium_page(ARTIFACTS) as pg:
        yield pg


@pytest.fixture
def store(mixed_store: Path, tmp_path: Path) -> Path:
    """A private copy of the mixed store, for browser tests that write to it (live updates)."""
    return copy_store(mixed_store, tmp_path / "project" / "data")


@pytest.fixture
def server(store: Path):
    """The dashboard over `store`, on a real loopback port."""
    from tests.browser_support import Server
    srv = Server(store, token=TOKEN)
    yield srv
    srv.stop()


@pytest.fixture
def launching_server(store_copy: Path):
    """The dashboard over a private copy of the dry store, for tests that launch runs from it: every launched
    run still going at the end is stopped (SIGTERM), never left behind."""
    from tests.browser_support import Server
    srv = Server(store_copy, token=TOKEN)
    yield srv
    for proc in srv.processes():
        if proc["status"] == "running":
            os.kill(proc["pid"], signal.SIGTERM)
    srv.stop()

