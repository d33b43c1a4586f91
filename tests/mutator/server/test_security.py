"""Security: token + same-origin POSTs, host check, traversal refused, the restart banner's code watch."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
import pytest_asyncio

from mutator.server.app import create_app

from .conftest import TOKEN

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def client(aiohttp_client, dry_store):
    return await aiohttp_client(create_app(data_dir=dry_store, project_root=dry_store.parent, token=TOKEN))


async def test_the_page_carries_the_token_and_static_files_are_served(client):
    page = await client.get("/")
    assert page.status == 200 and f'content="{TOKEN}"' in await page.text()
    assert page.headers["Cache-Control"] == "no-store"
    for path in ("/app.js", "/lib/util.js", "/pages/home.js", "/vendor/uPlot.esm.js",
                 "/vendor/uPlot.LICENSE"):
        response = await client.get(path)
        assert response.status == 200, path


@pytest.mark.parametrize("path", ["/../run.py", "/%2e%2e/run.py", "/vendor/../../run.py",
                                  "/lib/%2e%2e/%2e%2e/run.py", "/.git/config", "/vendor/..%2f..%2frun.py",
                                  "/webpages/../config.json",
                                  "/%2fetc%2fpasswd", "/no-such-file.js"])
async def test_traversal_and_unknown_files_are_404(client, path):
    response = await client.get(path)
    assert response.status in (403, 404), path
    assert "import" not in await response.text()


async def test_a_foreign_host_name_is_refused(client):
    response = await client.get("/api/meta", headers={"Host": "evil.example:5210"})
    assert response.status == 403


async def _meta_store(client) -> str:
    return (await (await client.get("/api/meta")).json())["stores"][0]["id"]


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 403),                                                           # no token
    ({"X-SM-Token": "wrong"}, 403),
    ({"X-SM-Token": TOKEN, "Sec-Fetch-Site": "cross-site"}, 403),
    ({"X-SM-Token": TOKEN, "Sec-Fetch-Site": "same-site"}, 403),
    ({"X-SM-Token": TOKEN, "Origin": "http://evil.example"}, 403),
    ({"X-SM-Token": TOKEN, "Sec-Fetch-Site": "same-origin"}, 400),        # passes the guard, body invalid
])
@pytest.mark.parametrize("endpoint", ["/api/launch", "/api/test-run"])
async def test_spending_posts_need_the_token_and_same_origin(client, headers, status, endpoint):
    response = await client.post(endpoint, json={"suite": "nope"}, headers=headers)
    assert response.status == status
    assert (await client.get("/api/processes")).status == 200
    assert await (await client.get("/api/processes")).json() == []  # nothing was started


async def test_a_form_post_is_refused_even_with_the_token(client):
    response = await client.post("/api/launch", data="suite=clean-train", headers={
        "X-SM-Token": TOKEN, "Content-Type": "application/x-www-form-urlencoded"})
    assert response.status == 415


async def test_run_test_from_the_dashboard_appends_to_the_test_timeline(aiohttp_client, store_copy, run_id):
    client = await aiohttp_client(create_app(data_dir=store_copy, project_root=store_copy.parent,
                                             token=TOKEN))
    store = await _meta_store(client)
    response = await client.post("/api/test-run",
                                 json={"store": store, "run_id": run_id, "suite": "clean-test"},
                                 headers={"X-SM-Token": TOKEN,
                                          "Origin": str(client.make_url("")).rstrip("/")})
    assert response.status == 200, await response.text()
    for _ in range(600):
        [proc] = await (await client.get("/api/processes")).json()
        if proc["status"] == "exited":
            break
        await asyncio.sleep(0.1)
    assert proc["returncode"] == 0, proc["log_tail"]
    with sqlite3.connect(store_copy / "mutator.db") as conn:
        assert conn.execute("select count(*) from test_runs where status = 'done'").fetchone()[0] == 2


@pytest.mark.parametrize(("host", "allow", "accepted", "refused"), [
    ("0.0.0.0", [], ["localhost:5210", "127.0.0.1:5210", "[::1]:5210"],
     ["evil.example:5210", "192.168.1.9:5210"]),
    ("0.0.0.0", ["Dash.LAN", "192.168.1.9"], ["dash.lan:5210", "192.168.1.9:5210", "localhost"],
     ["evil.example", "dash.lan.evil.example:5210"]),
    ("::", ["dash.lan"], ["dash.lan", "[::1]:5210"], ["[fe80::1]:5210"]),
    ("192.168.1.9", [], ["192.168.1.9:5210", "localhost:5210"], ["evil.example:5210", "dash.lan"]),
])
async def test_a_non_loopback_bind_keeps_a_host_allow_list(aiohttp_client, dry_store, host, allow, accepted,
                                                            refused):
    client = await aiohttp_client(create_app(data_dir=dry_store, project_root=dry_store.parent, token=TOKEN,
                                             host=host, allow_hosts=allow))
    for name in accepted:
        assert (await client.get("/api/health", headers={"Host": name})).status == 200, name
    for name in refused:
        response = await client.get("/", headers={"Host": name})
        assert response.status == 403, name
        assert TOKEN not in await response.text()   # a foreign name never gets the page or its token


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 403), ({"X-SM-Token": "wrong"}, 403),
    ({"X-SM-Token": TOKEN, "Origin": "http://evil.example"}, 403),
    ({"X-SM-Token": TOKEN, "Sec-Fetch-Site": "cross-site"}, 403),
    # same origin: passes the guard, body invalid
    ({"X-SM-Token": TOKEN, "Origin": "http://dash.lan:5210"}, 400),
])
async def test_posts_on_an_exposed_dashboard_still_need_the_token_and_same_origin(aiohttp_client, dry_store,
                                                                                  headers, status):
    client = await aiohttp_client(create_app(data_dir=dry_store, project_root=dry_store.parent, token=TOKEN,
                                             host="0.0.0.0", allow_hosts=["dash.lan"]))
    for endpoint in ("/api/launch", "/api/test-run", "/api/proposals/1/accept"):
        response = await client.post(endpoint, json={"suite": "nope"},
                                     headers={"Host": "dash.lan:5210", **headers})
        assert response.status == status, endpoint
    assert await (await client.get("/api/processes")).json() == []


async def test_every_response_carries_a_content_security_policy(client):
    for path in ("/", "/app.js", "/api/meta", "/api/no-such"):
        csp = (await client.get(path)).headers.get("Content-Security-Policy", "")
        assert "script-src 'self'" in csp and "default-src 'self'" in csp, path
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, path


async def test_serving_beyond_loopback_prints_a_warning(monkeypatch, capsys, tmp_path):
    from mutator.config import load_settings
    from mutator.server import app as server_app
    from mutator.server import cli
    seen = {}
    monkeypatch.setattr(server_app, "serve", lambda **kw: seen.update(kw))
    monkeypatch.setattr(cli, "healthy", lambda *a, **k: False)
    monkeypatch.setattr(cli, "port_busy", lambda *a, **k: False)
    settings = load_settings({"data_dir": tmp_path}, environ={})
    assert cli.dashboard(settings, host="0.0.0.0", port=5999, config=None, foreground=True,
                         allow_hosts=["dash.lan"]) == 0
    err = capsys.readouterr().err
    assert (err.startswith("warning: the dashboard listens on 0.0.0.0") and "dash.lan" in err
            and "--allow-host" in err)
    assert seen["allow_hosts"] == ["dash.lan"] and seen["host"] == "0.0.0.0"
    cli.dashboard(settings, host="127.0.0.1", port=5999, config=None, foreground=True)
    assert capsys.readouterr().err == ""
