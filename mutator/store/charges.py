"""Where spend is written: a run is charged as each cell or call is recorded, in the same transaction, and
what an interrupted agent or judge call was served (its meter, eval/agents/meter.py) is settled once.

A meter file beside a cell or a mutator workspace is spend not yet on a row when its last line is newer
than the row (or there is no row); settling it writes the row (an interrupted cell is an infra_error that
runs again on resume, its cost carried as an earlier try's) and charges the payer, then removes the file.
Never reads what spend means: totals, attribution and the Cost page are mutator/after/spend.py's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from eval.agents.meter import agent_meter, judge_meter, read_meter
from eval.cost import Price, Usage, usd
from eval.jobs import CellResult
from mutator.store import cache, ledger

INTERRUPTED = ("interrupted (Ctrl-C, a deadline or a crash) while its agent or judge ran: what the API "
               "served it is recorded; it runs again when the same command resumes")


def charge_run(db: sqlite_utils.Database, run_id: str | None, amount: float, *, kind: str,
               ref: str | None = None, attempt_id: int | None = None, at: float | None = None) -> bool:
    """Charge `amount` USD of `kind` to the run (or to no run) and commit; once per `ref`; `at` when it was
    spent (now by default). True when charged."""
    with db.conn:
        return ledger.charge(db.conn, run_id=run_id, usd=amount, kind=kind, ref=ref, attempt_id=attempt_id,
                             at=at)


def meter_ref(meter: Path) -> str | None:
    """The one id of what a meter holds (its path and content): the charge for it and the meter's consumption
    share it, so a crash between the charge and the file's removal never charges it twice."""
    try:
        content = meter.read_bytes()
    except FileNotFoundError:
        return None
    return f"meter:{meter}:{hashlib.sha256(content).hexdigest()}"


def last_served(meter: Path) -> float | None:
    """When the meter's last line was written (None when there is no meter, or it is empty)."""
    try:
        lines = meter.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return None
    times = []
    for line in lines:
        try:
            times.append(float(json.loads(line)["at"]))
        except (ValueError, KeyError, TypeError):
            continue
    return max(times, default=None)


def priced(meter: Path, price_of: Callable[[str], Price]) -> tuple[float, Usage]:
    """(USD, usage) of what a meter says was served, each response at its model's price."""
    served = read_meter(meter)
    if served is None:
        return 0.0, Usage()
    return (sum(usd(price_of(model), Usage(**counts)) for model, counts in served.by_model.items()),
            Usage(**served.total()))


def settle_cells(db: sqlite_utils.Database, evaluation_id: int, cells: list[tuple[str, int, Path]], *,
                 price: Price, price_of: Callable[[str], Price], payer: str | None) -> int:
    """Settle the unsettled meters of these (task, replicate, cell folder) cells; returns how many were."""
    settled = 0
    for task_id, replicate, root in cells:
        meters = (agent_meter(root), judge_meter(root))
        times = [t for t in map(last_served, meters) if t is not None]
        if not times:
            continue
        found = list(db.query("select status, finished_at, error from cells where evaluation_id = ? and "
                              "task_id = ? and replicate = ?", [evaluation_id, task_id, replicate]))
        if not found or (found[0]["finished_at"] or 0.0) < max(times):
            # agents are priced at the cell's model
            agent_usd, used = priced(meters[0], lambda _model: price)
            judge_usd, _ = priced(meters[1], price_of)
            # only the judge ran since a grader_error row: the same agent run, graded (and paid) again
            regrade = bool(found) and found[0]["status"] == "grader_error" and last_served(meters[0]) is None
            cache.store_cell(db, evaluation_id, CellResult(
                task_id=task_id, replicate=replicate, status="grader_error" if regrade else "infra_error",
                score=0.0, tests={}, cost_usd=agent_usd, steps=0, input_tokens=used.input_tokens,
                output_tokens=used.output_tokens, cache_write_tokens=used.cache_creation_input_tokens,
                cache_read_tokens=used.cache_read_input_tokens, duration_ms=0, agent_subtype="",
                error=found[0]["error"] if regrade else INTERRUPTED, cell_dir=str(root),
                extra={"grader_cost_usd": judge_usd, "priced_cost_usd": agent_usd, "regraded": regrade}),
                payer=payer)
            settled += 1
        for meter in meters:
            meter.unlink(missing_ok=True)
    return settled


def call_meter(data_dir: Path, run_id: str, name: str) -> Path:
    """The meter of an agent call outside a cell (a mutation, the meta skill): never beside its workspace,
    which the tamper check watches (mutator/round/tamper.py)."""
    folder = data_dir / "meters" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.meter.jsonl"


def settle_call(db: sqlite_utils.Database, meter: Path, price: Price | Callable[[str], Price], *,
                payer: str | None, kind: str, attempt_id: int | None = None,
                at: float | None = None) -> float:
    """An agent or judge call outside a cell whose meter was left unsettled by an interrupt or a crash: its
    served cost (at `price`, or each response at `price(model)`) goes to the payer (and the attempt's mutator
    cost) unless it was charged already; returns what was charged."""
    amount, _ = priced(meter, price if callable(price) else lambda _model: price)
    ref = meter_ref(meter)
    with db.conn:
        charged = ledger.charge(db.conn, run_id=payer, usd=amount, kind=kind, ref=ref, attempt_id=attempt_id,
                                at=at)
        if charged and attempt_id is not None:
            db.conn.execute("update attempts set mutator_cost_usd = coalesce(mutator_cost_usd, 0) + ? "
                            "where id = ?", [amount, attempt_id])
    meter.unlink(missing_ok=True)
    return amount if charged else 0.0


def paid_call(db: sqlite_utils.Database, meter: Path, price: Price, call, *, payer: str | None, kind: str,
              attempt_id: int | None = None):
    """Run `call(meter)` (an agent call outside a cell, whose result has `cost_usd`) and charge the payer what
    it cost; an earlier try a crash cut short is settled first, and this one too if it is interrupted. Returns
    (result, what the earlier tries cost). The charge is keyed by the meter's content (`meter_ref`): a crash
    before the meter's removal leaves it to a resume's `settle_call`, which then charges nothing again."""
    carried = settle_call(db, meter, price, payer=payer, kind=kind, attempt_id=attempt_id)
    try:
        result = call(meter)
    except BaseException:   # Ctrl-C mid-call: what it was served is on the run (and the attempt)
        settle_call(db, meter, price, payer=payer, kind=kind, attempt_id=attempt_id)
        raise
    charge_run(db, payer, result.cost_usd, kind=kind, ref=meter_ref(meter), attempt_id=attempt_id)
    meter.unlink(missing_ok=True)   # its cost is recorded
    return result, carried
