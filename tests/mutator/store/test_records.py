"""The store owns its writes of `runs` and `attempts`: one RunRow makes a run row; verdicts and statuses are the
round's vocabulary (StrEnums stored as today's strings); an unknown verdict, status or column is refused."""

from __future__ import annotations

import json
import sqlite3

import pytest

from mutator.store.attempts import insert_attempt, update_attempt
from mutator.store.db import connect
from mutator.store.runs import RunRow, add_spend, insert_run, resume_run, update_run
from strategies.verdicts import AttemptStatus, RunStatus, Verdict

ROW = RunRow(id="r1", kind="evolve", strategy="greedy", strategy_opts="{}", seed_hash="s" * 64, skill_name="csv-clean",
             suite="clean-train", suite_hash="h1", val="clean-val", val_hash="h2", model="m", agent="fake@1",
             replicates=4, rounds_target=6, rng_seed=0, w_cost=0.1, w_steps=0.05, min_improvement=0.0, gate_z=1.0,
             config=json.dumps({"k": 1}), confirm=0)


@pytest.fixture
def db(tmp_path):
    db = connect(tmp_path / "mutator.db")
    yield db
    db.close()


def test_a_run_row_is_made_once_from_its_record_and_spend_adds_up(db):
    insert_run(db, ROW)
    add_spend(db, "r1", 0.25)
    add_spend(db, "r1", 0.5)
    update_run(db, "r1", status=RunStatus.STOPPED, pid=None, error="budget")
    resume_run(db, "r1", rounds_target=8)
    run = dict(db["runs"].get("r1"))
    assert (run["status"], run["incumbent_hash"], run["rounds_done"], run["cost_usd"], run["rounds_target"],
            run["error"], run["strategy"], run["confirm"], run["holdout"]) == \
        ("running", "s" * 64, 0, 0.75, 8, None, "greedy", 0, None)


def test_verdicts_and_statuses_are_stored_as_todays_strings(db, tmp_path):
    insert_run(db, ROW)
    seed = insert_attempt(db, run_id="r1", round=0, sibling=0, status=AttemptStatus.SEED, verdict=Verdict.SEED)
    one = insert_attempt(db, run_id="r1", round=1, sibling=0, status=AttemptStatus.PENDING)
    update_attempt(db, one, {"verdict": Verdict.KEEP, "status": AttemptStatus.decided(Verdict.KEEP)})
    two = insert_attempt(db, run_id="r1", round=2, sibling=0, status="pending")     # a plain string is checked too
    update_attempt(db, two, {"verdict": "CRITIC", "status": AttemptStatus.decided("CRITIC")})
    with sqlite3.connect(tmp_path / "mutator.db") as conn:
        stored = conn.execute("select id, status, typeof(status), verdict, typeof(verdict) from attempts "
                              "order by id").fetchall()
    assert stored == [(seed, "seed", "text", "SEED", "text"), (one, "kept", "text", "KEEP", "text"),
                      (two, "critic_rejected", "text", "CRITIC", "text")]
    assert json.dumps({"verdict": Verdict.KEEP}) == '{"verdict": "KEEP"}' and Verdict.KEEP == "KEEP"


@pytest.mark.parametrize(("fields", "error"), [
    ({"verdict": "KEPT"}, "'KEPT' is not a valid Verdict"),
    ({"status": "KEEP"}, "'KEEP' is not a valid AttemptStatus"),
    ({"verdit": "KEEP"}, "attempts has no column(s) ['verdit']"),
])
def test_an_unknown_verdict_status_or_column_is_refused_and_nothing_written(db, fields, error):
    insert_run(db, ROW)
    attempt = insert_attempt(db, run_id="r1", round=1, sibling=0, status=AttemptStatus.PENDING)
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")):
        update_attempt(db, attempt, fields)
    assert dict(db["attempts"].get(attempt))["verdict"] is None and "verdit" not in db["attempts"].columns_dict


def test_a_run_status_outside_the_vocabulary_is_refused(db):
    insert_run(db, ROW)
    with pytest.raises(ValueError, match="'done' is not a valid RunStatus"):
        update_run(db, "r1", status="done")
    assert db["runs"].get("r1")["status"] == "running"


def test_every_verdict_has_one_status():
    assert {AttemptStatus.decided(v) for v in Verdict} == set(AttemptStatus) - {AttemptStatus.PENDING,
                                                                                AttemptStatus.SCORED}
