"""Pareto front (ties, dominance), parent weights, target tasks, integrate."""

from strategies import CandidateSpec
from strategies.pareto import Pareto, dominates, front, target_tasks
from tests.strategies.helpers import ScriptedRng, member, scored, state


def test_front_keeps_task_leaders_with_ties_and_counts_tasks_led():
    a = member("a", 0.6, {"t1": 0.9, "t2": 0.3, "t3": 0.5})
    b = member("b", 0.6, {"t1": 0.2, "t2": 0.9, "t3": 0.5})
    c = member("c", 0.5, {"t1": 0.5, "t2": 0.5, "t3": 0.4})   # leads nothing
    assert front([a, b, c]) == {"a": 2, "b": 2}               # t3 tie counts for both


def test_a_tied_leader_dominated_elsewhere_is_removed():
    a = member("a", 0.5, {"t1": 0.9, "t2": 0.3})
    b = member("b", 0.6, {"t1": 0.9, "t2": 0.5})             # ties a on t1, beats it on t2
    c = member("c", 0.4, {"t1": 0.1, "t2": 0.4})
    assert dominates(b.task_composites, a.task_composites, ["t1", "t2"])
    assert front([a, b, c]) == {"b": 2}


def test_identical_score_vectors_do_not_dominate_each_other():
    a = member("a", 0.5, {"t1": 0.7, "t2": 0.7})
    b = member("b", 0.5, {"t1": 0.7, "t2": 0.7})
    assert front([a, b]) == {"a": 2, "b": 2}


def test_parent_is_drawn_weighted_by_tasks_led_and_pointed_at_its_train_losses():
    a = member("a", 0.6, {"t1": 0.9, "t2": 0.9, "t3": 0.1}, train={"r1": 0.8, "r2": 0.2, "r3": 0.5})
    b = member("b", 0.5, {"t1": 0.1, "t2": 0.1, "t3": 0.9}, train={"r1": 0.6, "r2": 0.7, "r3": 0.9})
    rng = ScriptedRng(picks=[0])
    specs = Pareto(targets=3).plan(state(a, [a, b], rng=rng))
    assert rng.draws == [(["a", "b"], [2, 1])]
    assert specs == [CandidateSpec(parent_hash="a", target_tasks=("r2", "r3"))]  # biggest gap first


def test_target_tasks_fall_back_to_the_parents_weakest_and_respect_the_limit():
    seed = member("seed", 0.4, train={"r1": 0.8, "r2": 0.2, "r3": 0.5, "r4": 0.8})
    assert target_tasks(seed, [], limit=2) == ("r2", "r3")
    assert target_tasks(member("x", 0.4), [seed], limit=2) == ()   # never train-evaluated: no targets


def test_integrate_keeps_front_entrants_and_makes_the_best_mean_incumbent():
    a = member("a", 0.60, {"t1": 0.9, "t2": 0.3})
    b = member("b", 0.55, {"t1": 0.3, "t2": 0.8})
    spec = CandidateSpec("a")
    out = Pareto().integrate(state(a, [a, b]), [
        scored(0, spec, "c", 0.65, keep=True, tasks={"t1": 0.65, "t2": 0.65})])   # leads nothing, best mean
    assert out.verdicts == {0: "KEEP"} and out.incumbent == "c" and out.selected == ("c",)
    out = Pareto().integrate(state(a, [a, b]), [
        scored(0, spec, "d", 0.58, tasks={"t1": 0.95, "t2": 0.2})])    # leads t1, dominates nothing
    assert out.verdicts == {0: "KEEP"} and out.incumbent == "a" and out.selected == ("d",)
    assert out.pool == ("b", "d")                                         # a lost t1 to d: off the front


def test_integrate_rejects_a_child_equal_to_a_known_genome_and_keeps_the_incumbent_on_ties():
    a = member("a", 0.6, {"t1": 0.6})
    out = Pareto().integrate(state(a, [a]), [scored(0, CandidateSpec("a"), "a", 0.6, tasks={"t1": 0.6})])
    assert out.verdicts == {0: "REJECT"} and out.incumbent == "a" and out.selected == ()


def test_the_champion_changes_only_through_the_gate_and_the_front_keeps_its_members():
    a = member("a", 0.60, {"t1": 0.6, "t2": 0.6})
    spec = CandidateSpec("a")
    lucky = scored(0, spec, "c", 0.70, keep=False, tasks={"t1": 0.95, "t2": 0.45})   # best mean, fails the gate
    out = Pareto().integrate(state(a, [a]), [lucky])
    assert out.incumbent == "a"                              # a lucky score does not take the lead
    assert out.verdicts == {0: "KEEP"} and set(out.pool) == {"a", "c"}   # but it is on the front (leads t1)
    assert out.selected == ("c",)
    out = Pareto().integrate(state(a, [a]), [scored(0, spec, "c", 0.70, keep=True, tasks=lucky.task_composites)])
    assert out.incumbent == "c"                              # the same figures through the gate: new champion


def test_the_best_new_genome_must_pass_not_just_any_sibling():
    a = member("a", 0.60, {"t1": 0.6})
    spec = CandidateSpec("a")
    out = Pareto().integrate(state(a, [a]), [
        scored(0, spec, "b", 0.62, keep=True, tasks={"t1": 0.62}),
        scored(1, spec, "c", 0.70, keep=False, tasks={"t1": 0.70})])
    assert out.incumbent == "a"              # the new best (c) failed the gate; b passing does not promote b
    out = Pareto().integrate(state(a, [a]), [scored(0, spec, "d", 0.60, keep=True, tasks={"t1": 0.60})])
    assert out.incumbent == "a"              # passing the gate while not beating the champion: no change
