"""Branching: one objective per round, `width` implementations of it off the same incumbent.

Sibling 0 picks the round's objective (its summary states it); the loop hands that summary and the
earlier implementations to siblings 1.. so they implement the SAME objective differently. The best
evaluated sibling is kept unless it fails the noise gate; every other sibling is a rejected sibling.
"""

from __future__ import annotations

from typing import Any

from strategies import CandidateSpec, Integration, Scored, State, bad_value, check_opts
from strategies.reasons import by_gate, gate
from strategies.verdicts import Verdict


class Branching:
    id = "branching"
    reads_members = False
    DEFAULTS: dict[str, Any] = {"width": 3}

    def __init__(self, width: int = 3) -> None:
        self.width = width

    @classmethod
    def from_opts(cls, opts: dict[str, Any]) -> Branching:
        merged = check_opts(cls.id, opts, cls.DEFAULTS)
        if merged["width"] < 1:
            raise bad_value(cls.id, "width", merged["width"], "an integer >= 1", cls.DEFAULTS)
        return cls(width=int(merged["width"]))

    def plan(self, state: State) -> list[CandidateSpec]:
        parent = state.incumbent.genome_hash
        return [CandidateSpec(parent_hash=parent, share_objective=sibling > 0)
                for sibling in range(self.width)]

    def integrate(self, state: State, scored: list[Scored]) -> Integration:
        evaluated = [s for s in scored if s.evaluated and s.genome_hash is not None]
        verdicts = {s.sibling: Verdict.REJECT for s in evaluated}
        reasons = {s.sibling: by_gate(s, False) if not s.keep_by_gate else f"rejected: {gate(s)}"
                   for s in evaluated}
        incumbent = state.incumbent.genome_hash
        if evaluated:
            # highest val composite wins; an exact tie goes to the earlier sibling
            best = max(evaluated, key=lambda s: (s.composite, -s.sibling))
            if best.keep_by_gate and best.genome_hash is not None:
                verdicts[best.sibling] = Verdict.KEEP
                incumbent = best.genome_hash
            reasons.update(self.reasons(best, evaluated))
        selected = (incumbent,) if incumbent != state.incumbent.genome_hash else ()
        return Integration(verdicts=verdicts, incumbent=incumbent, selected=selected, reasons=reasons)

    @staticmethod
    def reasons(best: Scored, evaluated: list[Scored]) -> dict[int, str]:
        """Why each sibling got its verdict once `best` (the highest composite) was chosen."""
        out = {}
        if best.keep_by_gate:
            many = f"best of {len(evaluated)} siblings and " if len(evaluated) > 1 else ""
            out[best.sibling] = f"kept: {many}{by_gate(best, True).removeprefix('kept: ')}"
        for s in evaluated:
            if s is best or not s.keep_by_gate:
                continue
            out[s.sibling] = (f"rejected: sibling {best.sibling} had the best composite but failed the gate, "
                              "so the round kept nothing" if not best.keep_by_gate else
                              f"rejected: sibling {best.sibling} was better (composite {best.composite:.4f} "
                              f"vs {s.composite:.4f}); {gate(s)}")
        return out
