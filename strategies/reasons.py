"""The words of a verdict's reason that every strategy shares: the gate's figures and which side of it Δ fell.

A strategy's `integrate` says why each candidate got its verdict at the moment it decides; the loop stores the
sentence and the dashboard shows it as stored. Pure: a `Scored` in, words out.
"""

from __future__ import annotations

from collections.abc import Sequence

from strategies import Scored

ON_THRESHOLD = 1e-9   # a Δ this close to its threshold sits on it: a sign-flip gate's stored coin decided


def signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def gate(c: Scored) -> str:
    """'Δ +0.0123 vs gate threshold -0.0456'."""
    return f"Δ {signed(c.delta)} vs gate threshold {signed(c.threshold)}"


def side(c: Scored, kept: bool) -> str:
    """Which side of the threshold Δ fell, and what decided when Δ alone did not."""
    known = c.delta is not None and c.threshold is not None
    if known and abs(c.delta - c.threshold) <= ON_THRESHOLD:
        return "(Δ exactly on it: the gate's stored coin decided, as its sign-flip rule prescribes)"
    if not kept and not c.keep_by_gate and c.rejected_on:
        return (f"(a decisive loss on {', '.join(c.rejected_on)}: score.modelGate 'each' rejects a loss on "
                "any model, Holm over the models)")
    if known and c.keep_rule and c.keep_rule["keep"] != c.keep_rule["gate_keep"]:
        return by_rule(c.keep_rule, kept)
    if known and not kept and not c.keep_by_gate and c.delta > c.threshold + ON_THRESHOLD:
        return ("(Δ above it but below minImprovement: a tie, and it adds cost, so the tie rule "
                "'noAddedCost' rejects it)")
    return "(Δ at or above it)" if kept else "(Δ below it)"


def by_rule(rule: dict, kept: bool) -> str:
    """Why the keep rule (score.keepRule) decided otherwise than the gate's threshold."""
    name = f"the keep rule '{rule['rule']}'"
    if rule["rule"] == "eb":
        return (f"(Δ {'below' if kept else 'above'} it, but {name} puts the posterior mean gain at "
                f"{signed(rule['posterior'])}, {'above' if kept else 'not above'} minImprovement)")
    if kept:
        return f"({name} keeps it: Δ above {signed(rule['bar'])})"
    what = "only Δ above minImprovement" if rule["rule"] == "positive" else "only a decisive win"
    return f"(Δ above it, but {name} keeps {what}, Δ above {signed(rule['bar'])})"


def by_gate(c: Scored, kept: bool) -> str:
    """'kept: Δ … vs gate threshold … (Δ at or above it)' or its rejected twin."""
    return f"{'kept' if kept else 'rejected'}: {gate(c)} {side(c, kept)}"


def twin(c: Scored, scored: Sequence[Scored]) -> Scored | None:
    """An earlier evaluated sibling of this round that produced the same genome."""
    return next((s for s in scored
                 if s.evaluated and s.genome_hash == c.genome_hash and s.sibling < c.sibling),
                None)


def same_genome_first(first: Scored) -> str:
    return f"rejected: sibling {first.sibling} produced the same genome first"
