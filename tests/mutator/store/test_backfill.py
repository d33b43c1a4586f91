"""The dashboard's old derivation of verdict reasons and incumbents (kept for migration _v14), and the migration
that stores them in a store written before the loop stored its decisions."""

from __future__ import annotations

import json
import sqlite3
import tarfile
from pathlib import Path

import pytest

from mutator.server import queries
from mutator.store.backfill import annotate, incumbents
from mutator.store.db import connect, connect_readonly, migrate


def row(rnd, sibling, genome, verdict, *, parent=None, composite=None, delta=None, threshold=None, pool=None,
        status=None, error=None, critic=None, evaluated=True):
    return {"round": rnd, "sibling": sibling, "genome_hash": genome, "parent_hash": parent, "verdict": verdict,
            "status": status or {"KEEP": "kept", "REJECT": "rejected", "SEED": "seed"}.get(verdict, "pending"),
            "composite": composite, "delta": delta, "gate_threshold": threshold,
            "val_evaluation_id": 1 if evaluated and composite is not None else None,
            "pool_snapshot": json.dumps(pool) if pool else None, "error": error,
            "critic": json.dumps(critic) if critic else None}


SEED = row(0, 0, "s", "SEED", composite=0.5)


def test_population_rejects_a_gate_passing_child_that_misses_the_pool_cut():
    run = {"strategy": "population", "strategy_opts": {"pool": 2}, "kind": "evolve", "min_improvement": 0.0}
    rows = [SEED,
            row(1, 0, "a", "KEEP", parent="s", composite=0.7, delta=0.2, threshold=-0.03, pool=["a", "s"]),
            row(2, 0, "b", "KEEP", parent="a", composite=0.8, delta=0.1, threshold=-0.03, pool=["b", "a"]),
            row(2, 1, "c", "REJECT", parent="s", composite=0.6, delta=0.0, threshold=-0.03, pool=["b", "a"]),
            row(2, 2, "a", "REJECT", parent="s", composite=0.7, delta=0.0, threshold=-0.03, pool=["b", "a"])]
    annotate(run, rows, rows)
    assert rows[1]["reason"] == "kept: entered the pool as its leader (the new incumbent)"
    assert rows[3]["reason"] == "rejected: did not make the pool's top 2 (composite 0.6000 < 0.7000, the pool's last)"
    assert rows[4]["reason"] == "rejected: this genome was already in the pool (it adds nothing new)"
    assert incumbents(run, rows) == {0: "s", 1: "a", 2: "b"}


def test_branching_names_the_better_sibling_and_greedy_the_gate():
    run = {"strategy": "branching", "kind": "evolve"}
    rows = [SEED,
            row(1, 0, "a", "REJECT", parent="s", composite=0.55, delta=0.05, threshold=-0.03),
            row(1, 1, "b", "KEEP", parent="s", composite=0.60, delta=0.10, threshold=-0.03),
            row(1, 2, "c", "REJECT", parent="s", composite=0.40, delta=-0.10, threshold=-0.03)]
    annotate(run, rows, rows)
    assert rows[1]["reason"].startswith("rejected: sibling 1 was better (composite 0.6000 vs 0.5500)")
    assert rows[2]["reason"].startswith("kept: best of 3 siblings")
    assert rows[3]["reason"] == "rejected: Δ -0.1000 vs gate threshold -0.0300 (Δ below it)"
    assert incumbents(run, rows) == {0: "s", 1: "b"}


@pytest.mark.parametrize(("extra", "verdict", "expected"), [
    ({"critic": [{"gate": "references", "verdict": "fail", "reason": "SKILL.md links to x.md"}]}, "CRITIC",
     "not evaluated: critic gate 'references' failed — SKILL.md links to x.md"),
    ({"error": "mutator wrote no result.json\nmore"}, "FAILED", "failed: mutator wrote no result.json"),
    ({"error": "the build agent's API was unreachable", "status": "infra_error"}, "INFRA",
     "infra: the build agent's API was unreachable"),
    ({"status": "scored"}, None, "scored: waiting for the round's other candidates before the verdict"),
    ({"status": "pending"}, None, "in progress (pending)"),
])
def test_other_verdicts_and_unknown_ones_still_read(extra, verdict, expected):
    run = {"strategy": "greedy", "kind": "evolve"}
    a = {**row(1, 0, "a", verdict, parent="s"), **{k: json.dumps(v) if k == "critic" else v for k, v in extra.items()}}
    annotate(run, [SEED, a], [a])
    assert a["reason"] == expected


def test_aa_copies_say_whether_the_gate_called_a_difference():
    run = {"strategy": "aa", "kind": "aa", "min_improvement": 0.0}
    rows = [SEED, row(1, 0, "s", "REJECT", parent="s", composite=0.4, delta=-0.1, threshold=-0.05),
            row(2, 0, "s", "KEEP", parent="s", composite=0.6, delta=0.1, threshold=-0.05),
            row(3, 0, "s", "KEEP", parent="s", composite=0.5, delta=0.0, threshold=-0.05)]
    annotate(run, rows, rows)
    assert "a false call" in rows[1]["reason"]
    assert "a false improvement" in rows[2]["reason"]
    assert "no difference called" in rows[3]["reason"]
    assert set(incumbents(run, rows).values()) == {"s"}


def test_a_delta_on_a_sign_flip_threshold_says_the_coin_decided():
    """Δ exactly on the threshold: the stored gate decision (gate_keep) stands, and the reason says a coin made it;
    a greedy REJECT there is not 'below' the threshold, and a branching best that lost the coin failed the gate."""
    run = {"strategy": "greedy", "kind": "evolve"}
    on = row(1, 0, "a", "REJECT", parent="s", composite=0.45, delta=-0.0324, threshold=-0.0324)
    kept_on = row(2, 0, "b", "KEEP", parent="s", composite=0.46, delta=-0.0324, threshold=-0.0324)
    rows = [SEED, {**on, "gate_keep": 0}, {**kept_on, "gate_keep": 1}]
    annotate(run, rows, rows)
    coin = "(Δ exactly on it: the gate's stored coin decided, as its sign-flip rule prescribes)"
    assert rows[1]["reason"] == f"rejected: Δ -0.0324 vs gate threshold -0.0324 {coin}"
    assert rows[2]["reason"] == f"kept: Δ -0.0324 vs gate threshold -0.0324 {coin}"
    branching = {"strategy": "branching", "kind": "evolve"}
    best = {**row(1, 0, "a", "REJECT", parent="s", composite=0.6, delta=-0.02, threshold=-0.02), "gate_keep": 0}
    other = row(1, 1, "b", "REJECT", parent="s", composite=0.5, delta=-0.01, threshold=-0.03)
    rows = [SEED, best, other]
    annotate(branching, rows, rows)
    assert rows[2]["reason"] == ("rejected: sibling 0 had the best composite but failed the gate, so the round "
                                 "kept nothing")


def test_a_tie_rejected_for_its_added_cost_says_so_and_never_becomes_the_champion():
    """The tie rule (mutator/scoring/ties.py) rejects above the threshold: the stored gate_keep, not Δ ≥ threshold,
    is the verdict the reasons and pareto's champion follow."""
    run = {"strategy": "greedy", "kind": "evolve"}
    tie = {**row(1, 0, "a", "REJECT", parent="s", composite=0.48, delta=-0.02, threshold=-0.06), "gate_keep": 0}
    rows = [SEED, tie]
    annotate(run, rows, rows)
    assert rows[1]["reason"] == ("rejected: Δ -0.0200 vs gate threshold -0.0600 (Δ above it but below "
                                 "minImprovement: a tie, and it adds cost, so the tie rule 'noAddedCost' rejects it)")
    pareto = {"strategy": "pareto", "kind": "evolve", "min_improvement": 0.05}
    dear = {**row(1, 0, "a", "KEEP", parent="s", composite=0.52, delta=0.02, threshold=-0.01), "gate_keep": 0}
    assert incumbents(pareto, [SEED, dear]) == {0: "s", 1: "s"}
    assert incumbents(pareto, [SEED, {**dear, "gate_keep": 1}]) == {0: "s", 1: "a"}


FIXTURE = Path(__file__).parents[1] / "round" / "fixtures" / "store-8175abe.tgz"
SEED_HASH = "740923c3fd3c5bd43fbcb955136c1fe4262b60de9529e7c5df998f249f42df13"
ROUND_1 = "cb17f22915830ee3fd4fcfd784182b3970bc6bd7eb0e7cd9c7327551205e964d"
ROUND_2 = "60c35365af457a4169547ce9313971366e3d87cf30bd61b3a87f111c55cee87a"


@pytest.fixture
def old_store(tmp_path) -> Path:
    """A store main 8175abe wrote (greedy, --replicates 2 --rounds 2): no stored reasons, no stored incumbents."""
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "data" / "mutator.db"


def test_the_migration_stores_each_reason_and_incumbent_once_with_the_old_words(old_store):
    db = connect(old_store)
    found = [dict(r) for r in db.query("select round, verdict, reason, incumbent_after from attempts order by round")]
    assert found == [
        {"round": 0, "verdict": "SEED", "reason": "seed: the baseline the first candidates are compared with",
         "incumbent_after": SEED_HASH},
        {"round": 1, "verdict": "KEEP", "reason": "kept: Δ +0.0356 vs gate threshold -0.0312 (Δ at or above it)",
         "incumbent_after": ROUND_1},
        {"round": 2, "verdict": "KEEP", "reason": "kept: Δ +0.0935 vs gate threshold -0.0277 (Δ at or above it)",
         "incumbent_after": ROUND_2}]
    db.execute("update attempts set reason = 'edited' where round = 1")
    db.conn.commit()
    migrate(db)    # once: a second open never derives again
    assert db.execute("select reason from attempts where round = 1").fetchone()[0] == "edited"
    db.conn.close()


def test_the_dashboard_shows_what_is_stored_never_a_derivation(old_store):
    db = connect(old_store)
    db.execute("update attempts set reason = 'the stored words', incumbent_after = ? where round = 2", [SEED_HASH])
    run_id = db.execute("select id from runs").fetchone()[0]
    second = db.execute("select id from attempts where round = 2").fetchone()[0]
    # a newer evaluation of the parent genome on the same suite, as an A/A run or a confirmation would leave
    db["evaluations"].insert({"key": "another-run", "genome_hash": ROUND_1, "suite": "clean-val", "replicates": 2,
                              "status": "done", "eval": 0.0123, "cost": 0.0, "steps": 1.0, "n_cells": 1, "n_done": 1})
    stored_parent = db.execute("select val_evaluation_id from attempts where round = 1").fetchone()[0]
    db.conn.commit()
    db.conn.close()
    reader = connect_readonly(old_store)
    reader.conn.row_factory = sqlite3.Row
    detail = queries.run_detail(reader, run_id, old_store.parent)
    assert [a["reason"] for a in detail["attempts"]][2] == "the stored words"
    assert detail["curve"]["incumbent"] == [SEED_HASH, ROUND_1, SEED_HASH]
    assert detail["curve"]["champion"][2] == detail["curve"]["champion"][0]
    page = queries.attempt_detail(reader, second, "val")
    assert page["attempt"]["reason"] == "the stored words"
    assert page["figures"]["parent"]["evaluation_id"] == stored_parent    # this run's, not the newest anywhere
    assert [n["reason"] for n in queries.lineage(reader, run_id)["nodes"]][2] == "the stored words"
