"""Population plan/integrate on constructed states: rank weights, crossover refs, pool truncation."""

import random
from collections import Counter

from strategies import CandidateSpec
from strategies.population import Population, rank_weights
from tests.strategies.helpers import ScriptedRng, member, scored, state

POOL = [member("a", 0.70), member("b", 0.65), member("c", 0.60), member("d", 0.50)]


def test_rank_weights_give_rank_1_weight_n():
    assert rank_weights(4) == [4, 3, 2, 1] and rank_weights(1) == [1]


def test_parents_are_drawn_with_rank_weights_from_the_snapshot_in_composite_order():
    rng = ScriptedRng(randoms=[0.99, 0.99])
    # the snapshot's order is not trusted: the pool is re-ranked by val composite
    Population(pool=4, children=2, crossover_rate=0.5).plan(
        state(POOL[0], POOL + [member("e", 0.9)], pool=["c", "a", "d", "b"], rng=rng))
    assert rng.draws == [(["a", "b", "c", "d"], [4, 3, 2, 1])] * 2


def test_selection_frequencies_follow_the_rank_weights():
    strategy = Population(pool=4, children=1, crossover_rate=0.0)
    rng = random.Random(7)
    counts = Counter(strategy.plan(state(POOL[0], POOL, pool=["a", "b", "c", "d"], rng=rng))[0].parent_hash
                     for _ in range(4000))
    shares = {h: counts[h] / 4000 for h in "abcd"}
    for h, weight in zip("abcd", [4, 3, 2, 1], strict=True):
        assert abs(shares[h] - weight / 10) < 0.03, shares


def test_crossover_hands_a_different_pool_member_as_the_ref_weighted_by_rank():
    rng = ScriptedRng(randoms=[0.1, 0.9], picks=[1, 0, 2])
    specs = Population(pool=4, children=2, crossover_rate=0.5).plan(state(POOL[0], POOL, pool="abcd", rng=rng))
    assert specs[0] == CandidateSpec(parent_hash="b", ref_hashes=("a",))
    assert specs[1] == CandidateSpec(parent_hash="c")
    assert rng.draws[1] == (["a", "c", "d"], [4, 2, 1])  # the parent is excluded from its own refs


def test_no_crossover_with_a_pool_of_one_or_rate_zero():
    rng = ScriptedRng(randoms=[0.0, 0.0])
    specs = Population(4, 2, 1.0).plan(state(member("seed", 0.4), rng=rng))
    assert [s.ref_hashes for s in specs] == [(), ()] and specs[0].parent_hash == "seed"
    specs = Population(4, 3, 0.0).plan(state(POOL[0], POOL, pool="abcd", rng=random.Random(3)))
    assert all(not s.ref_hashes for s in specs)


def test_first_generation_pool_is_the_best_n_scored_so_far():
    rng = ScriptedRng()
    Population(pool=2, children=1).plan(state(POOL[0], POOL, rng=rng))
    assert rng.draws[0] == (["a", "b"], [2, 1])


def test_children_are_inserted_and_the_pool_is_truncated_to_n():
    spec = CandidateSpec("a")
    out = Population(pool=4, children=3).integrate(
        state(POOL[0], POOL, pool="abcd"),
        [scored(0, spec, "x", 0.80), scored(1, spec, "y", 0.55), scored(2, spec, "z", 0.40)])
    assert out.pool == ("x", "a", "b", "c")          # y (0.55) is 5th, d and z below it: all cut
    assert out.verdicts == {0: "KEEP", 1: "REJECT", 2: "REJECT"}
    assert out.incumbent == "x" and out.selected == ("x",)


def test_a_middling_child_survives_and_the_leader_stays_incumbent():
    spec = CandidateSpec("a")
    out = Population(pool=4, children=1).integrate(state(POOL[0], POOL, pool="abcd"), [scored(0, spec, "y", 0.62)])
    assert out.pool == ("a", "b", "y", "c") and out.verdicts == {0: "KEEP"}
    assert out.incumbent == "a" and out.selected == ("y",)


def test_ties_keep_older_pool_members_and_duplicates_are_rejected():
    spec = CandidateSpec("a")
    out = Population(pool=4, children=3).integrate(
        state(POOL[0], POOL, pool="abcd"),
        [scored(0, spec, "t", 0.50), scored(1, spec, "b", 0.65), scored(2, spec, None, evaluated=False)])
    assert out.pool == ("a", "b", "c", "d")
    assert out.verdicts == {0: "REJECT", 1: "REJECT"} and out.selected == ()


def test_a_pool_still_filling_keeps_every_child():
    seed, spec = member("seed", 0.4), CandidateSpec("seed")
    out = Population(pool=4, children=2).integrate(state(seed), [scored(0, spec, "p", 0.3), scored(1, spec, "q", 0.5)])
    assert out.pool == ("q", "seed", "p") and out.verdicts == {0: "KEEP", 1: "KEEP"}
    assert out.incumbent == "q" and set(out.selected) == {"p", "q"}
