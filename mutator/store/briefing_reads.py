"""What the mutator's briefing and its staged evidence read of the run: the ledger's attempt columns, the
attempts whose rollouts and diffs are staged, the parent's failing train tests and skill use, a round's
earlier siblings. Rows as stored; never what the briefing says of them (mutator/briefing/)."""

from __future__ import annotations

import sqlite_utils

from mutator.store.db import rows

LEDGER = ("round, sibling, verdict, summary, reasoning, delta, delta_eval, delta_cost, delta_steps, "
          "train_evaluation_id, parent_hash, status, error, skills_touched")


def ledger_attempts(db: sqlite_utils.Database, run_id: str, last: int | None = None) -> list[dict]:
    """The ledger's columns of every decided attempt of the run after round 0, newest first (the `last`
    ones when given)."""
    sql = (f"select {LEDGER} from attempts where run_id = ? and round > 0 and verdict is not "
           "null order by round desc, sibling desc" + (" limit ?" if last is not None else ""))
    return [dict(r) for r in db.query(sql, [run_id, *([last] if last is not None else [])])]


def ledger_attempt(db: sqlite_utils.Database, attempt_id: int) -> dict:
    """The ledger's columns of one attempt."""
    return [dict(r) for r in db.query(f"select {LEDGER} from attempts where id = ?", [attempt_id])][0]


def attempts_since(db: sqlite_utils.Database, run_id: str, since: int) -> list[dict]:
    """{round, sibling, parent_hash, genome_hash, train_evaluation_id} of the run's attempts from round
    `since` on."""
    return [dict(r) for r in db.query(
        "select round, sibling, parent_hash, genome_hash, train_evaluation_id from attempts "
        "where run_id = ? and round >= ? order by round, sibling", [run_id, since])]


def done_evaluation(db: sqlite_utils.Database, evaluation_id: int) -> dict | None:
    """{finished_at} of the evaluation when it is done, else None."""
    found = rows(db, "select finished_at from evaluations where id = ? and status = 'done'", [evaluation_id])
    return found[0] if found else None


def failing_tests(db: sqlite_utils.Database, evaluation_ids: list[int]) -> list[dict]:
    """{task_id, name} of every named test scored below 1 in these evaluations' cells."""
    marks = ", ".join("?" * len(evaluation_ids))
    return rows(db, "select c.task_id, t.name from tests t join cells c on c.id = t.cell_id where "
                    f"c.evaluation_id in ({marks}) and t.score < 1", evaluation_ids)


def cell_skill_uses(db: sqlite_utils.Database, evaluation_ids: list[int]) -> list[dict]:
    """{task_id, skill_use} of every cell of these evaluations."""
    marks = ", ".join("?" * len(evaluation_ids))
    return rows(db, f"select task_id, skill_use from cells where evaluation_id in ({marks})", evaluation_ids)


def earlier_siblings(db: sqlite_utils.Database, run_id: str, round_no: int, sibling: int) -> list[dict]:
    """{sibling, parent_hash, genome_hash, summary} of the round's siblings before this one that made a
    genome."""
    return rows(db, "select sibling, parent_hash, genome_hash, summary from attempts where run_id = ? "
                    "and round = ? and sibling < ? and genome_hash is not null order by sibling",
                [run_id, round_no, sibling])
