"""The verdict reasons and the incumbent per round, as pure functions over attempt rows."""

from __future__ import annotations

import json

import pytest

from mutator.server.verdicts import annotate, incumbents


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
