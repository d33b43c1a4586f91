"""The loop's "likely cause" of an incomplete evaluation names a task image that did not build, not the model
API, when that is what its cells said."""

from __future__ import annotations

from mutator.round.failures import likely_cause
from mutator.round.outcome import Outcome

BUILD = ("the task's environment could not be made: the task's image did not build or pull: building "
         "/s/harbor/t/environment failed (exit 125); log tail:\nError: short-name \"jasonish/suricata\" did not "
         "resolve")


def test_an_image_that_did_not_build_is_named_as_the_cause() -> None:
    built = likely_cause(Outcome(1, (), 0, 0.0, complete=False, failures={"infra_error": 3}, n_cells=3,
                                 first_error=BUILD), agent="a", grader="g")
    assert built.startswith("a task's container image did not build or pull") and "model API" not in built
    api = likely_cause(Outcome(1, (), 0, 0.0, complete=False, failures={"infra_error": 3}, n_cells=3,
                               first_error="infrastructure (the model API, not the skill): overloaded"),
                       agent="a", grader="g")
    assert api.startswith("the model API or the harness")
