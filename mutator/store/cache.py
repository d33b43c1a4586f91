"""The evaluation cache: evaluation and cell rows keyed by the evaluation contract.

An evaluation row is keyed by genome + suite content + contract, and carries its agent key (genome + what the
agent saw of the suite + contract): another evaluation with that agent key lends its agent runs to be
re-graded (`reusable`, `adopt`), so a grader change re-grades and never re-runs an agent. A finished cell is
written the moment it is graded (the cell, its tests and the evaluation's counter in one transaction), so a
crash re-runs only the cells that never finished and a repeated key spends nothing. Only a final cell (ok,
agent_error, timeout) is a cached result: an infra_error cell is re-run and a grader_error cell re-graded, its
row replaced (retries counted, the earlier tries' cost kept). Never runs a cell itself.
"""

from __future__ import annotations

import json

import sqlite_utils

from eval.cells import Contract
from eval.jobs import FINAL, CellResult
from eval.suite import Suite
from mutator.store import ledger, triggers
from mutator.store.db import dumps, now


def find(db: sqlite_utils.Database, key: str) -> dict | None:
    found = list(db["evaluations"].rows_where("key = ?", [key]))
    return found[0] if found else None


def open_evaluation(db: sqlite_utils.Database, key: str, genome_hash: str, suite: Suite,
                    contract: Contract, agent_key: str | None = None) -> dict:
    """The evaluation row for this key, created ("running", no cells yet) when it is new. A row stored before
    agent keys existed gets its agent key now: the same key means the same suite, so the same agent side."""
    row = find(db, key)
    if row is None:
        db["evaluations"].insert({
            "key": key, "genome_hash": genome_hash, "suite": suite.name, "suite_hash": suite.content_hash,
            "split": suite.split, "contract": dumps(contract.to_json()), "model": contract.model,
            "replicates": contract.replicates, "status": "running", "agent_key": agent_key,
            "n_cells": len(suite.tasks) * contract.replicates, "n_done": 0, "started_at": now(),
            "no_trigger_tasks": triggers.no_trigger_json(suite)})
        row = find(db, key)
    elif agent_key and not row.get("agent_key"):
        db["evaluations"].update(row["id"], {"agent_key": agent_key})
        row = find(db, key)
    return row


# an agent run that finished, or failed on its own
REUSABLE = ("ok", "grader_error", "agent_error", "timeout")


def reusable(db: sqlite_utils.Database, evaluation_id: int, agent_key: str) -> dict[tuple[str, int], dict]:
    """{(task, replicate): cell row} of agent runs that other evaluations with this agent key hold and this
    one lacks (the newest of each): the same agent work under another grader, to re-grade rather than run
    again."""
    found: dict[tuple[str, int], dict] = {}
    marks = ", ".join("?" * len(REUSABLE))
    for r in db.query(f"select c.* from cells c join evaluations e on e.id = c.evaluation_id where "
                      f"e.agent_key = ? and e.id != ? and c.status in ({marks}) order by "
                      f"c.id", [agent_key, evaluation_id, *REUSABLE]):
        found[(r["task_id"], r["replicate"])] = dict(r)
    for r in db.query("select task_id, replicate from cells where evaluation_id = ?", [evaluation_id]):
        found.pop((r["task_id"], r["replicate"]), None)
    return found


def adopt(db: sqlite_utils.Database, evaluation_id: int, source: dict) -> None:
    """A cell whose agent failed on its own (agent_error, timeout: no grade to redo) taken over from another
    evaluation with the same agent key, pointing at its agent run; its cost is that run's, spent once."""
    row = {k: v for k, v in source.items() if k not in ("id", "evaluation_id")}
    row.update(evaluation_id=evaluation_id, finished_at=now(), retries=0, prior_cost_usd=0.0,
               grader_cost_usd=0.0, agent_cell_id=source.get("agent_cell_id") or source["id"])
    with db.conn:
        db.conn.execute(f"insert into cells ({', '.join(row)}) values ({', '.join('?' * len(row))})",
                        list(row.values()))
        db.conn.execute("update evaluations set n_done = n_done + 1 where id = ?", [evaluation_id])


def finished(db: sqlite_utils.Database, evaluation_id: int, *,
             retry_failed: bool = False) -> set[tuple[str, int]]:
    """(task, replicate) of every cell that is a cached result: a resume skips them. With retry_failed
    only the ok cells are (the user asked to re-run agent errors and timeouts too)."""
    statuses = ("ok",) if retry_failed else FINAL
    marks = ", ".join("?" * len(statuses))
    return {(r["task_id"], r["replicate"]) for r in
            db.query(f"select task_id, replicate from cells where evaluation_id = ? and status in ({marks})",
                     [evaluation_id, *statuses])}


def to_regrade(db: sqlite_utils.Database, evaluation_id: int) -> set[tuple[str, int]]:
    """grader_error cells: graded again from their kept working dir, no agent re-run."""
    return {(r["task_id"], r["replicate"]) for r in
            db.query("select task_id, replicate from cells where evaluation_id = ? and status = "
                     "'grader_error'",
                     [evaluation_id])}


def failure_counts(db: sqlite_utils.Database, evaluation_id: int) -> dict[str, int]:
    """{status: count} of the stored cells that are not ok."""
    return {r["status"]: r["n"] for r in db.query(
        "select status, count(*) as n from cells where evaluation_id = ? and status != 'ok' group by status "
        "order by status", [evaluation_id])}


def store_cell(db: sqlite_utils.Database, evaluation_id: int, cell: CellResult, *, payer: str | None = None,
               agent_cell_id: int | None = None) -> float:
    """The cell, its tests and the evaluation's counter commit together or not at all. A cell stored before
    (infra_error, grader_error, interrupted, or failed under --retry-failed) is replaced: its retries, the
    cost of its earlier tries and its judge's earlier calls carry over, so no spend is lost. A regraded cell
    keeps its agent's figures (the same agent run) and is charged only its new judge calls; `agent_cell_id`
    names the cell whose agent run this one re-graded (its agent cost is counted there, not here). The spend
    new with this row is charged to the `payer` run in the same transaction (so a crash never splits the two),
    and returned."""
    old = list(db.query("select id, cost_usd, retries, prior_cost_usd, grader_cost_usd, input_tokens, "
                        "output_tokens, cache_write_tokens, cache_read_tokens, priced_cost_usd, "
                        "reported_cost_usd, agent_cell_id from cells where evaluation_id = ? and task_id = ? "
                        "and replicate = ?",
                        [evaluation_id, cell.task_id, cell.replicate]))
    retries, prior, grader = cell.retries, 0.0, float(cell.extra.get("grader_cost_usd", 0.0))
    regraded = bool(cell.extra.get("regraded"))     # an agent run already paid for, graded again
    judged = grader
    new_spend = grader + (0.0 if regraded else cell.cost_usd)
    agent = {"cost_usd": cell.cost_usd, "input_tokens": cell.input_tokens,
             "output_tokens": cell.output_tokens, "cache_write_tokens": cell.cache_write_tokens,
             "cache_read_tokens": cell.cache_read_tokens}
    kept = ("priced_cost_usd", "reported_cost_usd", "api_retries", "grader_input_tokens",
            "grader_output_tokens", "node")
    extra = {k: cell.extra[k] for k in kept if k in cell.extra}
    if old:
        retries += (old[0]["retries"] or 0) + (0 if regraded else 1)
        prior = (old[0]["prior_cost_usd"] or 0.0) + (0.0 if regraded else old[0]["cost_usd"] or 0.0)
        grader += old[0]["grader_cost_usd"] or 0.0
        agent_cell_id = agent_cell_id or (old[0]["agent_cell_id"] if regraded else None)
        if regraded:
            agent = {key: old[0][key] for key in agent}
            extra.update({k: old[0][k] for k in ("priced_cost_usd", "reported_cost_usd")})
    row = {"evaluation_id": evaluation_id, "task_id": cell.task_id, "replicate": cell.replicate,
           "status": cell.status, "score": cell.score, **agent, "steps": cell.steps,
           "duration_ms": cell.duration_ms, "agent_subtype": cell.agent_subtype, "error": cell.error,
           "cell_dir": cell.cell_dir, "finished_at": now(), "retries": retries, "prior_cost_usd": prior,
           "grader_cost_usd": grader, "agent_cell_id": agent_cell_id, "skill_use": cell.skill_use, **extra}
    conn = db.conn
    with conn:
        if old:
            conn.execute("delete from tests where cell_id = ?", [old[0]["id"]])
            conn.execute("delete from cells where id = ?", [old[0]["id"]])
            conn.execute("update evaluations set n_done = n_done - 1 where id = ?", [evaluation_id])
        cursor = conn.execute(f"insert into cells ({', '.join(row)}) values ({', '.join('?' * len(row))})",
                              list(row.values()))
        conn.executemany("insert into tests (cell_id, name, score) values (?, ?, ?)",
                         [(cursor.lastrowid, name, score) for name, score in sorted(cell.tests.items())])
        conn.execute("update evaluations set n_done = n_done + 1 where id = ?", [evaluation_id])
        # on the ledger apart: the agent's run (nothing for a re-grade) and the judge's calls
        ledger.charge(conn, run_id=payer, usd=new_spend - judged, kind="cell", evaluation_id=evaluation_id)
        ledger.charge(conn, run_id=payer, usd=judged, kind="judge", evaluation_id=evaluation_id)
    return new_spend


def member_ids(db: sqlite_utils.Database, evaluation_id: int) -> dict[str, int]:
    """A group evaluation's {model: one-model evaluation id}; {} for a one-model evaluation."""
    found = list(db.query("select members from evaluations where id = ?", [evaluation_id]))
    return json.loads(found[0]["members"]) if found and found[0].get("members") else {}


def cell_rows(db: sqlite_utils.Database, evaluation_id: int, columns: str = "*") -> list[dict]:
    """The evaluation's cells (`columns` of them); a group's are its members' cells, each row with its
    `model`, model by model."""
    members = member_ids(db, evaluation_id)
    sql = f"select {columns} from cells where evaluation_id = ? order by task_id, replicate"
    if not members:
        return list(db.query(sql, [evaluation_id]))
    return [{**row, "model": model} for model, member in members.items() for row in db.query(sql, [member])]


def open_group(db: sqlite_utils.Database, key: str, genome_hash: str, suite: Suite, contract: Contract,
               members: dict[str, int]) -> int:
    """The group row of an evaluation over several models (its cells are its members'); returns its id."""
    row = open_evaluation(db, key, genome_hash, suite, contract)
    n_cells = sum(db["evaluations"].get(m)["n_cells"] for m in members.values())
    db["evaluations"].update(row["id"], {"members": dumps(members), "n_cells": n_cells})
    return row["id"]


def close_group(db: sqlite_utils.Database, evaluation_id: int) -> str:
    """`done` when every member is; its counts and per-cell means over all members' cells."""
    members = member_ids(db, evaluation_id)
    statuses = [db["evaluations"].get(m)["status"] for m in members.values()]
    status = "done" if all(s == "done" for s in statuses) else "partial"
    rows = cell_rows(db, evaluation_id)
    n = max(len(rows), 1)
    failures: dict[str, int] = {}
    for r in rows:
        if r["status"] != "ok":
            failures[r["status"]] = failures.get(r["status"], 0) + 1
    db["evaluations"].update(evaluation_id, {
        "status": status, "n_done": len(rows), "finished_at": now(), "n_failed": sum(failures.values()),
        "failures": dumps(dict(sorted(failures.items()))), "eval": sum(r["score"] or 0.0 for r in rows) / n,
        "cost": sum(r["cost_usd"] or 0.0 for r in rows) / n, "steps": sum(r["steps"] or 0 for r in rows) / n,
        "cost_usd_total": sum(r["cost_usd"] or 0.0 for r in rows),
        **triggers.rates(rows, triggers.no_trigger_ids(db["evaluations"].get(evaluation_id)))})
    return status


def close_evaluation(db: sqlite_utils.Database, evaluation_id: int) -> str:
    """After a pass over the cells: `done` when every cell is stored and final, else `partial` (a resume
    runs what is missing or not final). Per-cell means and failure counts are stored either way."""
    rows = cell_rows(db, evaluation_id)
    n = max(len(rows), 1)
    n_cells = db["evaluations"].get(evaluation_id)["n_cells"]
    complete = len(rows) == n_cells and all(r["status"] in FINAL for r in rows)
    failures = failure_counts(db, evaluation_id)
    status = "done" if complete else "partial"
    db["evaluations"].update(evaluation_id, {
        "status": status, "n_done": len(rows), "finished_at": now(),
        "n_failed": sum(failures.values()), "failures": dumps(failures),
        "eval": sum(r["score"] or 0.0 for r in rows) / n, "cost": sum(r["cost_usd"] or 0.0 for r in rows) / n,
        "steps": sum(r["steps"] or 0 for r in rows) / n,
        "cost_usd_total": sum(r["cost_usd"] or 0.0 for r in rows),
        **triggers.rates(rows, triggers.no_trigger_ids(db["evaluations"].get(evaluation_id)))})
    return status


def reopen_failed(db: sqlite_utils.Database, evaluation_ids: list[int]) -> int:
    """--retry-failed: mark these evaluations so their failed cells run again; returns how many failed
    cells that covers."""
    n = 0
    for group in list(evaluation_ids):     # a group's failed cells are its members'
        evaluation_ids = [*evaluation_ids, *member_ids(db, group).values()]
    for evaluation_id in evaluation_ids:
        if member_ids(db, evaluation_id):
            continue
        failed = sum(failure_counts(db, evaluation_id).values())
        if failed:
            db["evaluations"].update(evaluation_id, {"status": "retry"})
            n += failed
    return n


def evaluation_row(db: sqlite_utils.Database, evaluation_id: int) -> dict:
    """The evaluation's row (NotFoundError when there is none)."""
    return db["evaluations"].get(evaluation_id)


def evaluation_id(db: sqlite_utils.Database, key: str) -> int | None:
    """The id of the evaluation stored under `key`, None before it is made."""
    found = list(db.query("select id from evaluations where key = ?", [key]))
    return found[0]["id"] if found else None


def evaluation_ids(db: sqlite_utils.Database, keys: list[str]) -> list[int]:
    """The ids of the evaluations stored under any of `keys`."""
    if not keys:
        return []
    marks = ", ".join("?" * len(keys))
    return [r["id"] for r in db.query(f"select id from evaluations where key in ({marks})", keys)]


def final_cell_cost(db: sqlite_utils.Database, contracts: list[str]) -> tuple[int, float | None]:
    """(how many, their mean USD) of the cells whose agent ran under any of these contracts (JSON): final ones
    and those their grader failed on (the agent was paid all the same)."""
    found = list(db.query("select count(*) as n, avg(c.cost_usd) as mean from cells c join evaluations e on "
                          "e.id = c.evaluation_id where (e.contract = ? or e.contract = ?) and "
                          "c.status in ('ok', 'agent_error', 'timeout', 'grader_error')", contracts))
    return (found[0]["n"], found[0]["mean"]) if found else (0, None)


def stored_cells(db: sqlite_utils.Database, key: str, agent_key: str | None = None) -> set[tuple[str, int]]:
    """The (task, replicate) cells stored for evaluation `key`, with those whose agent run another evaluation
    under `agent_key` holds (they are re-graded, not run)."""
    sql = ("select distinct c.task_id, c.replicate from cells c join evaluations e on e.id = c.evaluation_id "
           "where e.key = ?")
    params = [key]
    if agent_key and "agent_key" in db["evaluations"].columns_dict:
        sql += (" or (e.agent_key = ? and c.status in ('ok', 'grader_error', 'agent_error', 'timeout'))")
        params.append(agent_key)
    return {(r["task_id"], r["replicate"]) for r in db.query(sql, params)}


USAGE_COLUMNS = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "retries")


def usage_totals(db: sqlite_utils.Database, evaluations: list[int]) -> tuple:
    """The sums of USAGE_COLUMNS over these evaluations' cells (one tuple, in that order)."""
    marks = ",".join("?" * len(evaluations))
    return db.execute(f"select {', '.join(f'sum({c})' for c in USAGE_COLUMNS)} from cells "
                      f"where evaluation_id in ({marks})", evaluations).fetchone()


def solve_cells(db: sqlite_utils.Database, evaluation_id: int) -> list[dict]:
    """A solve pass's cells: task, score, folder, status and error."""
    return list(db.query("select task_id, score, cell_dir, status, error from cells where evaluation_id = ?",
                         [evaluation_id]))
