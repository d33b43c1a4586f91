"""Launch requests are checked field by field against config.json; the restart banner's code watch."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutator.server.codewatch import CodeWatch
from mutator.server.launch import LaunchError, argv_for_test, launch_argv, settings


@pytest.mark.parametrize("body", [
    {"suite": "clean-train", "val": "clean-train"},
    {"suite": "/etc", "val": "clean-val"},
    {"suite": "clean-train", "val": "clean-val", "holdout": "clean-val"},
    {"suite": "clean-train", "val": "clean-val", "seed": "../../x"},
    {"suite": "clean-train", "val": "clean-val", "seed": "csv-clean", "strategy": "greedy",
     "model": "claude-haiku-4-5", "replicates": 0, "rounds": 1},
    {"suite": "clean-train", "val": "clean-val", "seed": "csv-clean", "strategy": "greedy", "model": "gpt-x",
     "replicates": 1, "rounds": 1},
])
def test_launch_fields_are_checked_against_the_config(body, tmp_path):
    with pytest.raises(LaunchError):
        launch_argv(body, settings(None), tmp_path)


def test_a_valid_launch_is_a_dry_run_into_the_store(tmp_path):
    argv = launch_argv({"suite": "clean-train", "val": "clean-val", "holdout": "clean-test",
                        "seed": "csv-clean", "strategy": "greedy", "model": "claude-haiku-4-5",
                        "replicates": "2", "rounds": 3},
                       settings(None), tmp_path)
    assert "--real" not in argv and argv[argv.index("--data-dir") + 1] == str(tmp_path)
    assert argv[argv.index("--holdout") + 1] == "clean-test" and argv[argv.index("--replicates") + 1] == "2"
    with pytest.raises(LaunchError):
        argv_for_test({"run_id": "run-1; rm -rf /", "suite": "clean-test"}, settings(None), tmp_path)


def test_code_watch_turns_stale_when_a_server_file_changes(tmp_path):
    for name in ("server.py", "db.py"):
        (tmp_path / name).write_text("x = 1\n")
    watch = CodeWatch([tmp_path / "server.py", tmp_path / "db.py"])
    assert not watch.stale
    (tmp_path / "server.py").write_text("x = 2  # edited\n")
    assert watch.stale


def test_code_watch_covers_every_loaded_server_module():
    from mutator.server.app import CODE, create_app
    root = Path(__file__).resolve().parents[3]
    names = {str(path.relative_to(root)) for path in create_app()[CODE].paths}
    assert {"mutator/server/app.py", "mutator/server/after.py", "mutator/server/queries.py",
            "mutator/server/common.py", "mutator/store/db.py"} <= names
