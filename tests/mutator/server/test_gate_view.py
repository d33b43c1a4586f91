"""What the gate saw, on the mixed store (greedy, branching, population and an A/A run in one store): each
comparison shows the evaluation the gate used (stored on the attempt), never another run's; older attempts
fall back to the run's own evaluation; verdict badges say when a pool's rank or a sibling decided; 64-bit
values are strings."""

from __future__ import annotations

import json
import sqlite3

import pytest
import pytest_asyncio
import sqlite_utils

from mutator.server.app import create_app
from mutator.server.gate_view import safe_ints
from mutator.store.queries.verdicts import has_confirm, verdict_note_column
from tests.conftest import copy_store

from .conftest import TOKEN


async def _client(aiohttp_client, data_dir):
    client = await aiohttp_client(create_app(data_dir=data_dir, project_root=data_dir.parent, token=TOKEN))
    store = (await (await client.get("/api/meta")).json())["stores"][0]["id"]
    return client, store


async def _attempt(client, store, attempt_id: int) -> dict:
    response = await client.get(f"/api/attempts/{attempt_id}", params={"store": store})
    assert response.status == 200, await response.text()
    return await response.json()


def _rows(data_dir, sql, params=()):
    with sqlite3.connect(data_dir / "mutator.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, params)]


@pytest_asyncio.fixture
async def mixed(aiohttp_client, mixed_store):
    return await _client(aiohttp_client, mixed_store)


@pytest.mark.asyncio
async def test_every_comparison_shows_the_evaluation_its_gate_used(mixed, mixed_store):
    client, store = mixed
    scored = _rows(mixed_store, "select a.*, r.kind, r.seed_hash from attempts a join runs r on r.id = "
                                "a.run_id where a.round >= 1 and a.gate is not null order by a.id")
    assert {r["kind"] for r in scored} == {"evolve", "aa"}
    for row in scored:
        # the loop stored what the gate read: an evaluation of the comparator genome
        assert row["comparator_evaluation_id"] is not None, row["id"]
        [ev] = _rows(mixed_store, "select genome_hash from evaluations where id = ?",
                     [row["comparator_evaluation_id"]])
        assert ev["genome_hash"] == row["comparator_hash"]
        d = await _attempt(client, store, row["id"])
        comparator = d["attempt"]["comparator"]
        assert comparator["evaluation_id"] == row["comparator_evaluation_id"] and comparator["stored"] is True
        assert d["figures"]["comparator"]["evaluation_id"] == row["comparator_evaluation_id"]
        assert ({c["task_id"] for c in d["comparator_cells"]}
                == {t["task"] for t in d["attempt"]["task_deltas"]})
        assert ({t["key"]: t["delta"] for t in d["attempt"]["task_deltas"]}
                == json.loads(row["gate"])["deltas"])
        if row["kind"] == "aa":   # an A/A copy is compared with the seed re-evaluated, never with itself
            assert row["comparator_evaluation_id"] == json.loads(row["gate"])["aa"]["seed_evaluation_id"]
            assert row["comparator_evaluation_id"] != row["val_evaluation_id"]
        # the parent row is the very evaluation the gate read
        elif row["parent_hash"] == row["comparator_hash"]:
            assert d["figures"]["parent"]["evaluation_id"] == row["comparator_evaluation_id"]


@pytest.mark.asyncio
async def test_an_aa_run_leaves_the_demo_parent_row_unchanged_and_older_attempts_fall_back_to_their_own_run(
        aiohttp_client, mixed_store, tmp_path):
    data = copy_store(mixed_store, tmp_path / "project" / "data")
    greedy = _rows(data, "select id from runs where strategy = 'greedy' and kind != 'aa'")[0]["id"]
    first = _rows(data, "select * from attempts where run_id = ? and round = 1", [greedy])[0]
    seed_val = _rows(data, "select val_evaluation_id from attempts where run_id = ? and round = 0",
                     [greedy])[0]
    # the A/A run evaluated the same seed (newer rows); an older store has no comparator columns filled
    with sqlite3.connect(data / "mutator.db") as conn:
        conn.execute("update attempts set comparator_hash = null, comparator_evaluation_id = null")
    client, store = await _client(aiohttp_client, data)
    d = await _attempt(client, store, first["id"])
    comparator = d["attempt"]["comparator"]
    assert comparator == {"genome_hash": first["parent_hash"], "evaluation_id": seed_val["val_evaluation_id"],
                          "role": "incumbent (the parent)", "stored": False}
    assert d["figures"]["parent"]["evaluation_id"] == seed_val["val_evaluation_id"]
    aa_evaluations = {i for r in _rows(data, "select a.val_evaluation_id, json_extract(a.gate, "
                                             "'$.aa.seed_evaluation_id') as base from attempts a join runs r "
                                             "on r.id = a.run_id where r.kind = 'aa' and a.round >= "
                                             "1") for i in (r["val_evaluation_id"], r["base"])}
    assert aa_evaluations and None not in aa_evaluations   # the copies and the seed's re-evaluations
    assert d["figures"]["parent"]["evaluation_id"] not in aa_evaluations
    # an older A/A copy: the seed re-evaluation its gate names
    copy = _rows(data, "select a.* from attempts a join runs r on r.id = a.run_id where r.kind = 'aa' and "
                       "a.round = 1")[0]
    d = await _attempt(client, store, copy["id"])
    assert d["attempt"]["comparator"]["evaluation_id"] == json.loads(copy["gate"])["aa"]["seed_evaluation_id"]
    assert d["attempt"]["comparator"]["role"] == "the seed, re-evaluated"


@pytest.mark.asyncio
async def test_badges_say_when_a_pool_rank_or_a_sibling_decided(mixed, mixed_store):
    client, store = mixed
    rows = _rows(mixed_store, "select a.id, a.run_id, a.verdict, json_extract(a.gate, '$.keep') as keep, "
                              "a.pool_snapshot is not null as pooled, a.confirm, r.strategy from attempts a "
                              "join runs r on r.id = a.run_id where r.kind != 'aa'")
    notes = {}
    for run_id in {r["run_id"] for r in rows}:
        detail = await (await client.get(f"/api/runs/{run_id}", params={"store": store, "window": 0})).json()
        notes.update({a["id"]: a["verdict_note"] for a in detail["attempts"]})
    expected = {}
    for r in rows:
        if r["verdict"] == "KEEP" and r["keep"] == 0:
            expected[r["id"]] = "kept by pool rank"
        elif r["verdict"] == "REJECT" and r["keep"] == 1:
            expected[r["id"]] = "lost on pool rank" if r["pooled"] else "lost to a sibling"
        else:
            expected[r["id"]] = None
    assert notes == expected
    assert "lost to a sibling" in notes.values()                 # the branching run's gate-passing losers


KEEP, REJECT = '{"keep": true}', '{"keep": false}'


@pytest.mark.parametrize(("confirm_column", "row", "note"), [
    (True, ("KEEP", REJECT, "[]", None), "kept by pool rank"),
    (True, ("KEEP", KEEP, "[]", None), None),
    (True, ("REJECT", KEEP, "[]", None), "lost on pool rank"),
    (True, ("REJECT", KEEP, None, None), "lost to a sibling"),
    (True, ("REJECT", REJECT, None, None), None),
    (True, ("REJECT", KEEP, None, '{"stands": false}'), "overturned on confirmation"),
    (True, ("REJECT", KEEP, "[]", '{"stands": true}'), "lost on pool rank"),
    (True, ("REJECT", KEEP, None, "not json"), "lost to a sibling"),
    (True, ("CRITIC", None, None, None), None),
    # a store from before `confirm` (migration v3)
    (False, ("REJECT", KEEP, "[]", None), "lost on pool rank"),
])
def test_verdict_note_names_what_decided_when_the_gate_did_not(confirm_column, row, note):
    db = sqlite_utils.Database(memory=True)
    conn = db.conn
    conn.execute("create table attempts (verdict, gate, pool_snapshot"
                 + (", confirm)" if confirm_column else ")"))
    conn.execute(f"insert into attempts values ({', '.join('?' * (4 if confirm_column else 3))})",
                 row if confirm_column else row[:3])
    assert has_confirm(db) is confirm_column
    assert conn.execute(f"select {verdict_note_column(db, 'a.')} from attempts a").fetchone()[0] == note


@pytest.mark.asyncio
async def test_every_view_of_an_attempt_overturned_on_confirmation_says_so(aiohttp_client, mixed_store,
                                                                            tmp_path):
    """The lineage, the attempts table and Round Analysis's siblings read the note as the run detail does
    (they once judged it without the confirmation and called such an attempt "lost to a sibling")."""
    data = copy_store(mixed_store, tmp_path / "project" / "data")
    conn = sqlite3.connect(data / "mutator.db")
    target = conn.execute("select a.id, a.run_id from attempts a join runs r on r.id = a.run_id where r.kind "
                          "!= 'aa' and a.verdict = 'REJECT' and json_extract(a.gate, '$.keep') = 1 limit "
                          "1").fetchone()
    assert target is not None
    with conn:
        conn.execute("update attempts set confirm = ? where id = ?",
                     [json.dumps({"stands": False}), target[0]])
    conn.close()
    client, store = await _client(aiohttp_client, data)
    params = {"store": store}
    lineage = await (await client.get(f"/api/runs/{target[1]}/lineage", params=params)).json()
    assert ({n["attempt_id"]: n["verdict_note"] for n in lineage["nodes"]}[target[0]]
            == "overturned on confirmation")
    table = await (await client.get("/api/attempts", params={**params, "run": target[1]})).json()
    at = table["columns"].index("verdict_note")
    assert {r[0]: r[at] for r in table["rows"]}[target[0]] == "overturned on confirmation"
    detail = await (await client.get(f"/api/attempts/{target[0]}", params=params)).json()
    assert detail["attempt"]["verdict_note"] == "overturned on confirmation"
    assert {s["id"]: s["verdict_note"] for s in detail["siblings"]}[target[0]] == "overturned on confirmation"


def test_integers_beyond_two_to_the_53_become_strings():
    assert safe_ints({"flip": {"sample_seed": 2 ** 63 - 25, "patterns": 256}, "keep": True,
                      "xs": [2 ** 53, -3]}) == {
        "flip": {"sample_seed": str(2 ** 63 - 25), "patterns": 256}, "keep": True, "xs": [str(2 ** 53), -3]}


@pytest.mark.asyncio
async def test_a_64_bit_sample_seed_is_sent_as_a_string(aiohttp_client, mixed_store, tmp_path):
    data = copy_store(mixed_store, tmp_path / "project" / "data")
    row = _rows(data, "select id, gate from attempts where round >= 1 and gate is not null limit 1")[0]
    gate = json.loads(row["gate"])
    gate["flip"] = {**(gate.get("flip") or {}), "sample_seed": 18446744073709551557}
    with sqlite3.connect(data / "mutator.db") as conn:
        conn.execute("update attempts set gate = ? where id = ?", [json.dumps(gate), row["id"]])
    client, store = await _client(aiohttp_client, data)
    d = await _attempt(client, store, row["id"])
    assert d["attempt"]["gate"]["flip"]["sample_seed"] == "18446744073709551557"
