"""--watch --once over a growing trace folder: below --min-traces a tick is skipped-trigger; past it the
suites are rebuilt, the loop runs (dry run: the fakes and the fake judge, the real loop, store and graders)
and leaves a proposal, never a deploy; the test split stays byte-identical across ticks."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

from mutator.mining.mine import MineOptions
from mutator.mining.watch import WatchOptions, tick
from mutator.store.db import connect
from tests.conftest import run_cli
from tests.mutator.mining.transcripts import grow, seed_skill


def triggers(data: Path) -> list[dict]:
    db = sqlite3.connect(data / "mutator.db")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("select * from triggers order by id")]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_watch_once_skips_below_the_threshold_then_proposes_and_keeps_the_test_split(tmp_path: Path) -> None:
    skill = seed_skill(tmp_path)
    before = snapshot(skill)
    projects, out, data = tmp_path / "projects", tmp_path / "suites" / "live", tmp_path / "data"
    watch = ("--watch", str(projects), "--once", "--skill-dir", str(skill), "--out", str(out), "--min-traces", "6",
             "--data-dir", str(data), "--seed", "3", "--replicates", "1")
    grow(projects, 0, 4)
    first = run_cli(*watch, "--rounds", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    assert [r["outcome"] for r in triggers(data)] == ["skipped-trigger"]
    assert triggers(data)[0]["new_eligible"] == 4 and not out.exists()

    grow(projects, 4, 8)
    second = run_cli(*watch, "--rounds", "2")
    assert second.returncode == 0, second.stderr[-3000:] + second.stdout[-3000:]
    rows = triggers(data)
    assert [r["outcome"] for r in rows] == ["skipped-trigger", "proposed"], rows[-1]["reason"]
    assert rows[1]["new_eligible"] == 12 and rows[1]["run_id"] and rows[1]["proposal_id"]
    db = sqlite3.connect(data / "mutator.db")
    assert db.execute("select status, run_id from proposals where id = ?", [rows[1]["proposal_id"]]).fetchone() == \
        ("proposed", rows[1]["run_id"])
    assert db.execute("select count(*) from deployments").fetchone() == (0,)      # never deploys
    assert snapshot(skill) == before
    run = db.execute("select suite, val, holdout, rounds_done from runs where id = ?", [rows[1]["run_id"]]).fetchone()
    assert run == ("live-train", "live-val", "live-test", 2)
    names = {r[0] for r in db.execute("select distinct name from tests")}
    assert names == {"rubric"}                                                   # judge-graded mined tasks
    test_split = snapshot(out / "live-test")
    assert test_split

    grow(projects, 12, 6)
    third = run_cli(*watch, "--rounds", "1")
    assert third.returncode == 0, third.stderr[-3000:]
    rows = triggers(data)
    assert rows[2]["outcome"] in ("proposed", "skipped-delta") and rows[2]["new_eligible"] == 6
    assert snapshot(out / "live-test") == test_split                             # the holdout stays a holdout
    import json
    record = json.loads((out / "mining.json").read_text())
    assert record["test_frozen"] and record["kept"] > 12
    assert not set(record["splits"]["test"]["sessions"]) & (set(record["splits"]["train"]["sessions"])
                                                           | set(record["splits"]["val"]["sessions"]))


def test_a_failing_loop_is_recorded_as_failed(tmp_path: Path) -> None:
    skill = seed_skill(tmp_path)
    projects, out, data = tmp_path / "projects", tmp_path / "suites" / "live", tmp_path / "data"
    grow(projects, 0, 5)
    opts = WatchOptions(MineOptions(projects, skill, out, seed=1, rebuild=True), data / "mutator.db", min_traces=5)
    clock = map(float, itertools.count(100)).__next__
    row = tick(opts, clock=clock, run_child=lambda argv: (3, "stopped: budget"), say=lambda text: None)
    assert row["outcome"] == "failed" and "exited 3" in row["reason"] and row["at"] == 100.0
    # a failed tick does not move the watermark: the next one counts the same requests as new
    row = tick(opts, clock=clock, run_child=lambda argv: (0, "No proposal: the champion is the seed"),
               say=lambda text: None)
    assert row["outcome"] == "skipped-delta" and row["new_eligible"] == 5 and "No proposal" in row["reason"]
    row = tick(opts, clock=clock, run_child=lambda argv: (0, ""), say=lambda text: None)
    assert row["outcome"] == "skipped-trigger" and row["new_eligible"] == 0
    assert [r["outcome"] for r in connect(data / "mutator.db")["triggers"].rows] == \
        ["failed", "skipped-delta", "skipped-trigger"]


def test_one_watch_per_suites_folder_whatever_the_data_dir(tmp_path: Path) -> None:
    """A second watch of the same --out refuses even with another --data-dir (the lock is beside the folder)."""
    import pytest

    from mutator.mining.watch import watch, watch_lock
    from mutator.store.lock import LockHeld, RunLock
    skill = seed_skill(tmp_path)
    out = tmp_path / "suites" / "live"
    opts = WatchOptions(MineOptions(tmp_path / "projects", skill, out, rebuild=True), tmp_path / "data" / "mutator.db")
    other = WatchOptions(opts.mining, tmp_path / "other-data" / "mutator.db")
    held = RunLock.acquire_file(watch_lock(out), what="the other watch")
    try:
        for each in (opts, other):
            with pytest.raises(LockHeld, match="the watch of"):
                watch(each, once=True)
    finally:
        held.release()
    assert not (tmp_path / "data").exists() and not (tmp_path / "other-data").exists()   # refused before a store
    (tmp_path / "projects").mkdir()
    assert watch(other, once=True) == 0          # free again: one skipped-trigger tick


def test_a_ticks_judge_pass_counts_in_the_stores_spend_and_the_daily_budget(tmp_path: Path) -> None:
    """The judge pass over the mined requests is a model call like any other: its cost is stored on the tick,
    summed into the store's spend (Cost page, daily budget), and a reached daily budget stops the next tick
    before it judges anything."""
    import json

    from eval.cost import Price
    from mutator.after import spend
    skill = seed_skill(tmp_path)
    projects, out, data = tmp_path / "projects", tmp_path / "suites" / "live", tmp_path / "data"
    grow(projects, 0, 6)
    price = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)
    opts = WatchOptions(MineOptions(projects, skill, out, seed=1, rebuild=True, judge="fake", judge_price=price),
                        data / "mutator.db", min_traces=5)
    clock = map(float, itertools.count(1_800_000_000)).__next__
    row = tick(opts, clock=clock, run_child=lambda argv: (0, "No proposal: the champion is the seed"),
               say=lambda text: None)
    judged = json.loads((out / "mining.json").read_text())["judge"]
    assert row["outcome"] == "skipped-delta" and judged["calls"] > 0 and judged["cost_usd"] > 0
    db = connect(data / "mutator.db")
    assert [r["judge_cost_usd"] for r in db["triggers"].rows] == [judged["cost_usd"]]
    calls = [c for c in spend.calls(db) if c["kind"] == "mining judge"]
    assert [(c["usd"], c["model"]) for c in calls] == [(judged["cost_usd"], "judge")]
    assert row["at"] < calls[0]["at"] < row["finished_at"]   # charged as the pass ended, before the loop ran
    assert spend.spent_since(db, 0.0) == judged["cost_usd"]          # nothing else spent in this store
    # a daily budget already used up: the next tick past the trigger records why and judges nothing
    db["spend_limits"].upsert({"name": "daily", "usd": judged["cost_usd"], "set_at": 0.0}, pk="name")
    db.conn.commit()
    grow(projects, 6, 6)
    before = (out / "mining.json").read_bytes()
    row = tick(opts, clock=lambda: 1_800_000_100.0, run_child=lambda argv: (0, ""), say=lambda text: None)
    assert row["outcome"] == "failed" and row["reason"].startswith("daily budget reached")
    assert (out / "mining.json").read_bytes() == before and row.get("judge_cost_usd") is None
