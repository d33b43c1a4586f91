"""Greedy: one candidate per round from the incumbent; kept unless the noise gate rejects it."""

from __future__ import annotations

from typing import Any

from strategies import CandidateSpec, Integration, Scored, State, check_opts
from strategies.reasons import by_gate
from strategies.verdicts import Verdict


class Greedy:
    id = "greedy"
    reads_members = False

    @classmethod
    def from_opts(cls, opts: dict[str, Any]) -> Greedy:
        check_opts(cls.id, opts, {})
        return cls()

    def plan(self, state: State) -> list[CandidateSpec]:
        return [CandidateSpec(parent_hash=state.incumbent.genome_hash)]

    def integrate(self, state: State, scored: list[Scored]) -> Integration:
        verdicts: dict[int, str] = {}
        reasons: dict[int, str] = {}
        incumbent = state.incumbent.genome_hash
        for candidate in scored:
            if not candidate.evaluated or candidate.genome_hash is None:
                continue
            verdicts[candidate.sibling] = Verdict.KEEP if candidate.keep_by_gate else Verdict.REJECT
            reasons[candidate.sibling] = by_gate(candidate, candidate.keep_by_gate)
            if candidate.keep_by_gate:
                incumbent = candidate.genome_hash
        selected = (incumbent,) if incumbent != state.incumbent.genome_hash else ()
        return Integration(verdicts=verdicts, incumbent=incumbent, selected=selected, reasons=reasons)
