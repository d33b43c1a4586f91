"""What `--plan` reads of earlier work in the store: a measured gate noise, the seed's cost per cell, the mean
mutator call. Each answers None when the store has nothing (or not the table) to measure it from."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows


def pooled_noise(db: sqlite_utils.Database, kind: str, val_hash: str,
                 agent: str | None = None) -> dict | None:
    """{gate_s, gate_df, id, replicates} of the newest gated attempt of a run of this kind on this val
    suite; `agent`: only runs by that build agent (its implementation id)."""
    if "runs" not in db.table_names():
        return None
    by_agent = " and json_extract(r.config, '$.contract.agent') = ?" if agent else ""
    found = rows(db, "select a.gate_s, a.gate_df, r.id, r.replicates from attempts a join runs r on "
                     "r.id = a.run_id where r.kind = ? and r.val_hash = ? and a.gate_s is not null "
                     f"and a.gate_df > 0{by_agent} order by r.created_at desc, a.id desc limit 1",
                 [kind, val_hash, *([agent] if agent else [])])
    return found[0] if found else None


def has_evaluations(db: sqlite_utils.Database) -> bool:
    return "evaluations" in db.table_names()


def has_attempts(db: sqlite_utils.Database) -> bool:
    return "attempts" in db.table_names()


def seed_cells_cost(db: sqlite_utils.Database, genome_hash: str, model: str, agent: str, *,
                    no_fake: bool) -> dict:
    """{usd, cells}: the summed cost and cells of the finished evaluations of this genome and model by the
    build agent `agent` (a LIKE pattern); `no_fake` leaves out the fakes' evaluations."""
    sql = ("select sum(cost_usd_total) as usd, sum(n_done) as cells from evaluations where genome_hash = ? "
           "and model = ? and status = 'done' and contract like ?")
    found = rows(db, sql + (" and contract not like '%\"agent\": \"fake@%'" if no_fake else ""),
                 [genome_hash, model, f'%"agent": "{agent}"%'])
    return found[0] if found else {}


def mutator_calls(db: sqlite_utils.Database, mutator_model: str, *, real: bool) -> dict:
    """{usd, n}: the mean cost and number of this store's paid mutator calls at this model, real ones or the
    dry runs' fakes."""
    kind = "json_extract(r.config, '$.mutator') not like 'fake@%'" if real else \
        "json_extract(r.config, '$.mutator') like 'fake@%'"
    found = rows(db, "select avg(a.mutator_cost_usd) as usd, count(*) as n from attempts a join runs r on "
                     f"r.id = a.run_id where r.mutator_model = ? and a.mutator_cost_usd > 0 and {kind}",
                 [mutator_model])
    return found[0] if found else {}
