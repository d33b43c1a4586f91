"""Shared fixtures: a tiny suite builder, the repo root, and the one runner of run.py (run_py)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

GRADER_OK = """import json, pathlib, sys
cell, task = sys.argv[1], sys.argv[2]
out = pathlib.Path(cell) / "output.txt"
print(json.dumps({"exists": float(out.exists()), "says_done": float(out.exists() and "done" in out.read_text())}))
"""

AGENT_OK = """import json, os, pathlib
stream = os.environ["SM_STREAM"]
with open(stream, "a") as f:
    f.write(json.dumps({"type": "system", "subtype": "init"}) + "\\n")
    f.write(json.dumps({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Write"}],
                        "usage": {"input_tokens": 1000, "output_tokens": 100}}}) + "\\n")
    pathlib.Path("output.txt").write_text("done")
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                        "usage": {"input_tokens": 1000, "output_tokens": 100}}) + "\\n")
"""


def make_suite(root: Path, name: str = "tiny", *, split: str = "val", tasks: int = 2,
               grader: str = GRADER_OK) -> Path:
    """A minimal valid suite: `tasks` tasks with one input file each and a JSON-printing grader."""
    suite = root / name
    (suite / "fixtures").mkdir(parents=True)
    (suite / "suite.md").write_text(f"---\nname: {name}\nsplit: {split}\nrunner: script\n---\nA tiny suite.\n")
    lines = []
    for i in range(tasks):
        task_id = f"t{i}"
        (suite / "fixtures" / task_id).mkdir()
        (suite / "fixtures" / task_id / "in.txt").write_text(f"task {i}\n")
        lines.append(json.dumps({"id": task_id, "prompt": f"Write done to output.txt ({i})",
                                 "inputs": ["in.txt"], "required": ["output.txt"]}))
    (suite / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    (suite / "run-eval.py").write_text(grader)
    return suite


@pytest.fixture
def tiny_suite(tmp_path: Path) -> Path:
    return make_suite(tmp_path / "suites")


@pytest.fixture
def ok_agent(tmp_path: Path) -> list[str]:
    script = tmp_path / "agent_ok.py"
    script.write_text(AGENT_OK)
    return [sys.executable, str(script)]


def environ_without(*prefixes: str, **extra: str) -> dict[str, str]:
    """This process's environment less every variable starting with one of `prefixes`, plus `extra`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(prefixes)}, **extra}


def run_py(*args: str, env: dict | None = None, cwd: Path = ROOT, timeout: float = 900,
           **kwargs) -> subprocess.CompletedProcess:
    """run.py as a user runs it, from `cwd` (the project's folder unless given), its output captured as
    text; `env` is the child's whole environment (this process's when None). The timeout is a hang guard."""
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, **kwargs)


run_cli = run_py   # the name most test files call it by


def with_sigint(argv: list[str], disposition: str = "default") -> list[str]:
    """argv run with SIGINT at its default ("default") or ignored ("ignore"), set by a tiny exec wrapper.

    Not preexec_fn: it runs between fork and exec, which can deadlock when the test process has threads (pytest-timeout's
    timer, a local API server), and a deadlocked child never starts: the test then hangs until its timeout.
    """
    wrapper = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN if sys.argv[1] == 'ignore' "
               "else signal.SIG_DFL); os.execv(sys.argv[2], sys.argv[2:])")
    return [sys.executable, "-c", wrapper, disposition, *argv]


DEMO_ARGS = ("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "6",
             "--replicates", "2")


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder built once per test session, however many xdist workers run it: the first worker to ask builds
    it under an OS lock, the others wait and reuse it (session fixtures are otherwise built once per worker).
    Tests only read it; a test that writes takes a private copy (copy_store)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base   # pytest-N/, shared by popen-gwN/
    target = root / f"built-once-{name}"
    with open(root / f"built-once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / f"built-once-{name}.done").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)
            (root / f"built-once-{name}.done").write_text("")
    return target


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """One real 6-round dry run of the demo (fakes, greedy), shared by the tests that read its store."""
    def build(folder: Path) -> None:
        keep_result(folder, run_cli(*DEMO_ARGS, "--data-dir", str(folder / "data")))

    folder = built_once(tmp_path_factory, "demo", build)
    return folder / "data", kept_result(folder)


@pytest.fixture(scope="session")
def demo_tested(demo_store, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """The demo store after one `--test-run` of its run on clean-test (built once from a copy of demo_store), and
    that command's result: the tests of the test run read it instead of each running the same 48 cells."""
    def build(folder: Path) -> None:
        data = copy_store(demo_store[0], folder / "data")
        with sqlite3.connect(data / "mutator.db") as conn:
            run_id = conn.execute("select id from runs").fetchone()[0]
        keep_result(folder, run_cli("--test-run", run_id, "--suite", "clean-test", "--data-dir", str(data)))

    folder = built_once(tmp_path_factory, "demo-tested", build)
    return folder / "data", kept_result(folder)


PLAIN_ARGS = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1")


@pytest.fixture(scope="session")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """One real dry run of PLAIN_ARGS (the config's model, no SKILL_MUTATOR_/SM_ variables), built once for the
    tests that each ran that same command: they read it, or take a copy_store to go on from it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILL_MUTATOR_", "SM_"))}

    def build(folder: Path) -> None:
        keep_result(folder, run_cli(*PLAIN_ARGS, "--data-dir", str(folder / "data"), env=env))

    folder = built_once(tmp_path_factory, "plain-run", build)
    return folder / "data", kept_result(folder)


def keep_result(folder: Path, result: subprocess.CompletedProcess) -> None:
    """Keeps a command's result beside what it built (the workers that did not run it read it back)."""
    assert result.returncode == 0, result.stderr[-3000:]
    (folder / "result.json").write_text(json.dumps({"args": result.args, "returncode": result.returncode,
                                                    "stdout": result.stdout, "stderr": result.stderr}))


def kept_result(folder: Path) -> subprocess.CompletedProcess:
    kept = json.loads((folder / "result.json").read_text())
    return subprocess.CompletedProcess(kept["args"], kept["returncode"], kept["stdout"], kept["stderr"])


def copy_store(source: Path, target: Path) -> Path:
    """A private copy of a data dir; the store itself through SQLite's backup API, since a reader closing
    elsewhere may remove the WAL's -shm file while a plain file copy is walking the folder."""
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("mutator.db*"))
    if (source / "mutator.db").is_file():
        origin = sqlite3.connect(f"file:{source / 'mutator.db'}?mode=ro", uri=True)
        with sqlite3.connect(target / "mutator.db") as copy:
            origin.backup(copy)
        origin.close()
    return target
