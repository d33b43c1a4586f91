"""A sealed test: every finished test is a numbered look at its suite for the skill (a cached repeat of the same
champion is that look again), and a sealed run refuses to test a later champion on a suite it already tested."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from mutator.store.db import connect, loads
from mutator.store.looks import look_of, number_all, sealed_by
from tests.conftest import run_cli

ARGS = ("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--replicates", "1")


def looks(store: Path) -> list[tuple]:
    with sqlite3.connect(store) as conn:
        return conn.execute("select id, genome_hash, look, repeat_of, kind, status from test_runs order by id").fetchall()


def test_looks_rise_across_champions_not_repeats_and_a_sealed_run_refuses_a_later_champion(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = data / "mutator.db"
    first = run_cli(*ARGS, "--rounds", "1", "--data-dir", str(data))
    assert first.returncode == 0, first.stderr[-2000:]
    run_id = re.search(r"Run (run-[0-9a-f]+)", first.stdout).group(1)
    one = run_cli("--test-run", run_id, "--data-dir", str(data), "--no-control")
    again = run_cli("--test-run", run_id, "--data-dir", str(data), "--no-control")
    assert one.returncode == again.returncode == 0, (one.stderr + again.stderr)[-2000:]
    assert "Look 1 of 1 at test suite clean-test for this skill" in one.stdout
    assert "Look 1 of 1 at test suite clean-test for this skill, a repeat of test #1" in again.stdout
    assert "0 cells run" in again.stdout or "all cached" in again.stdout
    extended = run_cli(*ARGS, "--rounds", "2", "--data-dir", str(data))
    assert extended.returncode == 0, extended.stderr[-2000:]
    champion_1 = looks(store)[0][1]
    with sqlite3.connect(store) as conn:
        champion_2 = conn.execute("select incumbent_hash from runs where id = ?", [run_id]).fetchone()[0]
    assert champion_2 != champion_1                               # the demo's second round keeps a change
    two = run_cli("--test-run", run_id, "--data-dir", str(data), "--no-control")
    assert two.returncode == 0 and "Look 2 of 2 at test suite clean-test" in two.stdout
    assert looks(store) == [(1, champion_1, 1, None, "test", "done"), (2, champion_1, 1, 1, "test", "done"),
                            (3, champion_2, 2, None, "test", "done")]
    report = loads(sqlite3.connect(store).execute("select report from test_runs where id = 3").fetchone()[0])
    assert report["look"] == {"k": 2, "looks": 2, "repeat_of": None, "kind": "test", "sealed": False}
    # one replicate a side: no task can be flagged (smallest p 1/2), and the report says so
    assert not report["harm"]["seed"]["can_flag"] and report["harm"]["none"] is None
    assert "no task can be flagged" in two.stdout

    # sealed now: its first champion test on clean-test (#1, champion 1) is final, the current champion is refused
    sealed = run_cli("--test-run", run_id, "--data-dir", str(data), "--seal-test", "--no-control")
    assert sealed.returncode == 2
    assert f"{run_id} is sealed (sealTest) and its test on clean-test is final: test run #1 measured champion " \
           f"{champion_1[:12]} (after round 1)" in sealed.stderr
    assert len(looks(store)) == 3                                 # refused before any row or cell
    with sqlite3.connect(store) as conn:
        assert conn.execute("select seal_test from runs where id = ?", [run_id]).fetchone()[0] is None

    # the test rows deleted: the tests' evaluations are still in the store, so no test is "Look 1 of 1" again
    with sqlite3.connect(store) as conn:
        conn.execute("delete from test_runs")
    forgot = run_cli("--test-run", run_id, "--data-dir", str(data), "--seal-test", "--no-control")
    assert forgot.returncode == 2, forgot.stdout[-2000:]
    assert f"the store holds test evaluations on clean-test of champion(s) {champion_1[:12]} of skill" in forgot.stderr
    assert "Look 1 of 1" not in forgot.stdout and looks(store) == []


def _store(tmp_path: Path, tests: list[tuple[str, str, str, str]], seal: int | None = None):
    """A store with runs (id -> skill) and finished test rows (run, suite, genome, status)."""
    db = connect(tmp_path / "mutator.db")
    for run_id, skill in (("r1", "csv"), ("r2", "csv"), ("r3", "other")):
        db.execute("insert into runs (id, kind, status, skill_name, seal_test) values (?, 'evolve', 'done', ?, ?)",
                   [run_id, skill, seal if run_id == "r1" else None])
    for run_id, suite, genome, status in tests:
        db.execute("insert into test_runs (run_id, suite, genome_hash, round, status) values (?, ?, ?, 1, ?)",
                   [run_id, suite, genome, status])
    db.conn.commit()
    return db


def test_looks_count_champions_per_skill_and_suite_and_an_old_store_is_numbered_once(tmp_path: Path) -> None:
    db = _store(tmp_path, [("r1", "t", "A", "done"), ("r1", "t", "A", "done"), ("r2", "t", "B", "failed"),
                           ("r2", "t", "B", "done"), ("r3", "t", "C", "done"), ("r1", "u", "B", "done"),
                           ("r2", "t", "A", "done")])
    assert number_all(db) == 6                                    # the failed test is no look
    got = [(r["id"], r["look"], r["repeat_of"]) for r in db.query("select * from test_runs order by id")]
    # skill csv on t: A (look 1), A again (repeat of #1), B (look 2; #3 failed), A from another run (repeat of #1);
    # skill 'other' on t and csv on u count on their own
    assert got == [(1, 1, None), (2, 1, 1), (3, None, None), (4, 2, None), (5, 1, None), (6, 1, None), (7, 1, 1)]
    assert number_all(db) == 0
    new = look_of(db, skill_name="csv", suite="t", genome_hash="D")
    assert (new.k, new.repeat_of, new.looks) == (3, None, 3)
    assert sealed_by(db, "r1", "t", "A") is None                  # the same champion: its look again
    assert sealed_by(db, "r1", "t", "B")["id"] == 1 and sealed_by(db, "r1", "v", "B") is None


@pytest.mark.parametrize(("seal", "flag", "refused"), [(1, False, True), (None, True, True), (None, False, False)])
def test_refuse_sealed_reads_the_run_or_the_setting(tmp_path: Path, seal, flag, refused) -> None:
    from types import SimpleNamespace

    from mutator.validity.testrun import SealedTestError, refuse_sealed
    db = _store(tmp_path, [("r1", "t", "A", "done")], seal=seal)
    run = dict(db["runs"].get("r1"), incumbent_hash="B")
    suite = SimpleNamespace(name="t")
    if refused:
        with pytest.raises(SealedTestError, match=r"test run #1 measured champion A "):
            refuse_sealed(db, SimpleNamespace(seal_test=flag), run, suite)
    else:
        refuse_sealed(db, SimpleNamespace(seal_test=flag), run, suite)


def _evaluated(db, runs: dict[str, tuple[str, str]], evaluations: list[tuple[str, str]]) -> None:
    """Each run's seed and champion (attempts of both), and evaluations (genome, suite)."""
    for run_id, (seed, champion) in runs.items():
        db.execute("update runs set seed_hash = ?, incumbent_hash = ?, suite = 'train', val = 'val' where id = ?",
                   [seed, champion, run_id])
        for n, genome in enumerate((seed, champion)):
            db.execute("insert into attempts (run_id, round, sibling, genome_hash, status) values (?, ?, 0, ?, 'kept')",
                       [run_id, n, genome])
    for n, (genome, suite) in enumerate(evaluations):
        db.execute("insert into evaluations (key, genome_hash, suite, status) values (?, ?, ?, 'done')",
                   [f"k{n}", genome, suite])
    db.conn.commit()


@pytest.mark.parametrize("seal", [1, None])
def test_a_test_whose_rows_were_deleted_is_found_by_its_evaluations(tmp_path: Path, seal) -> None:
    from types import SimpleNamespace

    from mutator.store.looks import unrecorded
    from mutator.validity.testrun import SealedTestError, refuse_sealed
    db = _store(tmp_path, [("r1", "t", "A", "done")], seal=seal)
    _evaluated(db, {"r1": ("S", "B"), "r2": ("S", "A")}, [("S", "t"), ("A", "t"), ("B", "val"), ("B", "t")])
    run, suite = dict(db["runs"].get("r1")), SimpleNamespace(name="t")
    assert unrecorded(db, skill_name="csv", suite="t", genome_hash="B") == []      # A's test is on record
    db.execute("delete from test_runs")
    db.conn.commit()
    # the seed (measured beside every champion) and the champion about to be tested are no earlier look
    assert unrecorded(db, skill_name="csv", suite="t", genome_hash="B") == ["A"]
    assert unrecorded(db, skill_name="csv", suite="val", genome_hash="X") == []     # val: the run's own suite
    assert unrecorded(db, skill_name="other", suite="t", genome_hash="B") == []
    with pytest.raises(SealedTestError, match=r"test evaluations on t of champion\(s\) A of skill csv that no test "
                                              r"record \(table test_runs\) accounts for"):
        refuse_sealed(db, SimpleNamespace(seal_test=False), run, suite)
