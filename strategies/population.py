"""Population: a pool of the best N genomes; each generation breeds M children from it.

Parents are drawn by rank weight (rank 1 of N weighs N, the last weighs 1); with probability
crossoverRate a child gets a second parent as a read-only reference (lineage stays single-parent).
Scored children join the pool, the pool is cut back to N by val composite, and its leader is the
incumbent. "Kept" means survived the cut. The pool is returned for the attempt's pool_snapshot, so a
resumed run rehydrates it from the store without re-scoring anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strategies import CandidateSpec, Integration, Scored, State, bad_value, check_opts
from strategies.reasons import same_genome_first, twin
from strategies.verdicts import Verdict


def composites(state: State) -> dict[str, float]:
    table = {m.genome_hash: m.composite for m in state.members}
    table[state.incumbent.genome_hash] = state.incumbent.composite
    return table


def ranked(hashes: Sequence[str], composite: dict[str, float]) -> list[str]:
    """Best val composite first; ties keep their given order (older pool members before newcomers)."""
    order = {h: i for i, h in enumerate(hashes)}
    return sorted(dict.fromkeys(hashes), key=lambda h: (-composite[h], order[h]))


def rank_weights(n: int) -> list[int]:
    return list(range(n, 0, -1))


class Population:
    id = "population"
    reads_members = True
    DEFAULTS: dict[str, Any] = {"pool": 4, "children": 2, "crossoverRate": 0.5}

    def __init__(self, pool: int = 4, children: int = 2, crossover_rate: float = 0.5) -> None:
        self.size, self.children, self.crossover_rate = pool, children, crossover_rate

    @classmethod
    def from_opts(cls, opts: dict[str, Any]) -> Population:
        merged = check_opts(cls.id, opts, cls.DEFAULTS)
        for key in ("pool", "children"):
            if merged[key] < 1:
                raise bad_value(cls.id, key, merged[key], "an integer >= 1", cls.DEFAULTS)
        if not 0.0 <= merged["crossoverRate"] <= 1.0:
            raise bad_value(cls.id, "crossoverRate", merged["crossoverRate"], "a number in [0, 1]",
                            cls.DEFAULTS)
        return cls(int(merged["pool"]), int(merged["children"]), float(merged["crossoverRate"]))

    def current_pool(self, state: State) -> list[str]:
        """The last snapshot, or (first generation) the best N genomes scored so far."""
        composite = composites(state)
        if state.pool:
            known = [h for h in state.pool if h in composite]
            if known:
                return ranked(known, composite)
        everyone = [m.genome_hash for m in state.members] or [state.incumbent.genome_hash]
        return ranked(everyone, composite)[: self.size]

    def plan(self, state: State) -> list[CandidateSpec]:
        pool = self.current_pool(state)
        weights = rank_weights(len(pool))
        specs = []
        for _ in range(self.children):
            parent = state.rng.choices(pool, weights=weights)[0]
            cross = state.rng.random() < self.crossover_rate  # drawn every time: a stable random stream
            others = [(h, w) for h, w in zip(pool, weights, strict=True) if h != parent]
            if cross and others:
                ref = state.rng.choices([h for h, _ in others], weights=[w for _, w in others])[0]
                specs.append(CandidateSpec(parent_hash=parent, ref_hashes=(ref,)))
            else:
                specs.append(CandidateSpec(parent_hash=parent))
        return specs

    def integrate(self, state: State, scored: list[Scored]) -> Integration:
        composite = composites(state)
        pool = self.current_pool(state)
        entries, newcomers = list(pool), {}
        for child in scored:
            if not child.evaluated or child.genome_hash is None:
                continue
            if child.genome_hash in entries:  # a genome already in the pool adds nothing new
                newcomers.setdefault(child.genome_hash, None)
                continue
            entries.append(child.genome_hash)
            composite[child.genome_hash] = child.composite
            newcomers[child.genome_hash] = child.sibling
        survivors = ranked(entries, composite)[: self.size]
        verdicts = {}
        for child in scored:
            if child.evaluated and child.genome_hash is not None:
                first_entry = newcomers.get(child.genome_hash) == child.sibling
                survives = first_entry and child.genome_hash in survivors
                verdicts[child.sibling] = Verdict.KEEP if survives else Verdict.REJECT
        selected = tuple(h for h, sib in newcomers.items() if sib is not None and h in survivors)
        reasons = {c.sibling: self.reason(c, verdicts[c.sibling], scored, pool, survivors, composite)
                   for c in scored if c.sibling in verdicts}
        return Integration(verdicts=verdicts, incumbent=survivors[0], selected=selected,
                           pool=tuple(survivors), reasons=reasons)

    def reason(self, child: Scored, verdict: str, scored: list[Scored], before: list[str],
               survivors: list[str], composite: dict[str, float]) -> str:
        """Why a child entered the pool (and where), or why it did not."""
        if verdict == "KEEP":
            rank = survivors.index(child.genome_hash or "") + 1
            return ("kept: entered the pool as its leader (the new incumbent)" if rank == 1 else
                    f"kept: entered the pool at rank {rank} of {len(survivors)}")
        first = twin(child, scored)
        if first is not None:
            return same_genome_first(first)
        if child.genome_hash in before:
            return "rejected: this genome was already in the pool (it adds nothing new)"
        return (f"rejected: did not make the pool's top {self.size} (composite {child.composite:.4f} < "
                f"{composite[survivors[-1]]:.4f}, the pool's last)")

