"""The gate's pooled noise from a run's earlier comparisons, kept as the rounds add them: a round reads only
the attempts that changed since the last (mutator/store/figures.py) and extends the sums, so the gate costs no
more at round 500 than at round 5.

The sums are made in attempt id order, one comparison after another, exactly as gate.pooling_sums makes them
over the same list: the gate's floats are the same whichever way they were reached. A change that cannot be
applied in that order (an earlier attempt's gate rewritten, a comparison gone, one added before the last)
rebuilds the pool."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mutator.scoring.gate import pooling_sums
from mutator.scoring.score import Comparison

# an attempt's place in the pool: its stored gate (what the comparison was read
# from) and the comparison, or None
Member = Callable[[int], tuple[tuple, Comparison] | None]


class Prior(tuple):
    """A run's earlier comparisons in attempt id order, with `sums` = gate.pooling_sums(self)."""

    sums: tuple[float, int]

    def __new__(cls, comparisons: Iterable[Comparison], sums: tuple[float, int] | None = None) -> Prior:
        made = super().__new__(cls, comparisons)
        made.sums = pooling_sums(tuple(made)) if sums is None else sums
        return made


class Pool:
    """One suite's comparisons of one run (kept up to date by the session: store.figures.Kept)."""

    def __init__(self) -> None:
        self.keys: dict[int, tuple] = {}        # attempt id -> the stored gate its comparison was read from
        self.ids: list[int] = []
        self.comparisons: list[Comparison] = []
        self.weighted, self.df = 0.0, 0

    @classmethod
    def build(cls, ids: Iterable[int], member: Member) -> Pool:
        pool = cls()
        for attempt_id in ids:
            if (found := member(attempt_id)) is not None:
                pool._add(attempt_id, *found)
        return pool

    def _add(self, attempt_id: int, key: tuple, comparison: Comparison) -> None:
        term, k = pooling_sums([comparison])     # the term gate.pooling_sums adds for it (0.0 + x is x)
        self.weighted, self.df = self.weighted + term, self.df + k
        self.keys[attempt_id] = key
        self.ids.append(attempt_id)
        self.comparisons.append(comparison)

    def update(self, changed: Iterable[int], member: Member) -> bool:
        """Apply the attempts changed since; False when one cannot be applied in id order (then rebuild)."""
        for attempt_id in sorted(changed):
            found = member(attempt_id)
            if (found[0] if found else None) == self.keys.get(attempt_id):
                continue                                     # not a comparison, or the same one
            if found is None or attempt_id in self.keys or (self.ids and attempt_id < self.ids[-1]):
                return False
            self._add(attempt_id, *found)
        return True

    def prior(self, exclude: int) -> Prior:
        if exclude in self.keys:
            return Prior(c for i, c in zip(self.ids, self.comparisons) if i != exclude)
        return Prior(self.comparisons, (self.weighted, self.df))
