"""Every figure the dashboard shows agrees with the store, on a store holding every shape the loop writes:
CRITIC no-change attempts (genome == parent), branching siblings, a population run and an A/A run."""

from __future__ import annotations

import json
import sqlite3

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from tests.conftest import copy_store

from .conftest import TOKEN

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def client(aiohttp_client, mixed_store):
    return await aiohttp_client(create_app(data_dir=mixed_store, project_root=mixed_store.parent,
                                           token=TOKEN))


@pytest.fixture(scope="module")
def store_rows(mixed_store):
    with sqlite3.connect(mixed_store / "mutator.db") as conn:
        conn.row_factory = sqlite3.Row
        runs = {r["strategy"]: dict(r) for r in conn.execute("select * from runs")}
        attempts = [dict(r) for r in conn.execute("select * from attempts order by run_id, round, sibling")]
        tests = [dict(r) for r in conn.execute("select * from test_runs")]
    return runs, attempts, tests


async def get(client, path: str, status: int = 200, **params):
    response = await client.get(path, params=params)
    assert response.status == status, await response.text()
    return await response.json()


async def _store(client) -> str:
    return (await get(client, "/api/meta"))["stores"][0]["id"]


async def test_the_chain_runs_champion_to_seed_on_every_run(client, store_rows):
    runs, attempts, _ = store_rows
    store = await _store(client)
    for strategy, run in runs.items():
        response = await client.get(f"/api/runs/{run['id']}/lineage", params={"store": store})
        assert response.status == 200, strategy
        assert len(await response.read()) < 50_000, strategy   # was 2.26 MB: one genome repeated 10,000 times
        lineage = await response.json()
        chain = [c["genome_hash"] for c in lineage["chain"]]
        assert chain[0] == run["incumbent_hash"] and chain[-1] == run["seed_hash"], strategy
        assert len(chain) == len(set(chain)), strategy
        origin = {n["genome_hash"]: n for n in lineage["nodes"] if n["origin"]}
        for child, parent in zip(chain, chain[1:]):
            assert origin[child]["parent_hash"] == parent and parent != child
        assert {n["genome_hash"] for n in lineage["nodes"] if n["on_chain"]} == set(chain)
    greedy = await get(client, f"/api/runs/{runs['greedy']['id']}/lineage", store=store)
    assert len(greedy["chain"]) == 3   # seed -> round 1 -> round 2 (round 3 rejected, 4 and 5 critic)


async def test_a_critic_no_change_attempt_is_never_its_genomes_origin(client, store_rows):
    runs, attempts, _ = store_rows
    [noop] = [a for a in attempts
              if a["run_id"] == runs["greedy"]["id"] and a["genome_hash"] == a["parent_hash"]]
    assert noop["verdict"] == "CRITIC"
    lineage = await get(client, f"/api/runs/{noop['run_id']}/lineage", store=await _store(client))
    node = next(n for n in lineage["nodes"] if n["attempt_id"] == noop["id"])
    assert node["origin"] is False and node["on_chain"] is False
    assert node["reason"].startswith("not evaluated: critic gate 'changed'")
    # its edge still points at the genome it left unchanged, from the attempt that produced that genome
    assert {"attempt_id": noop["id"], "from": noop["parent_hash"], "kind": "parent"} in lineage["edges"]


async def test_lineage_edges_include_population_parents_and_crossover_refs(client, store_rows):
    runs, attempts, _ = store_rows
    run = runs["population"]
    lineage = await get(client, f"/api/runs/{run['id']}/lineage", store=await _store(client))
    expected = []
    for a in attempts:
        if a["run_id"] == run["id"] and a["parent_hash"]:
            expected.append({"attempt_id": a["id"], "from": a["parent_hash"], "kind": "parent"})
            expected += [{"attempt_id": a["id"], "from": r, "kind": "ref"}
                         for r in json.loads(a["ref_hashes"] or "[]")]
    assert sorted(lineage["edges"], key=str) == sorted(expected, key=str)
    assert any(e["kind"] == "ref" for e in expected), "the demo population run has a crossover"
    parents: dict[int, set[str]] = {}
    for a in attempts:
        if a["run_id"] == run["id"] and a["round"] >= 2:
            parents.setdefault(a["round"], set()).add(a["parent_hash"])
    # a round bred off a pool member besides the leader
    assert any(len(p) > 1 for p in parents.values()), parents


async def test_aa_runs_are_readable_and_listed_after_the_ordinary_runs(client, store_rows):
    runs, _, _ = store_rows
    store = await _store(client)
    aa = runs["aa"]["id"]
    assert aa.startswith("aa-")
    listed = await get(client, "/api/runs", store=store, skill="csv-clean")
    kinds = [r["kind"] for r in listed]
    assert kinds[-1] == "aa" and kinds.count("aa") == 1 and kinds[0] == "evolve"   # the A/A run is the newest
    detail = await get(client, f"/api/runs/{aa}", store=store)
    assert detail["run"]["kind"] == "aa" and [a["round"] for a in detail["attempts"]] == [0, 1, 2, 3]
    assert detail["curve"]["incumbent"] == [runs["aa"]["seed_hash"]] * 4
    assert len(set(detail["curve"]["champion"])) == 1   # the seed's own figure, not a copy's
    await get(client, f"/api/runs/{aa}/lineage", store=store)
    regimes = await get(client, "/api/history", store=store, skill="csv-clean")
    assert [g["run"]["kind"] for g in regimes][-1] == "aa" and regimes[0]["run"]["kind"] == "evolve"


async def test_the_champion_curve_follows_the_strategys_incumbent(client, store_rows):
    runs, attempts, _ = store_rows
    store = await _store(client)
    for strategy, run in runs.items():
        detail = await get(client, f"/api/runs/{run['id']}", store=store)
        curve = detail["curve"]
        assert curve["incumbent"][-1] == run["incumbent_hash"], strategy
        mine = [a for a in attempts if a["run_id"] == run["id"]]
        seed_composite = next(a["composite"] for a in mine if a["verdict"] == "SEED")
        composite = {a["genome_hash"]: a["composite"] for a in reversed(mine) if a["composite"] is not None}
        composite[run["seed_hash"]] = seed_composite
        assert curve["champion"] == [composite[g] for g in curve["incumbent"]], strategy
    # population: the incumbent is the pool's leader, not the round's last KEEP
    pop = [a for a in attempts if a["run_id"] == runs["population"]["id"]]
    detail = await get(client, f"/api/runs/{runs['population']['id']}", store=store)
    for i, rnd in enumerate(detail["curve"]["round"]):
        snapshot = next((json.loads(a["pool_snapshot"]) for a in pop
                         if a["round"] == rnd and a["pool_snapshot"]), None)
        if snapshot:
            assert detail["curve"]["incumbent"][i] == snapshot[0]
    last_keep = [a for a in pop if a["round"] == 1 and a["verdict"] == "KEEP"][-1]
    assert detail["curve"]["champion"][1] != last_keep["composite"]   # the demo's round 1: sibling 0 leads


async def test_every_verdict_carries_its_reason(client, store_rows):
    runs, _, _ = store_rows
    store = await _store(client)
    prefix = {"SEED": "seed:", "KEEP": "kept:", "REJECT": "rejected:", "CRITIC": "not evaluated: critic gate",
              "FAILED": "failed:", "SCREENED": "screened out before val: "}
    for strategy, run in runs.items():
        detail = await get(client, f"/api/runs/{run['id']}", store=store)
        for a in detail["attempts"]:
            assert a["reason"].startswith(prefix[a["verdict"]]), (strategy, a["verdict"], a["reason"])
    branching = await get(client, f"/api/runs/{runs['branching']['id']}", store=store)
    beaten = [a for a in branching["attempts"]
              if a["verdict"] == "REJECT" and a["delta"] >= a["gate_threshold"]]
    assert beaten, "the demo's branching run rejects a gate-passing sibling"
    for a in beaten:
        siblings = [s for s in branching["attempts"] if s["round"] == a["round"]]
        best = max(siblings, key=lambda s: (s["composite"], -s["sibling"]))
        assert f"sibling {best['sibling']} was better" in a["reason"] and best["verdict"] == "KEEP"
    pop = await get(client, f"/api/runs/{runs['population']['id']}", store=store)
    assert all("entered the pool" in a["reason"] for a in pop["attempts"] if a["verdict"] == "KEEP")
    aa = await get(client, f"/api/runs/{runs['aa']['id']}", store=store)
    assert all("false call" in a["reason"] for a in aa["attempts"] if a["verdict"] == "REJECT")
    # Round Analysis carries the same reason, for the attempt and its siblings
    found = await get(client, f"/api/attempts/{beaten[0]['id']}", store=store)
    assert found["attempt"]["reason"] == beaten[0]["reason"]
    assert {s["id"]: s["reason"] for s in found["siblings"]} == {
        a["id"]: a["reason"] for a in branching["attempts"] if a["round"] == beaten[0]["round"]}


async def test_proposals_show_the_newest_test_run(client, store_rows):
    runs, _, tests = store_rows
    store = await _store(client)
    test = next(t for t in tests if t["run_id"] == runs["greedy"]["id"])
    listed = await get(client, "/api/proposals", store=store)
    mine = next(p for p in listed if p["run_id"] == runs["greedy"]["id"])
    assert mine["test"]["test_run"] == test["id"] and mine["test"]["composite"] == test["composite"]
    detail = await get(client, f"/api/proposals/{mine['id']}", store=store)
    assert detail["test"]["test_run"] == test["id"] and detail["test"]["suite"] == "clean-test"
    untested = [p for p in listed if p["run_id"] not in {t["run_id"] for t in tests}]
    assert untested and all(p["test"] is None for p in untested)


@pytest.mark.parametrize(("path", "params"), [
    ("/api/runs/{run}", {"window": "²"}), ("/api/runs/{run}", {"window": "①"}),
    ("/api/runs/{run}", {"window": "١٢"}), ("/api/runs/{run}", {"window": "-1"}),
    ("/api/runs/{run}", {"window": " 5"}), ("/api/health-checks", {"days": "①"}),
    ("/api/health-checks", {"days": "²"}), ("/api/health-checks", {"days": "0"}),
])
async def test_a_non_ascii_digit_in_a_number_is_a_400(client, store_rows, path, params):
    runs, _, _ = store_rows
    response = await client.get(path.format(run=runs["greedy"]["id"]), params={"store": await _store(client),
                                                                              **params})
    assert response.status == 400 and "ASCII digits" in (await response.json())["error"]


@pytest.mark.parametrize("path", ["/api/attempts/١٢", "/api/attempts/²", "/api/cells/١", "/api/proposals/١"])
async def test_a_non_ascii_id_is_not_a_route(client, path):
    assert (await client.get(path)).status == 404


async def test_history_marks_where_each_incumbent_took_over(client, store_rows):
    runs, _, _ = store_rows
    store = await _store(client)
    regimes = {g["run"]["id"]: g for g in await get(client, "/api/history", store=store, skill="csv-clean")}
    for strategy, run in runs.items():
        curve = (await get(client, f"/api/runs/{run['id']}", store=store))["curve"]
        changes = [rnd for i, rnd in enumerate(curve["round"])
                   if i == 0 or curve["incumbent"][i] != curve["incumbent"][i - 1]]
        points = [dict(zip(regimes[run["id"]]["columns"], p)) for p in regimes[run["id"]]["points"]]
        assert sorted(p["round"] for p in points if p["leads"]) == changes, strategy
        for p in points:
            if p["leads"]:
                assert p["composite"] == curve["champion"][curve["round"].index(p["round"])], strategy


async def test_live_events_carry_signatures_of_the_run_list_and_the_shown_run(client, store_rows):
    runs, _, _ = store_rows
    store = await _store(client)
    response = await client.get("/api/events", params={"store": store, "run": runs["aa"]["id"]})
    assert response.status == 200
    assert await response.content.readline() == b"event: change\n"
    data = json.loads((await response.content.readline()).decode().removeprefix("data: "))
    assert len(data["runs"]) == len(data["run"]) == 12 and data["children"] == 0
    response.close()
    assert (await client.get("/api/events", params={"store": store, "run": "../x"})).status == 400


async def test_a_run_signature_moves_only_with_that_run(mixed_store, tmp_path, store_rows):

    from mutator.server import queries as Q
    from mutator.store.db import connect_readonly
    runs, _, _ = store_rows
    copy = tmp_path / "data"
    copy_store(mixed_store, copy)
    db = connect_readonly(copy / "mutator.db")
    first = Q.signatures(db, runs["greedy"]["id"])
    with sqlite3.connect(copy / "mutator.db") as conn:
        conn.execute("update runs set updated_at = updated_at + 1 where id = ?", [runs["branching"]["id"]])
    assert Q.signatures(db, runs["greedy"]["id"]) == first        # another run's bookkeeping: nothing moves
    with sqlite3.connect(copy / "mutator.db") as conn:
        conn.execute("update attempts set summary = 'x', finished_at = finished_at + 1 where run_id = ? and "
                     "round = 2",
                     [runs["greedy"]["id"]])
    second = Q.signatures(db, runs["greedy"]["id"])
    assert second["run"] != first["run"] and second["runs"] == first["runs"]
    with sqlite3.connect(copy / "mutator.db") as conn:
        conn.execute("update runs set status = 'running' where id = ?", [runs["branching"]["id"]])
    assert Q.signatures(db, runs["greedy"]["id"])["runs"] != second["runs"]
    db.conn.close()


async def test_the_demo_seed_folder_is_never_offered_as_a_deploy_target(client, store_rows):
    store = await _store(client)
    listed = await get(client, "/api/proposals", store=store)
    assert listed and all("suites" in p["target_dir"] and p["target_offered"] is None for p in listed)
    response = await client.post(f"/api/proposals/{listed[0]['id']}/accept", json={"store": store},
                                 headers={"X-SM-Token": TOKEN,
                                          "Origin": str(client.make_url("")).rstrip("/")})
    assert response.status == 400 and "demo's own seed folder" in (await response.json())["error"]
    assert await get(client, "/api/processes") == []


async def test_an_aa_run_carries_its_false_call_rate(client, store_rows):
    runs, attempts, _ = store_rows
    aa = (await get(client, f"/api/runs/{runs['aa']['id']}", store=await _store(client)))["aa"]
    copies = [a for a in attempts if a["run_id"] == runs["aa"]["id"] and a["round"] > 0]
    called = sum(a["verdict"] == "REJECT" or json.loads(a["gate"])["aa"]["false_improvement"] for a in copies)
    assert aa["n"] == len(copies) == 3 and aa["false_calls"] == called
    assert [c["delta"] for c in aa["copies"]] == [a["delta"] for a in copies]
    assert aa["ci_low"] <= aa["rate"] <= aa["ci_high"]
    plain = await get(client, f"/api/runs/{runs['greedy']['id']}", store=await _store(client))
    assert "aa" not in plain


async def test_an_aa_copy_skips_mutation_and_critic(client, store_rows):
    runs, _, _ = store_rows
    detail = await get(client, f"/api/runs/{runs['aa']['id']}", store=await _store(client))
    for a in detail["attempts"][1:]:
        states = {s["stage"]: s["state"] for s in a["stages"]}
        assert states == {"mutation": "skipped", "critic": "skipped", "build": "done", "grading": "done",
                          "score": "done"}


async def test_compare_puts_runs_on_one_axis_with_the_paired_test_delta(client, store_rows, mixed_store):
    runs, attempts, tests = store_rows
    store = await _store(client)
    ids = [runs["greedy"]["id"], runs["branching"]["id"], runs["population"]["id"]]
    found = await get(client, "/api/compare", store=store, runs=",".join(ids))
    assert [v["run"]["id"] for v in found["runs"]] == ids and found["comparable"] is True
    for view in found["runs"]:
        curve = (await get(client, f"/api/runs/{view['run']['id']}", store=store))["curve"]
        assert view["curve"]["round"] == curve["round"] and view["curve"]["champion"] == curve["champion"]
        assert view["champion"]["composite"] == curve["champion"][-1]
        assert view["seed"]["composite"] == curve["champion"][0]
    # only greedy and branching were tested, both on clean-test
    [pair] = found["pairs"]
    assert (pair["a"], pair["b"], pair["suite"]) == (ids[0], ids[1], "clean-test")
    assert pair["ci_low"] <= pair["mean"] <= pair["ci_high"] and pair["n"] == 8   # clean-test has 8 tasks
    # the paired Δ by hand: per-task composites of both champions' test cells, scaled by the greedy run's seed
    from mutator.scoring.score import CellFigures, Weights, normalisers, per_task
    with sqlite3.connect(mixed_store / "mutator.db") as conn:
        def cells(ev):
            return [CellFigures(*r[:5], r[5] == "ok") for r in conn.execute(
                "select task_id, replicate, score, cost_usd, steps, status from cells "
                "where evaluation_id = ?", [ev])]
        by_run = {t["run_id"]: t for t in tests}
        seed_ev = json.loads(by_run[ids[0]]["report"])["splits"]["test"]["seed_evaluation_id"]
        norm = normalisers(cells(seed_ev))
    w = Weights(runs["greedy"]["w_cost"], runs["greedy"]["w_steps"])
    a = per_task(cells(by_run[ids[0]]["evaluation_id"]), w, norm)
    b = per_task(cells(by_run[ids[1]]["evaluation_id"]), w, norm)
    expected = sum(b[t].composite - a[t].composite for t in a) / len(a)
    assert pair["mean"] == pytest.approx(expected)


@pytest.mark.parametrize("runs", ["", "run-abc123", "run-abc123,run-abc123", "a,b",
                                  "run-1,run-2,run-3,run-4,run-5"])
async def test_compare_refuses_bad_run_lists(client, runs):
    response = await client.get("/api/compare", params={"store": await _store(client), "runs": runs})
    assert response.status == 400


async def test_compare_of_an_unknown_run_is_404(client, store_rows):
    runs, _, _ = store_rows
    await get(client, "/api/compare", 404, store=await _store(client),
              runs=f"{runs['greedy']['id']},run-000000")
