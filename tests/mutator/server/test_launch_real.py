"""A real run from the launch drawer: a required budget, a cost estimate as --plan gives it, and an explicit
confirmation the server checks, behind the same token and same-origin guard as every state-changing POST."""

from __future__ import annotations

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from mutator.server.common import CHILDREN
from mutator.server.launch import LaunchError, launch_argv, settings

from .conftest import TOKEN

BODY = {"suite": "clean-train", "val": "clean-val", "holdout": "clean-test", "seed": "csv-clean",
        "strategy": "greedy", "model": "claude-haiku-4-5", "replicates": 2, "rounds": 3}
REAL = {**BODY, "real": True, "backend": "claude-cli", "budget_usd": "12.5"}


class Spawned:
    """Stands in for Children.spawn: records the argv instead of starting run.py (a real run would spend)."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []

    def __call__(self, kind: str, argv: list[str]):
        self.argvs.append(argv)

        class Started:
            def to_json(self) -> dict:
                return {"id": 1, "kind": kind, "pid": 0, "argv": argv[1:], "status": "running",
                        "returncode": None, "started_at": 0, "log_tail": ""}
        return Started()


@pytest_asyncio.fixture
async def app_client(aiohttp_client, store_copy):
    app = create_app(data_dir=store_copy, project_root=store_copy.parent, token=TOKEN)
    spawned = Spawned()
    app[CHILDREN].spawn = spawned
    client = await aiohttp_client(app)
    client.spawned = spawned
    return client


def _headers(client) -> dict:
    return {"X-SM-Token": TOKEN, "Origin": str(client.make_url("")).rstrip("/")}


@pytest.mark.parametrize(("change", "field"), [
    ({"budget_usd": None}, "budget_usd"), ({"budget_usd": "0"}, "budget_usd"),
    ({"budget_usd": -3}, "budget_usd"), ({"budget_usd": "²"}, "budget_usd"),
    ({"budget_usd": "1e9"}, "budget_usd"), ({"budget_usd": True}, "budget_usd"),
    ({"backend": "command"}, "backend"), ({"backend": None}, "backend"), ({"real": "yes"}, "real"),
    ({"confirmed": False}, "confirmed"), ({"confirmed": "true"}, "confirmed"), ({}, "confirmed"),
])
def test_a_real_launch_needs_a_budget_a_backend_and_a_confirmation(change, field, tmp_path):
    body = {k: v for k, v in {**REAL, "confirmed": True, **change}.items() if v is not None}
    if not change:
        body.pop("confirmed")
    with pytest.raises(LaunchError, match=f"^{field}:"):
        launch_argv(body, settings(None), tmp_path)


@pytest.mark.asyncio
async def test_the_api_refuses_a_real_launch_without_a_budget_or_a_confirmation(app_client):
    for body, field in (({**REAL, "budget_usd": None, "confirmed": True}, "budget_usd"), (REAL, "confirmed")):
        response = await app_client.post("/api/launch", json=body, headers=_headers(app_client))
        assert response.status == 400
        assert (await response.json())["error"].startswith(field)
    assert app_client.spawned.argvs == []


@pytest.mark.asyncio
@pytest.mark.parametrize("headers", [{}, {"X-SM-Token": TOKEN, "Origin": "http://evil.example"}])
async def test_a_confirmed_real_launch_still_needs_the_token_and_same_origin(app_client, headers):
    for endpoint in ("/api/launch", "/api/launch/plan"):
        response = await app_client.post(endpoint, json={**REAL, "confirmed": True}, headers=headers)
        assert response.status == 403, endpoint
    assert app_client.spawned.argvs == []


@pytest.mark.asyncio
async def test_the_plan_estimate_is_what_plan_says(app_client):
    response = await app_client.post("/api/launch/plan", json=REAL, headers=_headers(app_client))
    assert response.status == 200, await response.text()
    plan = await response.json()
    assert plan["real"] is True and plan["backend"] == "claude-cli" and plan["budget_usd"] == 12.5
    assert plan["run_usd"] > 0 and plan["rounds"] == 3 and plan["candidates"] == 1
    assert f"per run ≤ ${plan['run_usd']:.4f}" in plan["text"] and "Minimum detectable effect" in plan["text"]
    assert plan["over_budget"] is (plan["run_usd"] > 12.5)
    refused = await app_client.post("/api/launch/plan", json={**REAL, "budget_usd": None},
                                    headers=_headers(app_client))
    assert refused.status == 400
    assert app_client.spawned.argvs == []   # an estimate never starts anything


@pytest.mark.asyncio
async def test_a_confirmed_real_launch_spawns_run_py_with_real_backend_model_and_budget(app_client):
    response = await app_client.post("/api/launch", json={**REAL, "confirmed": True},
                                     headers=_headers(app_client))
    assert response.status == 200, await response.text()
    [argv] = app_client.spawned.argvs
    assert "--real" in argv
    assert argv[argv.index("--agent") + 1] == "claude-cli"
    assert argv[argv.index("--model") + 1] == "claude-haiku-4-5"
    assert argv[argv.index("--budget-usd") + 1] == "12.5"
    # no confirmation needed
    dry = await app_client.post("/api/launch", json=BODY, headers=_headers(app_client))
    assert dry.status == 200
    assert "--real" not in app_client.spawned.argvs[1] and "--budget-usd" not in app_client.spawned.argvs[1]
