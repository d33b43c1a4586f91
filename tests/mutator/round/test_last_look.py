"""Where the tie rule acts in a decision (mutator/round/waves.py): at the last look of sequential val only, never
at an early look or the screen; and how a run's decisions and those of stores made by older code are identified
(mutator/round/eras.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mutator.config import load_settings
from mutator.round.eras import as_stored, configured, older
from mutator.round.evaluations import Outcome
from mutator.round.session import cheaper_identity
from mutator.round.waves import Gating, Screen, sequential_val
from mutator.scoring.score import CellFigures, Normalisers, Weights
from mutator.scoring.sequential import Design
from tests.conftest import ROOT

TASKS = [f"t{i}" for i in range(8)]
VAL = SimpleNamespace(tasks=[SimpleNamespace(id=t) for t in TASKS])
NORM = Normalisers(seed_cost=0.01, seed_steps=4.0)


def cells(score_shift: list[float], cost: float) -> list[CellFigures]:
    """8 tasks x 2 replicates; task i scores 0.5 + score_shift[i] in both replicates, every cell at `cost`."""
    return [CellFigures(t, r, 0.5 + score_shift[i], cost, 4, True) for i, t in enumerate(TASKS) for r in range(2)]


# a tie that adds cost: Δeval averages 0, each cell costs 10% more (Δcost term −0.01), so Δ = −0.01, well inside
# the noise band (±0.05 per task): the gate keeps it, the tie rule 'noAddedCost' does not
SIDES = {"incumbent": cells([0.0] * 8, 0.010), "candidate": cells([0.05, -0.05] * 4, 0.011)}


def evaluate(genome: str, _suite, _label: str, only: frozenset | None) -> Outcome:
    chosen = [c for c in SIDES[genome] if only is None or (c.task_id, c.replicate) in only]
    return Outcome(0, tuple(chosen), 0, 0.0, n_cells=len(chosen))


@pytest.mark.parametrize(("rule", "keep"), [("noAddedCost", False), ("keep", True)])
def test_the_tie_rule_decides_at_the_last_look_and_never_at_an_early_one(rule: str, keep: bool) -> None:
    gating = Gating(Weights(0.1, 0.0), 0.0, 1.0, "t", Design(2, 1.0, 2.0), rule)
    _, gate, looks = sequential_val(gating, evaluate, val=VAL, genome="candidate", incumbent="incumbent", norm=NORM,
                                    prior=[], label="val", healthy=lambda _o: True)
    assert [look["decision"] for look in looks] == [None, None]         # the early look decided nothing on a tie
    first, last = looks[0]["gate"], looks[1]["gate"]
    assert first["tie"]["rule"] == "keep" and first["keep"] is True      # the early look never applies the rule
    assert last["tie"]["rule"] == rule and last["tie"]["tie"] is True and last["tie"]["adds_cost"] is True
    assert gate.delta == pytest.approx(-0.01) and last["tie"]["gate_keep"] is True
    assert gate.keep is keep and last["keep"] is keep


def test_the_screen_never_applies_the_tie_rule() -> None:
    train = SimpleNamespace(tasks=VAL.tasks)
    gating = Gating(Weights(0.1, 0.0), 0.0, 1.0, "t", Design(2, 1.0, 2.0), "noAddedCost")
    record = Screen(8, 2, 2.0).run(gating, evaluate, train=train, genome="candidate", incumbent="incumbent",
                                   norm=NORM, seed="s", label="screen")
    assert record["decision"] is None and record["gate"]["tie"]["rule"] == "keep"   # a tie: the screen goes on


def test_a_runs_identity_names_the_tie_rule_and_the_evidence_depth_and_older_stores_lack_them() -> None:
    settings = load_settings(config_file=ROOT / "config.json", environ={})
    now = configured(settings, Weights(settings.score.w_cost, settings.score.w_steps))
    assert (settings.score.tie_rule, settings.evidence_replicates, settings.replicates) == ("noAddedCost", 1,
                                                                                            3)
    identity = now.identity()
    assert identity["tie_rule"] == "noAddedCost" and identity["evidence_replicates"] == 1
    assert identity["keep_rule"] == "positive"          # the default since docs/benchmarks/default-line.md
    lenient, before_ties, unscreened, before_waves = older(now)
    # a store made under the lenient default (or before score.keepRule): today's identity less the keep rule
    assert lenient.identity() == {k: v for k, v in identity.items() if k != "keep_rule"}
    assert (now.screen.tasks, before_ties.screen.tasks, unscreened.screen.tasks) == (6, 6, 0)   # screen off: then
    assert unscreened.identity() == cheaper_identity(now.gating.design, unscreened.screen)       # its default
    # exactly the identity part code before the tie rule wrote (sequential val and the screen only) ...
    assert before_ties.identity() == cheaper_identity(now.gating.design, now.screen)
    assert before_ties.gating.tie_rule == "keep" and before_ties.evidence_cells(SimpleNamespace(tasks=[])) is None
    # ... and before sequential val: nothing at all
    assert before_waves.identity() == {} and before_waves.gating.design.looks == 1
    assert now.evidence_cells(VAL) == frozenset((t, 0) for t in TASKS)        # replicate 0 of every task
    deep = configured(load_settings(config_file=ROOT / "config.json", environ={"SKILL_MUTATOR_EVIDENCE_REPLICATES": "5"}),
                      Weights(0.1, 0.02))
    assert deep.evidence == 3 and "evidence_replicates" not in deep.identity()   # above `replicates`: every cell


@pytest.mark.parametrize(("rule", "keep"), [("lenient", True), ("strict", False), ("positive", False),
                                            ("eb", False), ("ebc", False)])
def test_the_keep_rule_decides_at_the_last_look_only(rule: str, keep: bool) -> None:
    # the tie of SIDES (Δ −0.01, inside the noise): the lenient gate keeps it (every tie kept), the others do not
    # (eb has no history yet: Δ > 0 decides)
    gating = Gating(Weights(0.1, 0.0), 0.0, 1.0, "t", Design(2, 1.0, 2.0), "keep", keep_rule=rule)
    _, gate, looks = sequential_val(gating, evaluate, val=VAL, genome="candidate", incumbent="incumbent", norm=NORM,
                                    prior=[], label="val", healthy=lambda _o: True)
    first, last = looks[0]["gate"], looks[1]["gate"]
    assert "keep_rule" not in first and first["keep"] is True          # the early look decides as ever
    assert gate.keep is keep and last["keep"] is keep
    assert ("keep_rule" in last) is (rule != "lenient")
    if rule != "lenient":
        assert last["keep_rule"]["rule"] == rule and last["keep_rule"]["gate_keep"] is True


def test_a_keep_rule_is_in_the_run_id_and_a_store_made_before_it_resumes_lenient() -> None:
    settings = load_settings(config_file=ROOT / "config.json", environ={"SKILL_MUTATOR_KEEP_RULE": "eb"})
    now = configured(settings, Weights(settings.score.w_cost, settings.score.w_steps))
    assert now.gating.keep_rule == "eb" and now.identity()["keep_rule"] == "eb"
    lenient, *eras = older(now)
    assert lenient.gating.keep_rule == "lenient" and lenient.lacked == "score.keepRule's default became 'positive'"
    assert "--keep-rule lenient resumes it" in lenient.how and "keep rule 'eb'" in lenient.how
    assert lenient.identity() == {k: v for k, v in now.identity().items() if k != "keep_rule"}
    assert all(era.gating.keep_rule == "lenient" for era in eras)
    # a store whose identity has no keep_rule (made before it, or lenient) resumes under the lenient gate
    assert as_stored(now, lenient.identity()).gating.keep_rule == "lenient"
    assert as_stored(now, now.identity()) is now
    default = configured(load_settings(config_file=ROOT / "config.json", environ={}), Weights(0.1, 0.02))
    # the default (docs/benchmarks/default-line.md's choice) names itself in the id; lenient stays absent from it
    assert default.gating.keep_rule == "positive" and default.identity()["keep_rule"] == "positive"
