"""Every path flag works as typed: relative --data-dir, --config, --out resolved once against the cwd.

The demo runs with relative paths from the project root and from another folder; --test-run and
--export then work over the same store from a third folder, and --serve shows it from another folder.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import ROOT, copy_store

SMALL = ("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "1",
         "--replicates", "1")


def run_from(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def run_id_of(data_dir: Path) -> str:
    with sqlite3.connect(data_dir / "mutator.db") as conn:
        (run_id,) = conn.execute("select id from runs where kind = 'evolve'").fetchone()
    return run_id


def test_demo_with_relative_data_dir_and_config_from_the_project_root(tmp_path: Path) -> None:
    data_dir = tmp_path / "runs" / "exp1"
    rel = os.path.relpath(data_dir, ROOT)
    assert not Path(rel).is_absolute()
    result = run_from(ROOT, *SMALL, "--data-dir", rel, "--config", "./config.json")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (data_dir / "mutator.db").is_file() and (data_dir / "genomes.git").is_dir()
    run_id = run_id_of(data_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rel_from_elsewhere = os.path.relpath(data_dir, elsewhere)
    config = os.path.relpath(ROOT / "config.json", elsewhere)
    tested = run_from(elsewhere, "--test-run", run_id, "--suite", "clean-test", "--replicates", "1",
                      "--data-dir", rel_from_elsewhere, "--config", config)
    assert tested.returncode == 0, tested.stderr[-3000:]
    exported = run_from(elsewhere, "--export", run_id, "--out", "./tables", "--data-dir", rel_from_elsewhere,
                        "--config", config)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert (elsewhere / "tables" / f"{run_id}-attempts.csv").is_file()
    assert not (ROOT / "tables").exists()


def test_demo_from_another_folder_with_a_config_whose_paths_are_relative_to_itself(tmp_path: Path) -> None:
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    tree = json.loads((ROOT / "config.json").read_text())
    tree["skillDir"] = os.path.relpath(ROOT / tree["skillDir"], cfg_dir)
    tree["suites"] = {name: os.path.relpath(ROOT / path, cfg_dir) for name, path in tree["suites"].items()}
    (cfg_dir / "config.json").write_text(json.dumps(tree))
    result = run_from(tmp_path, *SMALL, "--data-dir", "./runs/exp1", "--config", "./cfg/config.json")
    assert result.returncode == 0, result.stderr[-3000:]
    data_dir = tmp_path / "runs" / "exp1"
    run_id = run_id_of(data_dir)
    again = run_from(tmp_path, *SMALL, "--data-dir", "runs/exp1", "--config", "cfg/config.json")
    assert again.returncode == 0 and f"Resuming {run_id}" in again.stdout + again.stderr, again.stderr[-2000:]
    assert "0 cells run by this command" in again.stdout
    # a suite given as a relative path (not a config name) resolves against the cwd too
    suite_rel = os.path.relpath(ROOT / "suites" / "clean-test", tmp_path)
    tested = run_from(tmp_path, "--test-run", run_id, "--suite", suite_rel, "--replicates", "1",
                      "--data-dir", "runs/exp1", "--config", "cfg/config.json")
    assert tested.returncode == 0, tested.stderr[-3000:]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_from_another_folder_shows_the_store_of_a_relative_data_dir(demo_store, tmp_path: Path) -> None:
    data_dir = copy_store(demo_store[0], tmp_path / "runs" / "exp1")   # the session's demo store, copied
    run_id = run_id_of(data_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--serve", "--port", str(port), "--data-dir",
                               os.path.relpath(data_dir, elsewhere)], cwd=elsewhere, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        body, deadline = None, time.monotonic() + 60
        while body is None and server.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/runs", timeout=2) as response:
                    body = json.loads(response.read())
            except OSError:
                time.sleep(0.2)
        assert body is not None, server.stderr.read() if server.poll() is not None else "no answer in 60 s"
        assert run_id in json.dumps(body)                          # the run stored under the relative data dir
    finally:
        server.terminate()
        server.wait(10)
    assert not (elsewhere / "runs").exists() and not (elsewhere / "data").exists()   # nothing made beside the cwd
