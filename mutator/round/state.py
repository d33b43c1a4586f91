"""What a strategy may see at the start of a round (strategies' `State`), read from the store, never run.

The incumbent, every genome scored on val and the last pool snapshot, all as the previous round left them (a
round stopped after its decision, e.g. before its train evidence, is planned and integrated again from the
same state, so it selects the same genomes)."""

from __future__ import annotations

import random

from eval.cells import evaluation_key
from mutator.round.eras import Decisions
from mutator.round.session import Session, Suites
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import Normalisers, per_task, summarise
from mutator.store import cache
from mutator.store.attempts import incumbent_before, pool_snapshot, scored_genomes
from mutator.store.db import loads
from strategies import Member, State, Strategy


def round_state(session: Session, suites: Suites, decisions: Decisions, strategy: Strategy, round_no: int,
                val_norm: Normalisers) -> State:
    """The State round `round_no` plans from."""
    incumbent = incumbent_before(session.db, session.run_id, round_no) or session.run()["incumbent_hash"]
    scored = scored_genomes(session.db, session.run_id, round_no) \
        if getattr(strategy, "reads_members", True) else []   # each one's cells: a cost growing per round
    pooled = session.last_pooled(before=round_no)
    snapshot = pool_snapshot(session.db, pooled) if pooled else None

    def member(genome_hash: str) -> Member:
        return scored_member(session, suites, decisions, genome_hash, val_norm)
    return State(round=round_no, incumbent=member(incumbent),
                 rng=random.Random(f"{session.settings.seed}:{session.run_id}:{round_no}"),
                 members=tuple(member(h) for h in scored),
                 pool=tuple(loads(snapshot)) if snapshot else ())


def scored_member(session: Session, suites: Suites, decisions: Decisions, genome_hash: str,
                  val_norm: Normalisers) -> Member:
    """A genome as a strategy sees it: what is stored, never a run (an attempt decided at an early look is
    scored on the waves it ran)."""
    cells = session.evaluator.evaluate(session.genomes.path(genome_hash), genome_hash, session.skill_name,
                                       suites.val, label="val (cached)", run=False).cells
    tasks = per_task(cells, session.weights, val_norm)
    return Member(genome_hash, summarise(cells, session.weights, val_norm).composite,
                  {t: f.composite for t, f in tasks.items()},
                  train_tasks(session, suites, decisions, genome_hash))


def train_tasks(session: Session, suites: Suites, decisions: Decisions, genome_hash: str) -> dict[str, float]:
    """Per-train-task composites from the genome's finished train evidence; never runs a cell."""
    found = cache.evaluation_id(session.db, evaluation_key(genome_hash, suites.train, session.contract))
    evidence = found and session.evaluator.outcome(found, only=decisions.evidence_cells(suites.train),
                                                   members=len(session.settings.models))
    if not evidence or not evidence.complete:
        return {}
    norm = stored_normalisers(session.run(), "train")
    return {t: f.composite for t, f in per_task(evidence.cells, session.weights, norm).items()}
