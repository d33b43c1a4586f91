"""The researcher's API on the mixed store: the attempts table (JSON = CSV = the store), spend as an x axis
summed from the store, run.py --annotate behind a guarded POST, the recorded command line redacted, what the
mutator saw (inside the store only)."""

from __future__ import annotations

import csv
import io
import shutil
import sqlite3

import pytest

from mutator.round.provenance import command_line
from mutator.server.app import create_app
from mutator.server.common import CACHE, CHILDREN
from tests.conftest import copy_store

from .conftest import TOKEN


async def _client(aiohttp_client, data_dir):
    client = await aiohttp_client(create_app(data_dir=data_dir, project_root=data_dir.parent, token=TOKEN))
    store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
    return client, store


def _rows(data_dir, sql, params=()):
    with sqlite3.connect(data_dir / "mutator.db") as conn:
        return conn.execute(sql, params).fetchall()


@pytest.mark.asyncio
async def test_the_attempts_table_is_the_store_in_json_and_csv(aiohttp_client, mixed_store):
    client, store = await _client(aiohttp_client, mixed_store)
    response = await client.get("/api/attempts", params={"store": store, "skill": "csv-clean"})
    assert response.status == 200
    found = await response.json()
    table = {"rows": [dict(zip(found["columns"], row)) for row in found["rows"]]}
    stored = _rows(mixed_store, "select id, run_id, round, verdict, delta, mutator_cost_usd from attempts "
                                "order by run_id, round, sibling")
    assert [(r["id"], r["run_id"], r["round"], r["verdict"], r["delta"], r["mutator_cost_usd"])
            for r in table["rows"]] == [tuple(r) for r in stored]
    response = await client.get("/api/attempts",
                                params={"store": store, "skill": "csv-clean", "format": "csv"})
    assert response.headers["Content-Disposition"] == 'attachment; filename="attempts-csv-clean.csv"'
    rows = list(csv.DictReader(io.StringIO(await response.text())))
    assert [int(r["id"]) for r in rows] == [r[0] for r in stored]
    assert [r["verdict_note"] for r in rows] == [r["verdict_note"] or "" for r in table["rows"]]
    for bad in ({}, {"run": "x"}, {"run": "run-abcdef", "skill": "s"}, {"skill": "a/b"},
                {"skill": "s", "format": "x"}):
        assert (await client.get("/api/attempts", params={"store": store, **bad})).status == 400, bad


@pytest.mark.asyncio
async def test_spend_as_the_x_axis_sums_the_store(aiohttp_client, mixed_store):
    client, store = await _client(aiohttp_client, mixed_store)
    runs = [r[0] for r in _rows(mixed_store, "select id from runs where kind != 'aa' order by id")]
    found = await (await client.get("/api/compare",
                                    params={"store": store, "runs": ",".join(runs[:2])})).json()
    for view in found["runs"]:
        run_id = view["run"]["id"]
        # each val and train evaluation the run's attempts stored, and each screen's: the run's train
        # evaluation of
        # a screened candidate's genome (a candidate the screen stopped, or val rejected, never stores it)
        ((cells, usd),) = _rows(mixed_store, (
            "select sum(e.n_done), sum(e.cost_usd_total) from evaluations e where e.id in (select "
            "val_evaluation_id from attempts where run_id = ? union select train_evaluation_id from attempts "
            "where run_id = ? union select (select s.id from evaluations s where s.genome_hash = "
            "a.genome_hash and s.suite = r.suite and s.model = r.model and s.replicates = r.replicates order "
            "by s.id limit 1) from attempts a join runs r on r.id = a.run_id where a.run_id = ? and a.screen "
            "is not null)"), [run_id, run_id, run_id])
        ((mutator,),) = _rows(mixed_store, "select sum(mutator_cost_usd) from attempts where run_id = ?",
                              [run_id])
        assert view["curve"]["cells"][-1] == cells
        assert view["curve"]["usd"][-1] == pytest.approx(usd + mutator)
        assert view["curve"]["cells"] == sorted(view["curve"]["cells"])
    history = await (await client.get("/api/history", params={"store": store, "skill": "csv-clean"})).json()
    by_run = {g["run"]["id"]: g["spend"] for g in history}
    assert by_run[found["runs"][0]["run"]["id"]]["cells"] == found["runs"][0]["curve"]["cells"]


def test_the_command_line_is_recorded_with_its_secrets_redacted(mixed_store, monkeypatch):
    commands = [r[0] for r in _rows(mixed_store, "select command from runs where kind != 'aa'")]
    assert all(c.startswith("python ") and "--suite clean-train --val clean-val" in c for c in commands)
    monkeypatch.setenv("MY_API_KEY", "hunter2-very-secret")
    line = command_line(["run.py", "--api-key", "abc123456789", "--token=zzz987654321", "--note",
                         "uses hunter2-very-secret", "--rounds", "3"])
    assert line == ("python run.py --api-key '[REDACTED]' '--token=[REDACTED]' --note 'uses [REDACTED]' "
                    "--rounds 3")


@pytest.mark.asyncio
async def test_notes_are_written_by_run_py_through_a_guarded_post_only(aiohttp_client, mixed_store, tmp_path):
    data = copy_store(mixed_store, tmp_path / "project" / "data")
    client, store = await _client(aiohttp_client, data)
    run_id = _rows(data, "select id from runs limit 1")[0][0]
    body = {"store": store, "target": run_id, "name": "--rounds", "tags": "b,a"}
    assert (await client.post("/api/notes", json=body)).status == 403                    # no token
    headers = {"X-SM-Token": TOKEN}
    assert (await client.post("/api/notes", json={**body, "target": "../x"}, headers=headers)).status == 400
    assert (await client.post("/api/notes", json={**body, "note": "x" * 4001}, headers=headers)).status == 400
    response = await client.post("/api/notes", json=body, headers=headers)
    assert response.status == 200, await response.text()
    argv = (await response.json())["process"]["argv"]
    assert argv[argv.index("--annotate"):] == ["--annotate", run_id, "--name=--rounds", "--tags=b,a"]
    [child] = client.server.app[CHILDREN].items
    assert child.proc.wait(120) == 0, child.log.read_text()
    assert _rows(data, "select name, tags, note from notes") == [("--rounds", "a,b", None)]


@pytest.mark.asyncio
async def test_what_the_mutator_saw_stays_inside_the_store(aiohttp_client, mixed_store):
    client, store = await _client(aiohttp_client, mixed_store)
    attempt_id = _rows(mixed_store, "select id from attempts where round = 1 and genome_hash is not null "
                                    "limit 1")[0][0]
    found = await (await client.get(f"/api/attempts/{attempt_id}/mutator", params={"store": store})).json()
    assert found["found"] and found["texts"]["briefing.md"]["text"].startswith("# Briefing")
    assert found["turns"] and found["staged"]
    for bad in ("../../mutator.db", "skill/SKILL.md", "evidence/../../../mutator.db", "/etc/passwd"):
        got = await (await client.get(f"/api/attempts/{attempt_id}/mutator",
                                      params={"store": store, "file": bad})).json()
        assert got["file"] is None, bad


@pytest.mark.asyncio
async def test_what_the_mutator_saw_is_read_from_the_evidence_store_once_its_workspace_is_gone(
        aiohttp_client, mixed_store, tmp_path):
    data = copy_store(mixed_store, tmp_path / "project" / "data")
    client, store = await _client(aiohttp_client, data)
    attempt_id, run_id, round_no = _rows(data, "select a.id, a.run_id, a.round from attempts a join runs r "
                                               "on r.id = a.run_id where r.strategy = 'greedy' order by "
                                               "a.round desc")[0]
    url, params = f"/api/attempts/{attempt_id}/mutator", {"store": store}
    before = await (await client.get(url, params=params)).json()
    # its own files, and (the history bound in from the run's shared folder, under bwrap) the earlier rounds'
    # from
    # the store
    assert before["found"] and before["source"] in ("workspace", "workspace and evidence store")
    # what the evidence store keeps: every diff and train rollout the workspace was shown (not the ledger or
    # tasks)
    stored = {f["path"]: f["bytes"] for f in before["staged"]
              if f["path"].startswith("evidence/") or f["path"].endswith(".diff")}
    assert any(p.startswith("evidence/current/") for p in stored) and any(p.endswith(".diff") for p in stored)
    texts = {p: (await (await client.get(url, params={**params, "file": p})).json())["file"]["text"]
             for p in stored}
    shutil.rmtree(data / "workspaces" / run_id / f"round-{round_no}-0")
    client.server.app[CACHE].clear()   # the store did not change: drop the answer kept for up to a second
    after = await (await client.get(url, params=params)).json()
    assert not after["found"] and after["source"] == "evidence store" and after["texts"] == {}
    assert {f["path"]: f["bytes"] for f in after["staged"]} == stored
    for path, text in texts.items():
        assert (await (await client.get(url, params={**params, "file": path})).json())["file"]["text"] == text
    for bad in ("../../mutator.db", "history/ledger.md", "evidence/../../../mutator.db"):
        assert (await (await client.get(url, params={**params, "file": bad})).json())["file"] is None, bad
