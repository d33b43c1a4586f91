"""What the gate saw, on the mixed store (greedy, branching, population and an A/A run in one store): each
comparison shows the evaluation the gate used (stored on the attempt), never another run's; older attempts fall
back to the run's own evaluation; verdict badges say when a pool's rank or a sibling decided; 64-bit values are
strings."""

from __future__ import annotations

import json
import sqlite3

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from mutator.server.decisions import verdict_note
from mutator.server.gate_view import safe_ints
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
    scored = _rows(mixed_store, "select a.*, r.kind, r.seed_hash from attempts a join runs r on r.id = a.run_id "
                                "where a.round >= 1 and a.gate is not null order by a.id")
    assert {r["kind"] for r in scored} == {"evolve", "aa"}
    for row in scored:
        # the loop stored what the gate read: an evaluation of the comparator genome
        assert row["comparator_evaluation_id"] is not None, row["id"]
        [ev] = _rows(mixed_store, "select genome_hash from evaluations where id = ?", [row["comparator_evaluation_id"]])
        assert ev["genome_hash"] == row["comparator_hash"]
        d = await _attempt(client, store, row["id"])
        comparator = d["attempt"]["comparator"]
        assert comparator["evaluation_id"] == row["comparator_evaluation_id"] and comparator["stored"] is True
        assert d["figures"]["comparator"]["evaluation_id"] == row["comparator_evaluation_id"]
        assert {c["task_id"] for c in d["comparator_cells"]} == {t["task"] for t in d["attempt"]["task_deltas"]}
        assert {t["key"]: t["delta"] for t in d["attempt"]["task_deltas"]} == json.loads(row["gate"])["deltas"]
        if row["kind"] == "aa":   # an A/A copy is compared with the seed re-evaluated, never with itself
            assert row["comparator_evaluation_id"] == json.loads(row["gate"])["aa"]["seed_evaluation_id"]
            assert row["comparator_evaluation_id"] != row["val_evaluation_id"]
        elif row["parent_hash"] == row["comparator_hash"]:   # the parent row is the very evaluation the gate read
            assert d["figures"]["parent"]["evaluation_id"] == row["comparator_evaluation_id"]


@pytest.mark.asyncio
async def test_an_aa_run_leaves_the_demo_parent_row_unchanged_and_older_attempts_fall_back_to_their_own_run(
        aiohttp_client, mixed_store, tmp_path):
    data = copy_store(mixed_store, tmp_path / "project" / "data")
    greedy = _rows(data, "select id from runs where strategy = 'greedy' and kind != 'aa'")[0]["id"]
    first = _rows(data, "select * from attempts where run_id = ? and round = 1", [greedy])[0]
    seed_val = _rows(data, "select val_evaluation_id from attempts where run_id = ? and round = 0", [greedy])[0]
    # the A/A run evaluated the same seed (newer rows); an older store has no comparator columns filled
    with sqlite3.connect(data / "mutator.db") as conn:
        conn.execute("update attempts set comparator_hash = null, comparator_evaluation_id = null")
    client, store = await _client(aiohttp_client, data)
    d = await _attempt(client, store, first["id"])
    comparator = d["attempt"]["comparator"]
    assert comparator == {"genome_hash": first["parent_hash"], "evaluation_id": seed_val["val_evaluation_id"],
                          "role": "incumbent (the parent)", "stored": False}
    assert d["figures"]["parent"]["evaluation_id"] == seed_val["val_evaluation_id"]
    aa_evaluations = {i for r in _rows(data, "select a.val_evaluation_id, json_extract(a.gate, '$.aa.seed_evaluation_id') "
                                             "as base from attempts a join runs r on r.id = a.run_id where r.kind = 'aa' "
                                             "and a.round >= 1") for i in (r["val_evaluation_id"], r["base"])}
    assert aa_evaluations and None not in aa_evaluations   # the copies and the seed's re-evaluations
    assert d["figures"]["parent"]["evaluation_id"] not in aa_evaluations
    # an older A/A copy: the seed re-evaluation its gate names
    copy = _rows(data, "select a.* from attempts a join runs r on r.id = a.run_id where r.kind = 'aa' and a.round = 1")[0]
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


@pytest.mark.parametrize(("row", "note"), [
    ({"verdict": "KEEP", "gate_keep": 0, "pooled": 1}, "kept by pool rank"),
    ({"verdict": "KEEP", "gate_keep": 1, "pooled": 1}, None),
    ({"verdict": "REJECT", "gate_keep": 1, "pooled": 1}, "lost on pool rank"),
    ({"verdict": "REJECT", "gate_keep": 1, "pooled": 0}, "lost to a sibling"),
    ({"verdict": "REJECT", "gate_keep": 0, "pooled": 0}, None),
    ({"verdict": "REJECT", "gate": {"keep": True}, "confirm": {"stands": False}}, "overturned on confirmation"),
    ({"verdict": "CRITIC", "gate_keep": None, "pooled": 0}, None),
])
def test_verdict_note_names_what_decided_when_the_gate_did_not(row, note):
    assert verdict_note(row) == note


def test_integers_beyond_two_to_the_53_become_strings():
    assert safe_ints({"flip": {"sample_seed": 2 ** 63 - 25, "patterns": 256}, "keep": True, "xs": [2 ** 53, -3]}) == {
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
