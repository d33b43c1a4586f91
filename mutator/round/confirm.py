"""The winner's-curse guard (--confirm): a keep stands only if it is still kept on fresh val replicates, by
the run's gate under the run's keep rule (score.keepRule, the rule that made the keep; a run stored before
--confirm applied it confirms under the lenient gate: mutator/round/eras.py).

Both fresh evaluations (the new incumbent and the old one, under a new replicate salt) are stored on the
attempt with the confirmed gate figures (and the keep rule's, as `gate.keep_rule`, unless lenient), so a
resumed round reads the decision instead of re-running it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from mutator.round import reasons
from mutator.round.nulls import gate_against
from mutator.scoring.score import Normalisers
from mutator.store.attempts import update_attempt
from mutator.store.db import dumps, loads
from strategies import Integration, Scored, State
from strategies.verdicts import Verdict

if TYPE_CHECKING:
    from eval.suite import Suite
    from mutator.round.session import Session


def confirm_keep(session: Session, val: Suite, round_no: int, state: State, scored: list[Scored],
                 integration: Integration, val_norm: Normalisers, *, tie_rule: str = "keep",
                 keep_rule: str = "lenient") -> Integration:
    """Winner's-curse guard: re-evaluate the new incumbent and the old one on fresh val replicates; the
    keep stands only if the confirmed Δ is still kept by the gate (with the run's tie rule) under `keep_rule`.
    Both evaluations are stored."""
    winner = next(c for c in scored if c.genome_hash == integration.incumbent)
    row = session.attempt_row(round_no, winner.sibling)
    record = loads(row.confirm)
    if record is None:
        fresh = dataclasses.replace(session.contract, salt=f"confirm:{session.run_id}:{round_no}")
        old, new = state.incumbent.genome_hash, integration.incumbent
        evaluations = [session.measure(h, val, f"round {round_no} · confirm {h[:12]} on fresh "
                                               f"val", contract=fresh)
                       for h in (new, old)]
        for outcome in evaluations:
            session.account(outcome, val, f"round {round_no} · confirmation")
        gate = gate_against(session, evaluations[0].cells, evaluations[1].cells, val_norm, exclude=row.id,
                            suite_hash=val.content_hash, tie_rule=tie_rule,
                            keep_rule=keep_rule)
        record = {"stands": gate.keep, "candidate_evaluation_id": evaluations[0].evaluation_id,
                  "incumbent_evaluation_id": evaluations[1].evaluation_id, "salt": fresh.salt,
                  "gate": gate.to_json()}
        update_attempt(session.db, row.id, {"confirm": dumps(record)})
    gate = record["gate"]
    session.progress.say(f"  confirmation on fresh val replicates: {versus(gate, record['stands'])} → "
                         f"{'the keep stands' if record['stands'] else 'OVERTURNED'}")
    if record["stands"]:
        kept = integration.reasons.get(winner.sibling)
        return dataclasses.replace(integration, reasons={
            **integration.reasons, **({winner.sibling: kept + reasons.CONFIRMED} if kept else {})})
    error = "keep overturned by confirmation: fresh " + (versus(gate, False) if "keep_rule" in gate else
                                                         f"Δ {gate['delta']:+.4f} < {gate['threshold']:+.4f}")
    update_attempt(session.db, row.id, {"error": error})
    return dataclasses.replace(
        integration, verdicts={**integration.verdicts, winner.sibling: Verdict.REJECT},
        reasons={**integration.reasons, winner.sibling: reasons.overturned(error)},
        incumbent=state.incumbent.genome_hash,
        selected=tuple(h for h in integration.selected if h != integration.incumbent))


def versus(gate: dict, stands: bool) -> str:
    """The confirmed figures against what decided: the gate's threshold ('Δ +0.0100 vs threshold -0.0200'), or
    under a keep rule other than lenient its bar ('Δ +0.0100 ≤ minImprovement +0.0100 under keep rule
    positive') or posterior mean gain."""
    rule = gate.get("keep_rule")
    if rule is None:
        return f"Δ {gate['delta']:+.4f} vs threshold {gate['threshold']:+.4f}"
    side = ">" if stands else "≤"
    under = f"under keep rule {rule['rule']}"
    if "posterior" in rule:   # eb, ebc: the posterior mean gain against minImprovement
        return (f"posterior mean gain {rule['posterior']:+.4f} {side} minImprovement "
                f"{gate['min_improvement']:+.4f} (Δ {gate['delta']:+.4f}) {under}")
    bar = "minImprovement" if rule["rule"] == "positive" else "minImprovement + t·SE"
    return f"Δ {gate['delta']:+.4f} {side} {bar} {rule['bar']:+.4f} {under}"
