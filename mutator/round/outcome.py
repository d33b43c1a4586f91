"""What one evaluation (or one pass over part of it) gave: its cells' figures, what ran and what it cost, and
whether every cell is final. A record: it knows nothing of the store or the run."""

from __future__ import annotations

from dataclasses import dataclass, field

from mutator.scoring.score import CellFigures


@dataclass(frozen=True)
class Outcome:
    evaluation_id: int
    cells: tuple[CellFigures, ...]
    ran: int            # cells whose agent ran now (0 = served from the cache)
    ran_cost: float     # USD spent now: the agents that ran, and any grader's own calls (a judge)
    complete: bool = True                       # every cell stored and final (ok, agent_error, timeout)
    failures: dict = field(default_factory=dict)  # {status: count} of the cells that are not ok
    n_cells: int = 0
    budget_stop: str = ""                       # why cells were left unstarted (the run's budget), "" if none
    first_error: str = ""                       # one failing cell's error, for a message
    regraded: int = 0                           # cells graded now from an agent run already paid for

    @property
    def n_failed(self) -> int:
        return sum(self.failures.values())
