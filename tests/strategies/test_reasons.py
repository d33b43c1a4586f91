"""Every strategy's integrate says why each candidate got its verdict, in the words the dashboard shows as stored."""

import dataclasses

import pytest

from strategies import CandidateSpec, Scored, registry
from strategies.branching import Branching
from strategies.greedy import Greedy
from strategies.pareto import Pareto
from strategies.population import Population
from tests.strategies.helpers import member, state

SEED = member("s", 0.50, {"t1": 0.5, "t2": 0.5})


def cand(sibling: int, genome: str | None, composite: float, delta: float, threshold: float, keep: bool,
         tasks: dict | None = None, evaluated: bool = True) -> Scored:
    return Scored(sibling, CandidateSpec(parent_hash="s"), genome, evaluated=evaluated, composite=composite,
                  keep_by_gate=keep, task_composites=dict(tasks or {}), delta=delta, threshold=threshold)


@pytest.mark.parametrize("strategy_id", list(registry()))
def test_every_verdict_comes_with_its_reason_and_no_reason_without_one(strategy_id):
    strategy = registry()[strategy_id].from_opts({})
    scored = [cand(0, "a", 0.60, 0.10, -0.02, True, {"t1": 0.7, "t2": 0.5}),
              cand(1, None, 0.0, 0.0, 0.0, False, evaluated=False),
              cand(2, "c", 0.40, -0.10, -0.02, False, {"t1": 0.4, "t2": 0.4})]
    out = strategy.integrate(state(SEED), scored)
    assert set(out.reasons) == set(out.verdicts) == {0, 2}
    for sibling, verdict in out.verdicts.items():
        assert out.reasons[sibling].startswith("kept: " if verdict == "KEEP" else "rejected: ")


def test_greedy_quotes_the_gate_and_which_side_of_it_delta_fell():
    keep = Greedy().integrate(state(SEED), [cand(0, "a", 0.6, 0.05, -0.02, True)])
    assert keep.reasons == {0: "kept: Δ +0.0500 vs gate threshold -0.0200 (Δ at or above it)"}
    loss = Greedy().integrate(state(SEED), [cand(0, "a", 0.4, -0.05, -0.02, False)])
    assert loss.reasons == {0: "rejected: Δ -0.0500 vs gate threshold -0.0200 (Δ below it)"}
    tie = Greedy().integrate(state(SEED), [cand(0, "a", 0.5, 0.001, -0.02, False)])
    assert tie.reasons[0] == ("rejected: Δ +0.0010 vs gate threshold -0.0200 (Δ above it but below minImprovement: a "
                              "tie, and it adds cost, so the tie rule 'noAddedCost' rejects it)")
    coin = Greedy().integrate(state(SEED), [cand(0, "a", 0.5, -0.02, -0.02, False)])
    assert coin.reasons[0].endswith("(Δ exactly on it: the gate's stored coin decided, as its sign-flip rule "
                                    "prescribes)")


def test_a_keep_rule_that_overrides_the_threshold_says_so_and_never_blames_the_tie_rule():
    """score.keepRule 'positive' (the default) rejects a Δ ≤ minImprovement the lenient gate keeps: the reason
    names the rule and its bar, not the tie rule; where rule and gate agree the words are the gate's."""
    def ruled(delta: float, keep: bool, rule: dict) -> str:
        c = dataclasses.replace(cand(0, "a", 0.5, delta, -0.02, keep), keep_rule=rule)
        return Greedy().integrate(state(SEED), [c]).reasons[0]
    positive = {"rule": "positive", "bar": 0.0, "gate_keep": True}
    assert ruled(-0.004, False, {**positive, "keep": False}) == (
        "rejected: Δ -0.0040 vs gate threshold -0.0200 (Δ above it, but the keep rule 'positive' keeps only Δ "
        "above minImprovement, Δ above +0.0000)")
    assert ruled(0.03, True, {**positive, "keep": True}) == ("kept: Δ +0.0300 vs gate threshold -0.0200 (Δ at "
                                                             "or above it)")
    strict = {"rule": "strict", "bar": 0.02, "gate_keep": True, "keep": False}
    assert ruled(0.01, False, strict).endswith("(Δ above it, but the keep rule 'strict' keeps only a decisive win, "
                                               "Δ above +0.0200)")
    eb = {"rule": "eb", "posterior": -0.001, "gate_keep": True, "keep": False}
    assert ruled(0.01, False, eb).endswith("(Δ above it, but the keep rule 'eb' puts the posterior mean gain at "
                                           "-0.0010, not above minImprovement)")
    eb_keeps = {"rule": "eb", "posterior": 0.004, "gate_keep": False, "keep": True}
    assert ruled(-0.03, True, eb_keeps).endswith("(Δ below it, but the keep rule 'eb' puts the posterior mean "
                                                 "gain at +0.0040, above minImprovement)")


def test_branching_names_the_better_sibling_or_that_the_best_failed_the_gate():
    siblings = [cand(0, "a", 0.55, 0.05, -0.02, True), cand(1, "b", 0.60, 0.10, -0.02, True),
                cand(2, "c", 0.30, -0.20, -0.02, False)]
    out = Branching(width=3).integrate(state(SEED), siblings)
    assert out.verdicts == {0: "REJECT", 1: "KEEP", 2: "REJECT"} and out.incumbent == "b"
    assert out.reasons == {
        0: "rejected: sibling 1 was better (composite 0.6000 vs 0.5500); Δ +0.0500 vs gate threshold -0.0200",
        1: "kept: best of 3 siblings and Δ +0.1000 vs gate threshold -0.0200 (Δ at or above it)",
        2: "rejected: Δ -0.2000 vs gate threshold -0.0200 (Δ below it)"}
    failed_best = [cand(0, "a", 0.55, 0.05, -0.02, True), dataclasses.replace(siblings[1], keep_by_gate=False)]
    out = Branching(width=2).integrate(state(SEED), failed_best)
    assert out.incumbent == "s" and out.reasons[0] == ("rejected: sibling 1 had the best composite but failed the "
                                                       "gate, so the round kept nothing")


def test_population_says_where_a_child_entered_the_pool_or_why_it_did_not():
    pool = [member("a", 0.70), member("b", 0.60)]
    children = [cand(0, "x", 0.80, 0.1, -0.02, True), cand(1, "y", 0.55, -0.1, -0.02, False),
                cand(2, "x", 0.80, 0.1, -0.02, True), cand(3, "b", 0.60, 0.0, -0.02, True)]
    out = Population(pool=2, children=4).integrate(state(pool[0], pool, pool=["a", "b"]), children)
    assert out.pool == ("x", "a") and out.incumbent == "x"
    assert out.reasons == {0: "kept: entered the pool as its leader (the new incumbent)",
                           1: "rejected: did not make the pool's top 2 (composite 0.5500 < 0.7000, the pool's last)",
                           2: "rejected: sibling 0 produced the same genome first",
                           3: "rejected: this genome was already in the pool (it adds nothing new)"}
    second = Population(pool=3, children=1).integrate(state(pool[0], pool, pool=["a", "b"]),
                                                      [cand(0, "z", 0.65, 0.0, -0.02, True)])
    assert second.reasons == {0: "kept: entered the pool at rank 2 of 3"}


def test_pareto_tells_a_new_champion_from_a_new_front_member():
    seed = member("s", 0.50, {"t1": 0.5, "t2": 0.5})
    champion = Pareto().integrate(state(seed), [cand(0, "a", 0.60, 0.1, -0.02, True, {"t1": 0.7, "t2": 0.5})])
    assert champion.incumbent == "a" and champion.reasons == {
        0: "kept: the new champion — it beat the champion's val composite and passed the gate "
           "(Δ +0.1000 vs gate threshold -0.0200)"}
    front = Pareto().integrate(state(seed), [cand(0, "b", 0.45, -0.05, -0.02, False, {"t1": 0.9, "t2": 0.0})])
    assert front.incumbent == "s" and front.reasons == {
        0: "kept: a new genome on the per-task Pareto front (the champion stays unless a new best passes the gate)"}
    beaten = Pareto().integrate(state(seed), [cand(0, "c", 0.40, -0.1, -0.02, False, {"t1": 0.4, "t2": 0.4})])
    assert beaten.reasons == {0: "rejected: not on the per-task Pareto front (another genome leads each of its tasks)"}
    again = Pareto().integrate(state(seed), [cand(0, "s", 0.50, 0.0, -0.02, True, {"t1": 0.5, "t2": 0.5})])
    assert again.reasons == {0: "rejected: this genome was already scored in an earlier round (it adds nothing new)"}
