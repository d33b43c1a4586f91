"""One spend per run (mutator/after/spend.py run_spend over the charges ledger): Home's run detail and run
list, the CLI summary and the Cost page show the same figure, and it is the SQL sum of the run's charges. Each
kind is filed under the run that paid it: a solve phase, a test run and its no-skill control, the meta skill,
member evaluations of several models, an A/A run's seed re-evaluations (never charged to the demo run beside
it)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from mutator.after.spend import OTHER, run_spend
from mutator.round.summary import summary
from mutator.server.app import create_app
from mutator.store.db import connect_readonly

from .conftest import TOKEN
from .test_models_view import two_model_store  # noqa: F401  (a session fixture, built once)

pytestmark = pytest.mark.asyncio


def sql_sums(data: Path) -> dict[str, float]:
    with sqlite3.connect(data / "mutator.db") as conn:
        return dict(conn.execute("select run_id, sum(usd) from charges where run_id is not null group by "
                                 "run_id"))


async def shown(aiohttp_client, data: Path) -> dict[str, dict]:
    """Every run's spend as Home (detail and list), the Cost page and the CLI summary show it."""
    client = await aiohttp_client(create_app(data_dir=data, project_root=data.parent, token=TOKEN))
    store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
    listed = {r["id"]: r["cost_usd"]
              for r in await (await client.get("/api/runs", params={"store": store})).json()}
    cost = {r["run"]: r["all_time"]
            for r in (await (await client.get("/api/spend", params={"store": store})).json())["runs"]}
    db = connect_readonly(data / "mutator.db")
    out = {}
    for run_id in listed:
        detail = await (await client.get(f"/api/runs/{run_id}", params={"store": store})).json()
        spend = run_spend(db, run_id)
        cli = float(re.search(r"spend this run \$([0-9.]+)", summary(db, run_id, spend=spend)).group(1)) \
            if not run_id.startswith("aa-") else spend["total"]
        out[run_id] = {"home": detail["run"]["cost_usd"], "list": listed[run_id],
                       "cost": cost.get(run_id, 0.0), "cli": cli, "kinds": detail["run"]["spend"]["kinds"],
                       "cost_runs": set(cost)}
    return out


def same_everywhere(figures: dict[str, dict], sums: dict[str, float]) -> None:
    for run_id, f in figures.items():
        expected = sums.get(run_id, 0.0)
        assert (f["home"] == pytest.approx(expected, abs=1e-9)
                and f["list"] == pytest.approx(expected, abs=1e-9))
        assert (f["cost"] == pytest.approx(expected, abs=1e-9)
                and f["cli"] == pytest.approx(expected, abs=5e-5))
        assert sum(f["kinds"].values()) == pytest.approx(expected, abs=1e-9)
        assert OTHER not in f["cost_runs"]     # nothing left unattributed


async def test_a_demo_runs_every_kind_of_spend_is_its_own_and_shown_alike(aiohttp_client, dry_store) -> None:
    figures = await shown(aiohttp_client, dry_store)
    same_everywhere(figures, sql_sums(dry_store))
    (demo,) = figures.values()
    assert ({"cells", "solve phase", "mutator", "meta skill", "test run", "no-skill control"}
            <= set(demo["kinds"]))
    assert all(usd > 0 for usd in demo["kinds"].values())


async def test_an_aa_runs_re_evaluations_are_its_own_not_the_demo_runs(aiohttp_client, mixed_store) -> None:
    figures = await shown(aiohttp_client, mixed_store)
    same_everywhere(figures, sql_sums(mixed_store))
    (aa,) = [f for run_id, f in figures.items() if run_id.startswith("aa-")]
    assert "A/A re-evaluation" in aa["kinds"]
    assert all("A/A re-evaluation" not in f["kinds"] for run_id, f in figures.items()
               if not run_id.startswith("aa-"))


async def test_member_evaluations_and_controls_are_the_two_model_runs(
        aiohttp_client, two_model_store) -> None:  # noqa: F811
    data, run_id = two_model_store
    figures = await shown(aiohttp_client, data)
    same_everywhere(figures, sql_sums(data))
    assert {"member evaluation", "no-skill control", "test run", "mutator"} <= set(figures[run_id]["kinds"])
