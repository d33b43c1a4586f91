"""Branching plan/integrate on constructed states, and the later siblings' briefing."""

from mutator.briefing.render import BriefingInput, render
from strategies import CandidateSpec
from strategies.branching import Branching
from tests.strategies.helpers import member, scored, state


def test_plan_is_width_siblings_off_the_incumbent_and_later_ones_share_the_objective():
    inc = member("inc", 0.5)
    specs = Branching(width=3).plan(state(inc, [member("old", 0.7), inc]))
    assert [s.parent_hash for s in specs] == ["inc"] * 3
    assert [s.share_objective for s in specs] == [False, True, True]
    assert all(not s.ref_hashes and not s.target_tasks for s in specs)


def test_best_sibling_is_kept_the_rest_are_rejected_siblings():
    inc, spec = member("inc", 0.5), CandidateSpec("inc")
    out = Branching(3).integrate(state(inc), [scored(0, spec, "a", 0.55, keep=True),
                                             scored(1, spec, "b", 0.61, keep=True),
                                             scored(2, spec, "c", 0.58, keep=True)])
    assert out.verdicts == {0: "REJECT", 1: "KEEP", 2: "REJECT"}
    assert out.incumbent == "b" and out.selected == ("b",)


def test_best_sibling_failing_the_gate_keeps_the_incumbent():
    inc, spec = member("inc", 0.5), CandidateSpec("inc")
    out = Branching(2).integrate(state(inc), [scored(0, spec, "a", 0.40, keep=True),
                                             scored(1, spec, "b", 0.45, keep=False)])
    assert out.verdicts == {0: "REJECT", 1: "REJECT"}
    assert out.incumbent == "inc" and out.selected == ()


def test_tie_goes_to_the_earlier_sibling_and_unevaluated_siblings_get_no_verdict():
    inc, spec = member("inc", 0.5), CandidateSpec("inc")
    out = Branching(3).integrate(state(inc), [scored(0, spec, None, evaluated=False),
                                             scored(1, spec, "b", 0.6, keep=True),
                                             scored(2, spec, "c", 0.6, keep=True)])
    assert out.verdicts == {1: "KEEP", 2: "REJECT"} and out.incumbent == "b"


def test_all_siblings_critic_rejected_changes_nothing():
    inc, spec = member("inc", 0.5), CandidateSpec("inc")
    out = Branching(2).integrate(state(inc), [scored(0, spec, "a", evaluated=False),
                                             scored(1, spec, "b", evaluated=False)])
    assert out.verdicts == {} and out.incumbent == "inc" and out.selected == ()


def test_later_sibling_briefing_carries_the_objective_and_earlier_implementations():
    text = render(BriefingInput(
        round=2, sibling=2, skill_name="csv-clean", formula="f", gate="g", incumbent={}, train_tasks=[],
        attempts=[], objective="Add the `dates` rule to rules.json",
        siblings=[{"sibling": 0, "summary": "Add the `dates` rule", "diff": "+- `dates`: ISO dates\n"},
                  {"sibling": 1, "summary": "Add `dates` with examples", "diff": "+- `dates`: rewrite 03/15\n"}]))
    assert "## This round's objective" in text and "Add the `dates` rule to rules.json" in text
    assert "### Attempt 1 implemented it as: Add the `dates` rule" in text
    assert "### Attempt 2 implemented it as: Add `dates` with examples" in text
    assert "+- `dates`: rewrite 03/15" in text and "differently" in text


def test_first_sibling_briefing_has_no_objective_section():
    text = render(BriefingInput(round=2, sibling=0, skill_name="s", formula="f", gate="g", incumbent={},
                                train_tasks=[], attempts=[]))
    assert "This round's objective" not in text and "Tasks to target" not in text
