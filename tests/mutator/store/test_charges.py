"""Spend written once: a cell charges its run as it is stored, a regrade charges only its judge, and a meter left
by a cut-short call is settled once (never when its row is newer than its last line)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from eval.agents.meter import agent_meter, judge_meter
from eval.cost import Price
from eval.jobs import CellResult
from mutator.store import cache, charges
from mutator.store.db import connect

PRICE = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)
JUDGE = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3)


@pytest.fixture
def db(tmp_path: Path):
    db = connect(tmp_path / "mutator.db")
    db["runs"].insert({"id": "run-1", "kind": "evolve", "status": "running", "cost_usd": 0.0})
    db["evaluations"].insert({"id": 1, "key": "k", "status": "running", "n_cells": 2, "n_done": 0})
    return db


def cell(status: str, cost: float, grader: float = 0.0, **extra) -> CellResult:
    return CellResult(task_id="t1", replicate=0, status=status, score=0.0, tests={}, cost_usd=cost, steps=3,
                      input_tokens=100, output_tokens=10, cache_write_tokens=0, cache_read_tokens=0, duration_ms=1,
                      agent_subtype="success", error="", cell_dir="/x",
                      extra={"grader_cost_usd": grader, **extra})


def spent(db) -> float:
    return db["runs"].get("run-1")["cost_usd"]


def test_a_regrade_charges_its_judge_only_and_keeps_every_call_on_the_row(db) -> None:
    assert cache.store_cell(db, 1, cell("grader_error", 0.02, grader=0.001), payer="run-1") == pytest.approx(0.021)
    regraded = cell("ok", 0.05, grader=0.003, regraded=True)   # the stream priced again: not a new agent run
    assert cache.store_cell(db, 1, regraded, payer="run-1") == pytest.approx(0.003)
    row = next(db.query("select * from cells"))
    assert (row["status"], row["cost_usd"], row["prior_cost_usd"]) == ("ok", 0.02, 0.0)
    assert row["grader_cost_usd"] == pytest.approx(0.004) and spent(db) == pytest.approx(0.024)


def write_meter(path: Path, at: float, *, model: str = "claude-haiku-4-5", i: int = 1000, o: int = 100) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"id": f"msg_{at}", "model": model, "final": False, "at": at,
                            "usage": {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": 0,
                                      "cache_read_input_tokens": 0}}) + "\n")


def test_a_cut_short_cell_is_settled_once_and_runs_again(db, tmp_path: Path) -> None:
    root = tmp_path / "evals" / "k" / "t1-r0"
    root.parent.mkdir(parents=True)
    write_meter(agent_meter(root), time.time())
    write_meter(judge_meter(root), time.time(), model="claude-sonnet-4-5", i=2000, o=200)
    cells = [("t1", 0, root)]
    assert charges.settle_cells(db, 1, cells, price=PRICE, price_of=lambda m: JUDGE, payer="run-1") == 1
    row = next(db.query("select * from cells"))
    agent_usd, judge_usd = (1000 * 1 + 100 * 5) / 1e6, (2000 * 3 + 200 * 15) / 1e6
    assert row["status"] == "infra_error" and "interrupted" in row["error"]       # not final: it runs again
    assert (row["cost_usd"], row["grader_cost_usd"], row["input_tokens"]) == (agent_usd, judge_usd, 1000)
    assert spent(db) == pytest.approx(agent_usd + judge_usd)
    assert not agent_meter(root).exists() and not judge_meter(root).exists()
    assert charges.settle_cells(db, 1, cells, price=PRICE, price_of=lambda m: JUDGE, payer="run-1") == 0
    # its next run replaces the row: the cut-short try's cost carries over, the run is charged the new try once
    cache.store_cell(db, 1, cell("ok", 0.01), payer="run-1")
    row = next(db.query("select * from cells"))
    assert row["prior_cost_usd"] == agent_usd and row["grader_cost_usd"] == judge_usd
    assert spent(db) == pytest.approx(agent_usd + judge_usd + 0.01)


def test_a_meter_older_than_its_row_was_paid_with_the_row(db, tmp_path: Path) -> None:
    """A crash between storing a cell and removing its meter: the row is newer than every line, so no charge."""
    root = tmp_path / "t1-r0"
    write_meter(agent_meter(root), time.time() - 5)
    cache.store_cell(db, 1, cell("ok", 0.0015), payer="run-1")
    assert charges.settle_cells(db, 1, [("t1", 0, root)], price=PRICE, price_of=lambda m: PRICE, payer="run-1") == 0
    assert spent(db) == pytest.approx(0.0015) and not agent_meter(root).exists()


def test_a_cut_short_mutator_call_is_paid_by_the_run_and_its_attempt(db, tmp_path: Path) -> None:
    db["attempts"].insert({"id": 7, "run_id": "run-1", "round": 1, "sibling": 0, "status": "pending"})
    meter = charges.call_meter(tmp_path, "run-1", "round-1-0")
    write_meter(meter, time.time(), i=10_000, o=1000)
    paid = charges.settle_call(db, meter, PRICE, payer="run-1", kind="mutator", attempt_id=7)
    assert paid == pytest.approx(0.015) and spent(db) == pytest.approx(0.015)
    assert db["attempts"].get(7)["mutator_cost_usd"] == pytest.approx(0.015) and not meter.exists()
    assert charges.settle_call(db, meter, PRICE, payer="run-1", kind="mutator", attempt_id=7) == 0.0


def test_a_crash_between_the_charge_and_the_meters_removal_charges_once(db, tmp_path: Path, monkeypatch) -> None:
    # the mutator call finishes and is charged; the process dies before its meter file is removed; the resume
    # settles that meter: the charge and the meter's consumption share one id, so nothing is charged again
    db["attempts"].insert({"id": 7, "run_id": "run-1", "round": 1, "sibling": 0, "status": "pending"})
    meter = charges.call_meter(tmp_path, "run-1", "round-1-0")

    class Done:
        cost_usd = 0.015

    def call(path: Path) -> Done:
        write_meter(path, time.time(), i=10_000, o=1000)
        return Done()

    real_unlink = Path.unlink
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: (_ for _ in ()).throw(SystemExit("killed"))
                        if self == meter and self.exists() else real_unlink(self, missing_ok=missing_ok))
    with pytest.raises(SystemExit):
        charges.paid_call(db, meter, PRICE, call, payer="run-1", kind="mutator", attempt_id=7)
    monkeypatch.undo()
    assert spent(db) == pytest.approx(0.015) and meter.exists()          # charged; the meter outlived it
    result, carried = charges.paid_call(db, meter, PRICE, call, payer="run-1", kind="mutator", attempt_id=7)
    assert carried == 0.0                                                 # the resume's settle charged nothing
    assert spent(db) == pytest.approx(0.030)                              # only the new call is added
    found = list(db.query("select kind, usd, attempt_id from charges order by id"))
    assert found == [{"kind": "mutator", "usd": 0.015, "attempt_id": 7}] * 2
    assert spent(db) == sum(r["usd"] for r in found) and not meter.exists()
