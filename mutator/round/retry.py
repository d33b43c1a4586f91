"""--retry-failed: which failed cells run again when a run resumes (the evaluations no verdict rests on
yet)."""

from __future__ import annotations

import sqlite_utils

from eval.cells import Contract, evaluation_key
from eval.suite import Suite
from mutator.store import cache
from mutator.store.attempts import undecided, update_attempt
from strategies.verdicts import AttemptStatus


def reopen_failed(db: sqlite_utils.Database, run_id: str, run: dict, suites: tuple[Suite, ...],
                  contract: Contract) -> str:
    """--retry-failed: run again the failed cells of the evaluations no verdict rests on yet (the seed's
    before any round is done, and the unfinished round's); evaluations under a decided verdict keep
    their cells, so every stored gate figure still re-derives from them. Returns the line to print."""
    done = run["rounds_done"] or 0
    val = suites[0]
    keys = [evaluation_key(run["seed_hash"], suite, contract) for suite in suites] if done == 0 else []
    for a in undecided(db, run_id, done):
        keys.append(evaluation_key(a.genome_hash, val, contract))
        # FAILED for an unhealthy evaluation: decide it again
        if a.status == AttemptStatus.FAILED and a.failures:
            update_attempt(db, a.id, {"status": AttemptStatus.PENDING, "verdict": None, "reason": None,
                                      "error": None, "failures": None, "finished_at": None})
    ids = cache.evaluation_ids(db, keys)
    n = cache.reopen_failed(db, ids)
    return (f"--retry-failed: {n} failed cell(s) of {len(ids)} evaluation(s) will run again"
            + (f"; the {done} decided round(s) keep their cells" if done else ""))
