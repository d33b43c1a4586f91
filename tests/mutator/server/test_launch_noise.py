"""A dry run launched from the dashboard can rehearse at real-agent noise: `fake_noise` realistic starts
`run.py --fake-noise realistic`, whose run records it (runs.agents) and the run's API row says so; any other
value, or realistic with a real run, is a 400 naming the field that starts nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from mutator.server.common import CHILDREN
from mutator.server.launch import LaunchError, launch_argv, options, settings

from .conftest import TOKEN
from .test_launch_real import Spawned

DRY = {"suite": "clean-train", "val": "clean-val", "seed": "csv-clean", "strategy": "greedy",
       "model": "claude-haiku-4-5", "replicates": 1, "rounds": 0}
REAL = {**DRY, "real": True, "backend": "claude-cli", "budget_usd": "5", "confirmed": True}


def _headers(client) -> dict:
    return {"X-SM-Token": TOKEN, "Origin": str(client.make_url("")).rstrip("/")}


@pytest_asyncio.fixture
async def empty_client(aiohttp_client, tmp_path: Path):
    """The dashboard over an empty data dir, starting real children (a dry run spends nothing)."""
    data = tmp_path / "data"
    data.mkdir()
    client = await aiohttp_client(create_app(data_dir=data, project_root=tmp_path, token=TOKEN))
    client.data_dir = data
    yield client
    for child in client.server.app[CHILDREN].items:   # never leave a launched run behind
        if child.proc.poll() is None:
            child.proc.kill()
            child.proc.wait(10)


@pytest_asyncio.fixture
async def stub_client(aiohttp_client, tmp_path: Path):
    """The dashboard with its spawn recorded, never run."""
    app = create_app(data_dir=tmp_path, project_root=tmp_path, token=TOKEN)
    app[CHILDREN].spawn = Spawned()
    client = await aiohttp_client(app)
    client.spawned = app[CHILDREN].spawn
    return client


@pytest.mark.asyncio
async def test_a_realistic_dry_launch_starts_a_run_that_records_its_noise(empty_client) -> None:
    response = await empty_client.post("/api/launch", json={**DRY, "fake_noise": "realistic"},
                                       headers=_headers(empty_client))
    assert response.status == 200, await response.text()
    argv = (await response.json())["process"]["argv"]
    assert argv[argv.index("--fake-noise") + 1] == "realistic" and "--real" not in argv
    [child] = empty_client.server.app[CHILDREN].items
    assert child.proc.wait(300) == 0, child.log.read_text()
    with sqlite3.connect(empty_client.data_dir / "mutator.db") as conn:
        [(run_id, agents, command)] = conn.execute("select id, agents, command from runs").fetchall()
    assert json.loads(agents) == {"real": False, "fake_noise": "realistic"}   # what the run recorded
    assert command.endswith("--fake-noise realistic")
    detail = await empty_client.get(f"/api/runs/{run_id}")
    assert detail.status == 200, await detail.text()
    run = (await detail.json())["run"]
    assert run["dry_run"] is True and run["fake_noise"] == "realistic"


@pytest.mark.asyncio
@pytest.mark.parametrize("value", ["loud", "", "Realistic", " realistic", "on", True, 1, ["realistic"],
                                   {"realistic": True}])
@pytest.mark.parametrize("endpoint", ["/api/launch", "/api/launch/plan"])
async def test_a_fake_noise_other_than_off_or_realistic_is_a_400_naming_it(stub_client, endpoint, value) -> None:
    response = await stub_client.post(endpoint, json={**DRY, "fake_noise": value}, headers=_headers(stub_client))
    assert response.status == 400, await response.text()
    assert response.content_type == "application/json"
    error = (await response.json())["error"]
    assert error.startswith("fake_noise:") and "off, realistic" in error, error
    assert stub_client.spawned.argvs == []


@pytest.mark.asyncio
async def test_a_real_launch_refuses_realistic_noise_as_run_py_does(stub_client) -> None:
    for endpoint in ("/api/launch", "/api/launch/plan"):
        response = await stub_client.post(endpoint, json={**REAL, "fake_noise": "realistic"},
                                          headers=_headers(stub_client))
        assert response.status == 400, await response.text()
        error = (await response.json())["error"]
        assert error.startswith("fake_noise:") and "real agents bring their own noise" in error, error
    assert stub_client.spawned.argvs == []
    # off (what a quiet dry run sends) is no noise for real agents: accepted and not passed on
    response = await stub_client.post("/api/launch", json={**REAL, "fake_noise": "off"},
                                      headers=_headers(stub_client))
    assert response.status == 200, await response.text()
    [argv] = stub_client.spawned.argvs
    assert "--real" in argv and "--fake-noise" not in argv


def test_the_noise_is_passed_only_when_said(tmp_path) -> None:
    s = settings(None)
    assert options(s)["defaults"]["fake_noise"] == s.fake_noise == "off"   # the drawer's preselection
    assert "--fake-noise" not in launch_argv(DRY, s, tmp_path)             # an older client: as before
    quiet = launch_argv({**DRY, "fake_noise": "off"}, s, tmp_path)
    assert quiet[quiet.index("--fake-noise") + 1] == "off"     # said outright: no config or env picks it
    with pytest.raises(LaunchError, match="^fake_noise:"):
        launch_argv({**DRY, "fake_noise": "realistic", "real": True, "backend": "claude-cli",
                     "budget_usd": "5", "confirmed": True}, s, tmp_path)


@pytest.mark.parametrize("noise", ["off", "realistic"])
def test_a_dry_plan_reads_the_cells_of_the_fake_agent_the_launch_runs(noise) -> None:
    from mutator.cli.agents import fake_agents
    from mutator.validity.fake_ids import fake_builder, fake_id  # what plan_estimate prices a dry launch by
    assert fake_id(*fake_builder(noise)) == fake_agents(None, noise).build_id
