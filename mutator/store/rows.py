"""The attempt as the store gives it back: one frozen `AttemptRow` per row of `attempts`, read by attribute.

The round reads an attempt only through this record (mutator/store/attempts.py returns it); its JSON columns
stay text here, parsed where they are used. A column added by a migration is a field added here."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class AttemptRow:
    id: int
    run_id: str
    round: int
    sibling: int
    parent_hash: str | None = None
    genome_hash: str | None = None
    ref_hashes: str | None = None          # JSON list
    status: str | None = None
    verdict: str | None = None
    summary: str | None = None
    reasoning: str | None = None
    critic: str | None = None              # JSON: the critic's checks
    error: str | None = None
    val_evaluation_id: int | None = None
    train_evaluation_id: int | None = None
    composite: float | None = None
    eval: float | None = None
    cost: float | None = None
    steps: float | None = None
    delta: float | None = None
    delta_eval: float | None = None
    delta_cost: float | None = None
    delta_steps: float | None = None
    gate_threshold: float | None = None
    gate_se: float | None = None
    gate_s: float | None = None
    gate_df: float | None = None
    gate_t: float | None = None
    gate_n: int | None = None
    gate: str | None = None                # JSON: the gate's figures
    pool_snapshot: str | None = None       # JSON
    mutator_cost_usd: float | None = None
    diff_stat: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    confirm: str | None = None             # JSON: the confirmation's record
    failures: str | None = None            # JSON: {status: count}
    mutator_input_tokens: int | None = None
    mutator_output_tokens: int | None = None
    mutator_cache_write_tokens: int | None = None
    mutator_cache_read_tokens: int | None = None
    mutator_retries: int | None = None
    mutator_priced_cost_usd: float | None = None
    mutator_reported_cost_usd: float | None = None
    screen: str | None = None              # JSON: the screen's record
    looks: str | None = None               # JSON: every look's record
    reason: str | None = None
    incumbent_after: str | None = None
    comparator_hash: str | None = None
    comparator_evaluation_id: int | None = None
    skills_touched: str | None = None      # a skill set's member(s) the change touched (comma-separated)

    @classmethod
    def of(cls, row: dict) -> AttemptRow:
        """The record of one stored row (a column the record does not know is left out)."""
        return cls(**{k: row[k] for k in _NAMES if k in row})


_NAMES = tuple(f.name for f in fields(AttemptRow))
