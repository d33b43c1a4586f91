"""Tamper evidence: a mutator that writes into the seed, a val answer key and `../`; the grader never sees the
skill; a suite changed mid-run stops the run naming it."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from eval.snapshot import hash_tree
from eval.suite import Suite, SuiteError, check_unchanged, load_suite
from mutator.config import load_settings
from mutator.round.loop import Loop
from mutator.round.progress import Progress
from mutator.round.session import Agents, Suites
from sandbox import get_launcher
from strategies import make_strategy
from tests.conftest import ROOT

EVIL = """import pathlib, sys
for target, text in (({seed!r}, "tampered seed"), ({answer!r}, "tampered key"), ("../evil.txt", "x")):
    try:
        with open(target, "a") as f:
            f.write(text)
    except OSError as err:
        print(f"refused: {{target}}: {{err}}", file=sys.stderr)
import runpy
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def world(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    seed = tmp_path / "seed" / "csv-clean"
    shutil.copytree(ROOT / "suites" / "csv-clean", seed)
    for name in ("clean-train", "clean-val"):
        shutil.copytree(ROOT / "suites" / name, tmp_path / "suites" / name)
    answer = sorted((tmp_path / "suites" / "clean-val" / "answers").iterdir())[0]
    evil = tmp_path / "evil_mutator.py"
    evil.write_text(EVIL.format(seed=str(seed / "SKILL.md"), answer=str(answer)))
    return seed, tmp_path / "suites" / "clean-train", tmp_path / "suites" / "clean-val", evil


def run_loop(tmp_path: Path, sandbox: str) -> tuple[Path, Path, Suite, dict]:
    seed, train, val, evil = world(tmp_path)
    suites = Suites(train=load_suite(train), val=load_suite(val), holdout=None)
    before = {p: hash_tree(p) for p in (seed, train, val)}
    settings = load_settings({"data_dir": tmp_path / "data", "rounds": 1, "replicates": 1, "skill_dir": seed,
                              "concurrency": 4})
    build = (sys.executable, str(ROOT / "fakes" / "fake_agent.py"))
    agents = Agents(build_argv=build, build_id="fake", mutator_id="evil",
                    mutator_argv=(sys.executable, str(evil), str(ROOT / "fakes" / "fake_mutator.py")))
    loop = Loop(settings, suites, agents,
                get_launcher(sandbox), make_strategy("greedy", {}), progress=Progress(open("/dev/null", "w")))
    loop.execute()
    with sqlite3.connect(tmp_path / "data" / "mutator.db") as conn:
        conn.row_factory = sqlite3.Row
        attempt = dict(conn.execute("select * from attempts where round = 1").fetchone())
    changed = {p.name for p, h in before.items() if hash_tree(p) != h}
    return tmp_path / "data", seed, suites.val, {"attempt": attempt, "changed": changed}


def test_under_none_the_attempt_is_failed_naming_what_it_wrote(tmp_path: Path) -> None:
    data, seed, val, found = run_loop(tmp_path, "none")
    attempt = found["attempt"]
    assert attempt["verdict"] == "FAILED" and attempt["error"].startswith("mutator wrote outside its skill: ")
    assert f"seed skill {seed}/SKILL.md" in attempt["error"]
    assert "the val suite" in attempt["error"] and "evil.txt" in attempt["error"]
    assert "answers/" not in attempt["error"]  # a val file's name is a val detail: the suite is named, not its files
    assert found["changed"] == {"csv-clean", "clean-val"}   # none cannot stop the writes, only catch them
    with pytest.raises(SuiteError, match="suite clean-val changed on disk while the run was using it"):
        check_unchanged(val)  # so the run's next evaluation on val stops it

    # the seed stays tampered: the same command now names a new run, and says why, naming the file
    shutil.rmtree(val.path)
    shutil.copytree(ROOT / "suites" / "clean-val", val.path)
    settings = load_settings({"data_dir": data, "rounds": 1, "replicates": 1, "skill_dir": seed, "concurrency": 4})
    said = tmp_path / "progress.txt"
    loop = Loop(settings, Suites(train=load_suite(tmp_path / "suites" / "clean-train"), val=load_suite(val.path),
                                 holdout=None),
                Agents(build_argv=(sys.executable, str(ROOT / "fakes" / "fake_agent.py")), build_id="fake",
                       mutator_id="evil", mutator_argv=()),
                get_launcher("none"), make_strategy("greedy", {}), progress=Progress(said.open("w")))
    loop.open_run()
    loop.lock.release()
    first = sqlite3.connect(data / "mutator.db").execute("select id from runs order by created_at").fetchone()[0]
    assert loop.session.run_id != first
    assert (f"warning: the seed skill {seed} changed since {first} (same suites and settings): SKILL.md; this "
            f"starts a new run. Restore the seed to resume {first}") in said.read_text()


@pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bwrap")
def test_under_bwrap_the_seed_and_suites_are_byte_identical(tmp_path: Path) -> None:
    _, _, _, found = run_loop(tmp_path, "bwrap")
    assert found["changed"] == set()
    assert "wrote outside" not in (found["attempt"]["error"] or "")
    assert not list((tmp_path / "data" / "workspaces").glob("*/evil.txt"))


def test_a_suite_changed_mid_run_stops_the_next_evaluation(tmp_path: Path) -> None:
    suite_dir = tmp_path / "clean-val"
    shutil.copytree(ROOT / "suites" / "clean-val", suite_dir)
    suite = load_suite(suite_dir)
    check_unchanged(suite)  # as loaded: fine
    (suite_dir / "grader.log").write_text("a grader writing into its own folder\n")
    with pytest.raises(SuiteError, match="suite clean-val changed on disk while the run was using it"):
        check_unchanged(suite)
