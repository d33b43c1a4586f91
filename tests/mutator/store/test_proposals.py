"""The proposals' rows: a new proposal and its decision written together, an open one superseded by a newer
one, each decision moving the status, and a store without the tables read as having none."""

from __future__ import annotations

import sqlite_utils

from mutator.store import proposals as P

from .conftest import RUN


def new(genome: str) -> P.NewProposal:
    return P.NewProposal(run_id=RUN, genome_hash=genome, seed_hash="s" * 64, skill_name="csv-clean", diff="d",
                         val="{}", test="null", gates="[]", target_dir=None)


def test_a_newer_proposal_supersedes_the_open_one_in_one_transaction(db) -> None:
    first = P.insert_proposal(db, new("a" * 64), note="run.py --propose", at=1.0, supersedes=[])
    assert P.open_proposal_ids(db, RUN) == [first]
    open_ones = P.open_proposal_ids(db, RUN)
    second = P.insert_proposal(db, new("b" * 64), note="auto", at=2.0, supersedes=open_ones)
    assert P.proposal_row(db, first)["status"] == "superseded"
    assert P.latest_of_run(db, RUN) == {"id": second, "status": "proposed"}
    assert [d["action"] for d in P.decisions_of_run(db, RUN)] == ["propose", "propose", "supersede"]
    assert P.decisions_of(db, first)[-1]["note"] == f"superseded by proposal {second}"
    assert P.recent_proposal_ids(db) == [second, first]
    assert [p["id"] for p in P.proposals_of(db, RUN, "b" * 64)] == [second]
    assert "diff" not in P.listing_rows(db, 10)[0]


def test_a_decision_moves_the_status_and_is_kept(db) -> None:
    pid = P.insert_proposal(db, new("a" * 64), note="n", at=1.0, supersedes=[])
    P.record_decision(db, pid, "reject", "proposed", "rejected", "late", 3.0)
    assert P.proposal_row(db, pid)["status"] == "rejected" and P.proposal_row(db, pid)["updated_at"] == 3.0
    assert [(d["action"], d["status_to"], d["note"]) for d in P.decisions_of(db, pid)][-1] == \
        ("reject", "rejected", "late")
    assert P.proposal_row(db, pid + 1) is None


def test_a_store_without_proposals_has_none() -> None:
    bare = sqlite_utils.Database(memory=True)
    assert P.latest_of_run(bare, RUN) is None and P.decisions_of_run(bare, RUN) == []
