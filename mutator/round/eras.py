"""How a run decides, and how runs stored by older code did: a stored run resumes as it was made.

A run's decision settings are its gate and val design (with the tie and keep rules), its screen, the depth of
its train evidence and the rule its --confirm re-checks a keep with. Each is part of the run id only when it
differs from what older code did, so a run stored before it existed is found again under the settings it was
made with and resumes with them, re-running no cell. Pure: never touches the store; the loop looks the older
ids up.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from eval.suite import Suite
from mutator.round.session import cheaper_identity
from mutator.round.waves import Gating, Screen
from mutator.scoring.sequential import wave

# the identity's keys cheaper_identity writes
CHEAPER = ("sequential", "screen", "tie_rule", "evidence_replicates", "keep_rule", "confirm_rule")


@dataclass(frozen=True)
class Decisions:
    """How a run's candidates are decided and how deep its train evidence is (`evidence` replicates)."""
    gating: Gating
    screen: Screen
    evidence: int
    replicates: int          # the run's replicates: evidence at this depth is every train cell
    lacked: str = ""         # for an older store's settings: what the code that made it did not have yet
    how: str = ""            # and how it therefore resumes
    # the keep rule --confirm re-checks a keep with (mutator/round/confirm.py): the run's score.keepRule
    # under --confirm, lenient without it or in a run stored before --confirm applied the keep rule
    confirm_rule: str = "lenient"

    def identity(self) -> dict:
        return cheaper_identity(self.gating.design, self.screen, self.gating.tie_rule,
                                self.evidence if self.evidence < self.replicates else 0,
                                self.gating.keep_rule, self.confirm_rule)

    def evidence_cells(self, train: Suite) -> frozenset | None:
        """The train cells of a genome's evidence: the first `evidence` replicates of every task (None: all).
        They are cells of the genome's one train evaluation, so deeper evidence later, or a screen, reuses
        them."""
        return None if self.evidence >= self.replicates else wave([t.id for t in train.tasks], self.evidence)


def configured(settings, weights) -> Decisions:
    """The decisions a run makes with these settings (evidenceReplicates above `replicates` is every
    replicate)."""
    return Decisions(Gating.for_settings(settings, weights),
                     Screen(settings.screen.tasks, settings.screen.replicates, settings.screen.z),
                     min(settings.train_replicates, settings.replicates), settings.replicates,
                     confirm_rule=settings.score.keep_rule if settings.confirm else "lenient")


def older(now: Decisions) -> tuple[Decisions, ...]:
    """The decisions of runs stored by older code, newest first: before the tie rule and evidenceReplicates
    (ties kept, evidence at every replicate; with the screen as configured, or off, its default then), and
    before sequential val and the screen (one look, no screen either); every one of them before score.keepRule
    (the lenient gate), and first, when the keep rule is not lenient, a run made just before it or under the
    lenient default score.keepRule had before 'positive' (a plain resume of such a store keeps its lenient
    gate and says so); and before all of them, when --confirm applies a keep rule other than lenient, a run
    made under that keep rule before --confirm applied it (its confirmations keep the lenient gate)."""
    full, off = now.replicates, dataclasses.replace(now.screen, tasks=0)
    lenient = dataclasses.replace(now, gating=dataclasses.replace(now.gating, keep_rule="lenient"),
                                  confirm_rule="lenient",
                                  lacked="score.keepRule's default became 'positive'",
                                  how="the lenient gate: keep unless a decisive loss; --keep-rule lenient "
                                      "resumes it without this note, a new --data-dir starts a run with keep "
                                      f"rule {now.gating.keep_rule!r}")
    ties = dataclasses.replace(lenient, gating=dataclasses.replace(lenient.gating, tie_rule="keep"),
                               evidence=full,
                               lacked="the tie rule and evidenceReplicates",
                               how="every tie kept, train evidence at every replicate")
    unscreened = dataclasses.replace(ties, screen=off, how=ties.how + ", no screen (the default then)")
    once = dataclasses.replace(ties, gating=dataclasses.replace(ties.gating, design=dataclasses.replace(
        ties.gating.design, looks=1)), screen=off, lacked="sequential val and the screen",
        how="every val cell at once, no screen, every tie kept, train evidence at every replicate")
    eras = (ties, unscreened, once) if now.screen.tasks else (ties, once)
    unconfirmed = dataclasses.replace(now, confirm_rule="lenient",
                                      lacked="--confirm re-checked a keep under the run's keep rule",
                                      how=f"keep rule {now.gating.keep_rule!r}, each keep confirmed by the "
                                          "lenient gate: it stands unless a decisive loss on fresh val "
                                          "replicates; a new --data-dir starts a run whose --confirm applies "
                                          f"keep rule {now.gating.keep_rule!r}")
    eras = (lenient, *eras) if now.gating.keep_rule != "lenient" else eras
    return (unconfirmed, *eras) if now.confirm_rule != "lenient" else eras


def as_stored(now: Decisions, identity: dict) -> Decisions:
    """The decisions a stored run was made with, read from its stored identity (`runs.config`): `now` or the
    first older era whose part of the identity it holds (`now` when none does)."""
    stored = {k: identity[k] for k in CHEAPER if k in identity}
    return next((then for then in (now, *older(now)) if then.identity() == stored), now)
