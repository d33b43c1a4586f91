"""Spend as an x axis (Compare, History): each attempt's cumulative cells and USD within its run, from stored
rows.

An attempt adds the cells (graded, `evaluations.n_done`) and the USD (`evaluations.cost_usd_total`) of each
val or train evaluation its run had not used before, its screen's (the train evaluation of its genome under
the run's contract, which a screened-out or rejected candidate never stores on the attempt), plus its own
mutator call (`attempts.mutator_cost_usd`). An evaluation served from the cache of another run counts in each
run that uses it: the axis compares strategies by the work their curves rest on, not by the bill (the Cost
page is the bill).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils

# per attempt, in one read: its val, train and screen evaluations (the screen's: the run's own train
# evaluation of the genome, same suite, eval model(s), replicates), each as (id, graded cells, USD)
SQL = ("select x.round, x.sibling, x.mutator, x.v, v.n_done, v.cost_usd_total, x.t, t.n_done, "
       "t.cost_usd_total, x.s, s.n_done, s.cost_usd_total from (select a.round, a.sibling, "
       "coalesce(a.mutator_cost_usd, 0) as mutator, a.val_evaluation_id as v, a.train_evaluation_id as t, "
       "case when a.screen is not null and a.train_evaluation_id is null then (select e.id from "
       "evaluations e where e.genome_hash = a.genome_hash and e.suite = r.suite and e.model = r.model "
       "and e.replicates = r.replicates order by e.id limit 1) end as s "
       "from attempts a join runs r on r.id = a.run_id where a.run_id = ?) x "
       "left join evaluations v on v.id = x.v left join evaluations t on t.id = x.t "
       "left join evaluations s on s.id = x.s order by x.round, x.sibling")


@dataclass(frozen=True)
class SpendPoint:
    """The run's spend once the attempt at (round, sibling) was stored."""
    round: int
    sibling: int
    cells: int
    usd: float


def cumulative(db: sqlite_utils.Database, run_id: str) -> list[SpendPoint]:
    """The run's cumulative spend after each attempt, in attempt order (round, sibling)."""
    seen: set[int] = set()
    cells, usd = 0, 0.0
    out = []
    for rnd, sibling, mutator, *used in db.conn.execute(SQL, [run_id]).fetchall():
        for k in (0, 3, 6):
            ev_id = used[k]
            if ev_id is not None and ev_id not in seen:
                seen.add(ev_id)
                cells += used[k + 1] or 0
                usd += used[k + 2] or 0.0
        usd += mutator
        out.append(SpendPoint(rnd, sibling, cells, usd))
    return out
