"""Pareto (after GEPA): parents come from the per-val-task Pareto front, aimed at what they lose.

The front holds every scored genome that is best on at least one val task (ties included) and is not
dominated by another; a parent is drawn weighted by how many tasks it leads. The mutator is pointed at
the TRAIN tasks where that parent trails the front (it must never learn which val tasks moved).
Kept = entered the front or became the champion. The champion (incumbent) changes only to this round's best
newcomer by mean val composite, and only when that newcomer beats the champion's composite AND passes the
noise gate against it: a lucky score must not take the lead on noise (the front keeps every member either
way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strategies import CandidateSpec, Integration, Member, Scored, State, bad_value, check_opts
from strategies.reasons import gate, same_genome_first, twin
from strategies.verdicts import Verdict

TIE = 1e-12  # scores this close are a tie (float sums of the same cells)


def dominates(a: dict[str, float], b: dict[str, float], tasks: Sequence[str]) -> bool:
    """a is at least as good as b on every task and strictly better on one."""
    lo = float("-inf")
    return all(a.get(t, lo) >= b.get(t, lo) - TIE for t in tasks) and \
        any(a.get(t, lo) > b.get(t, lo) + TIE for t in tasks)


def front(members: Sequence[Member]) -> dict[str, int]:
    """genome hash -> number of val tasks it leads, for the non-dominated task leaders (in member order)."""
    unique = list({m.genome_hash: m for m in members}.values())
    tasks = sorted({t for m in unique for t in m.task_composites})
    if not tasks:
        return {m.genome_hash: 1 for m in unique[:1]}
    lo = float("-inf")
    best = {t: max(m.task_composites.get(t, lo) for m in unique) for t in tasks}
    leads = {m.genome_hash: sum(1 for t in tasks if m.task_composites.get(t, lo) >= best[t] - TIE)
             for m in unique}
    leaders = [m for m in unique if leads[m.genome_hash] > 0]
    return {m.genome_hash: leads[m.genome_hash] for m in leaders
            if not any(dominates(o.task_composites, m.task_composites, tasks) for o in leaders if o is not m)}


def target_tasks(parent: Member, rivals: Sequence[Member], limit: int) -> tuple[str, ...]:
    """Train tasks where the parent trails the best rival, biggest gap first; else its own weakest tasks."""
    mine = parent.train_task_composites
    if not mine:
        return ()
    best = {t: max([m.train_task_composites[t] for m in rivals if t in m.train_task_composites] or [mine[t]])
            for t in mine}
    losses = sorted((t for t in mine if best[t] > mine[t] + TIE), key=lambda t: (mine[t] - best[t], t))
    if not losses:
        top = max(mine.values())
        losses = sorted((t for t in mine if mine[t] < top - TIE), key=lambda t: (mine[t], t))
    return tuple(losses[:limit])


class Pareto:
    id = "pareto"
    reads_members = True
    DEFAULTS: dict[str, Any] = {"targets": 3}

    def __init__(self, targets: int = 3) -> None:
        self.targets = targets

    @classmethod
    def from_opts(cls, opts: dict[str, Any]) -> Pareto:
        merged = check_opts(cls.id, opts, cls.DEFAULTS)
        if merged["targets"] < 0:
            raise bad_value(cls.id, "targets", merged["targets"], "an integer >= 0", cls.DEFAULTS)
        return cls(targets=int(merged["targets"]))

    @staticmethod
    def everyone(state: State) -> list[Member]:
        found = {m.genome_hash: m for m in state.members}
        found.setdefault(state.incumbent.genome_hash, state.incumbent)
        return list(found.values())

    def plan(self, state: State) -> list[CandidateSpec]:
        members = self.everyone(state)
        leads = front(members)
        hashes = list(leads)
        parent_hash = state.rng.choices(hashes, weights=[leads[h] for h in hashes])[0]
        by_hash = {m.genome_hash: m for m in members}
        rivals = [by_hash[h] for h in hashes if h != parent_hash]
        return [CandidateSpec(parent_hash=parent_hash,
                              target_tasks=target_tasks(by_hash[parent_hash], rivals, self.targets))]

    def integrate(self, state: State, scored: list[Scored]) -> Integration:
        members = self.everyone(state)
        known = {m.genome_hash for m in members}
        newcomers: dict[str, int] = {}
        for child in scored:
            if child.evaluated and child.genome_hash is not None and child.genome_hash not in known:
                known.add(child.genome_hash)
                newcomers[child.genome_hash] = child.sibling
                members.append(Member(child.genome_hash, child.composite, dict(child.task_composites)))
        leads = front(members)
        current = state.incumbent.genome_hash
        order = {m.genome_hash: i for i, m in enumerate(members)}
        # the new best must beat the champion's mean composite and pass the gate against it (the loop gates
        # every candidate against the incumbent); an exact tie keeps the earliest sibling
        challengers = [c for c in scored if c.evaluated and c.genome_hash in newcomers
                       and newcomers[c.genome_hash] == c.sibling]
        best = max(challengers, key=lambda c: (c.composite, -c.sibling), default=None)
        incumbent = current
        if best is not None and best.keep_by_gate and best.composite > state.incumbent.composite + TIE:
            incumbent = best.genome_hash
        verdicts = {c.sibling: Verdict.KEEP if newcomers.get(c.genome_hash or "") == c.sibling
                    and (c.genome_hash in leads or c.genome_hash == incumbent) else Verdict.REJECT
                    for c in scored if c.evaluated and c.genome_hash is not None}
        selected = [h for h in newcomers if h in leads]
        if incumbent != current and incumbent not in selected:
            selected.append(incumbent)
        pool = tuple(sorted(leads, key=lambda h: (-leads[h], order[h])))
        reasons = {c.sibling: reason(c, verdicts[c.sibling], scored,
                                     incumbent != current and c.genome_hash == incumbent,
                                     scored_before=c.genome_hash not in newcomers)
                   for c in scored if c.sibling in verdicts}
        return Integration(verdicts=verdicts, incumbent=incumbent, selected=tuple(selected), pool=pool,
                           reasons=reasons)


def reason(c: Scored, verdict: str, scored: list[Scored], champion: bool, *, scored_before: bool) -> str:
    """Why a candidate entered the front (or took the lead), or why it did not."""
    if verdict == "KEEP":
        return ("kept: the new champion — it beat the champion's "
                f"val composite and passed the gate ({gate(c)})"
                if champion else
                "kept: a new genome on the per-task Pareto front (the champion stays unless a new best "
                "passes the gate)")
    first = twin(c, scored)
    if first is not None:
        return same_genome_first(first)
    if scored_before:
        return "rejected: this genome was already scored in an earlier round (it adds nothing new)"
    return "rejected: not on the per-task Pareto front (another genome leads each of its tasks)"
