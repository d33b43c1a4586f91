"""The round's evaluator: how a round evaluates a genome on a suite, handed to whatever runs evaluations for
the round (sequential val, the screen, the re-grade) so none of them needs the loop."""

from __future__ import annotations

from dataclasses import dataclass

from eval.suite import Suite
from mutator.round.eras import Decisions
from mutator.round.outcome import Outcome
from mutator.round.session import Session


@dataclass(frozen=True)
class RoundEvaluator:
    """Evaluates a stored genome through the run's session; a genome's train evidence (train with no cells
    named) is the evidence depth the run's decisions say (Decisions.evidence_cells)."""
    session: Session
    decisions: Decisions
    train: Suite

    def __call__(self, genome_hash: str, suite: Suite, label: str, only: frozenset | None = None, *,
                 seed: bool = False) -> Outcome:
        if suite is self.train and only is None:   # a genome's train evidence (a selected one's, re-graded)
            only = self.decisions.evidence_cells(self.train)
        return self.session.evaluate(genome_hash, suite, label, only, seed=seed)
