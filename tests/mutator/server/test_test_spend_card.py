"""What a test run spent reaches the dashboard from the store: the API's test row carries `spent_usd` (the run's
charges made while the test ran), and the test card shows it; a failed no-skill control is said on the card."""

from __future__ import annotations

import json
import sqlite3

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from tests.browser_support import CHROMIUM

from .conftest import TOKEN


def charged_during(db_path, test: dict) -> float:
    with sqlite3.connect(db_path) as conn:
        return conn.execute("select coalesce(sum(usd), 0) from charges where run_id = ? and at >= ? and at <= ?",
                            [test["run_id"], test["created_at"], test["finished_at"]]).fetchone()[0]


@pytest_asyncio.fixture
async def client(aiohttp_client, dry_store):
    return await aiohttp_client(create_app(data_dir=dry_store, project_root=dry_store.parent, token=TOKEN))


@pytest.mark.asyncio
async def test_the_api_gives_each_test_what_it_spent_from_the_store(client, dry_store, run_id) -> None:
    meta = await (await client.get("/api/meta")).json()
    detail = await (await client.get(f"/api/runs/{run_id}", params={"store": meta["stores"][0]["id"]})).json()
    [test] = detail["tests"]
    assert test["spent_usd"] > 0                                   # the dry run's fake cells are priced
    assert test["spent_usd"] == pytest.approx(charged_during(dry_store / "mutator.db", test), abs=1e-9)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no chromium")
def test_the_test_card_shows_the_spend_and_a_failed_control(server, store_copy, page, run_id) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    db = sqlite3.connect(store_copy / "mutator.db")
    spent, report = db.execute("select spent_usd, report from test_runs where run_id = ?", [run_id]).fetchone()
    report = json.loads(report)
    report["control"] = None
    report["control_failed"] = {"cause": "boom: no patterns.json", "cells": 8, "failures": {"agent_error": 8},
                                "evaluation_id": 1, "ran": 8}
    db.execute("update test_runs set report = ? where run_id = ?", [json.dumps(report), run_id])   # doctored
    db.commit()
    db.close()
    page.goto(server.url + "/#/home")
    page.select_option("#store-picker", index=0)
    page.select_option("#skill-picker", "csv-clean")
    page.select_option("#run-picker", run_id)
    card = page.locator(".test-card")
    sync_api.expect(card.locator(".test-spent")).to_have_text(f"spent ${spent:.4f}")
    sync_api.expect(card.locator("[data-control-failed]")).to_contain_text(
        "No-skill control FAILED — 8 agent_error of its 8 cells")


@pytest.fixture
def store(store_copy):
    return store_copy
