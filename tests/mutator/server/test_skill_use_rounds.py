"""Skill use by round (mutator/server/skill_use_view.py): every attempt of the run is listed, each without rates
with the store's reason (no cells, no readable stream, no skill use recorded, stopped), and a run with no rates
anywhere says so once."""

from __future__ import annotations

import sqlite3

from mutator.server.skill_use_view import NO_TELEMETRY, NONE_IN_RUN, skill_use, trigger_rounds, why_none
from mutator.store.db import connect_readonly


def _val_attempts(store) -> tuple[str, list[tuple[int, int]]]:
    with sqlite3.connect(store / "mutator.db") as conn:
        run_id = conn.execute("select id from runs").fetchone()[0]
        return run_id, conn.execute("select id, val_evaluation_id from attempts where run_id = ? and "
                                    "val_evaluation_id is not null order by round, sibling", [run_id]).fetchall()


def test_each_round_without_rates_says_why_from_its_cells(store_copy):
    run_id, attempts = _val_attempts(store_copy)
    (a1, ev1), (a2, ev2), (a3, ev3) = attempts[-3:]
    with sqlite3.connect(store_copy / "mutator.db") as conn:
        conn.execute("update evaluations set trigger_recall = null, false_trigger_rate = null "
                     "where id in (?, ?, ?)", [ev1, ev2, ev3])
        conn.execute("delete from tests where cell_id in (select id from cells where evaluation_id = ?)", [ev1])
        conn.execute("delete from cells where evaluation_id = ?", [ev1])                        # no cells
        conn.execute("update cells set skill_use = null, agent_subtype = '' where evaluation_id = ?", [ev2])
        conn.execute("update cells set skill_use = null where evaluation_id = ?", [ev3])         # no skill use
    db = connect_readonly(store_copy / "mutator.db")
    rounds, own = trigger_rounds(db, run_id, "val", attempt_id=a2)
    by_attempt = {r["attempt_id"]: r["reason"] for r in rounds}
    assert len(rounds) == db.execute("select count(*) from attempts where run_id = ?", [run_id]).fetchone()[0]
    assert by_attempt[a1] == "its val evaluation has no cells"
    assert by_attempt[a2].startswith("no agent stream of its ") and own == by_attempt[a2]
    assert by_attempt[a3].startswith("none of its ") and "recorded skill use" in by_attempt[a3]
    assert all(by_attempt[a] is None for a, _ in attempts[:-3])   # rated rounds carry their rates
    found = skill_use(db, candidate=(ev2, None), parent=(None, None), data_dir=None, run_id=run_id,
                      attempt_id=a2, seed_evaluation=attempts[0][1])
    assert found["candidate"] is None and found["reason"] == by_attempt[a2] and found["run_reason"] is None


def test_a_run_with_no_rates_anywhere_says_so_once(store_copy):
    run_id, attempts = _val_attempts(store_copy)
    with sqlite3.connect(store_copy / "mutator.db") as conn:
        conn.execute("update evaluations set trigger_recall = null, false_trigger_rate = null")
        conn.execute("update cells set skill_use = null")
    db = connect_readonly(store_copy / "mutator.db")
    attempt_id, evaluation_id = attempts[-1]
    # an evaluated candidate and the seed without telemetry: the run is not read attempt by attempt
    found = skill_use(db, candidate=(evaluation_id, None), parent=(None, None), data_dir=None, run_id=run_id,
                      attempt_id=attempt_id, seed_evaluation=attempts[0][1])
    assert found["trigger_rounds"] == [] and found["run_reason"] == NO_TELEMETRY.format(split="val")
    assert found["reason"].startswith("none of its ")
    # an attempt with no evaluation reads the rounds, and none has rates: said once
    found = skill_use(db, candidate=(None, None), parent=(None, None), data_dir=None, run_id=run_id,
                      attempt_id=attempt_id, seed_evaluation=attempts[0][1])
    assert found["trigger_rounds"] == [] and found["run_reason"] == NONE_IN_RUN.format(split="val")


def test_an_attempt_without_an_evaluation_says_why():
    row = {"evaluation_id": None, "verdict": None, "status": "running", "error": None, "screen_cells": None,
           "screen_decision": None}
    assert why_none(row, {}, "val", stale=True) == "stopped: process died before its evaluation"
    assert why_none(row, {}, "val", stale=False) == "no val evaluation yet (in progress)"
    assert why_none({**row, "verdict": "SCREENED", "status": "screened", "screen_cells": 6,
                     "screen_decision": "loss"}, {}, "val", stale=False) == (
        "no val evaluation: the screen stopped the candidate after 6 train cells (loss)")
    assert why_none({**row, "verdict": "FAILED", "status": "failed", "error": "mutator timed out"}, {}, "val",
                    stale=False) == "no val evaluation: the mutation failed (mutator timed out)"
