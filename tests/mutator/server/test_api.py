"""The JSON API over a store written by a real dry run: shapes, 404s, 400s, live stage progress."""

from __future__ import annotations

import sqlite3

import pytest
import pytest_asyncio

from mutator.server.app import create_app

from .conftest import TOKEN

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def client(aiohttp_client, dry_store):
    app = create_app(data_dir=dry_store, project_root=dry_store.parent, token=TOKEN)
    return await aiohttp_client(app)


async def _store(client) -> str:
    meta = await (await client.get("/api/meta")).json()
    return meta["stores"][0]["id"]


async def get(client, path: str, status: int = 200, **params):
    response = await client.get(path, params=params)
    assert response.status == status, await response.text()
    return await response.json()


async def test_meta_lists_the_store_and_launch_options(client, dry_store):
    meta = await get(client, "/api/meta")
    assert [s["path"] for s in meta["stores"]] == [str(dry_store.resolve())]
    assert meta["code_stale"] is False and meta["running_store"] is None
    assert {"clean-train", "clean-val", "clean-test"} <= set(meta["options"]["suites"])
    assert "greedy" in meta["options"]["strategies"] and meta["options"]["seeds"]


async def test_skills_and_runs(client, run_id):
    store = await _store(client)
    skills = await get(client, "/api/skills", store=store)
    assert skills == [{**skills[0], "skill_name": "csv-clean", "n_runs": 1}]
    runs = await get(client, "/api/runs", store=store, skill="csv-clean")
    assert ([r["id"] for r in runs] == [run_id] and runs[0]["status"] == "finished"
            and runs[0]["alive"] is False)
    assert await get(client, "/api/runs", store=store, skill="no-such-skill") == []


async def test_run_detail_has_a_timeline_with_every_stage_and_the_test(client, run_id):
    store = await _store(client)
    detail = await get(client, f"/api/runs/{run_id}", store=store)
    attempts = detail["attempts"]
    assert [a["round"] for a in attempts] == [0, 1, 2, 3]
    for a in attempts:
        assert [s["stage"] for s in a["stages"]] == ["mutation", "critic", "build", "grading", "score"]
        assert {s["state"] for s in a["stages"]} <= {"done", "skipped"}
    assert attempts[0]["verdict"] == "SEED" and attempts[0]["train_composite"] is not None
    assert all(a["verdict"] in ("KEEP", "REJECT", "SCREENED", "CRITIC", "FAILED") for a in attempts[1:])
    assert attempts[-1]["champion_composite"] is not None
    curve = detail["curve"]
    assert curve["round"] == [0, 1, 2, 3] and None not in curve["champion"] and curve["test"].count(None) == 3
    assert curve["champion"][0] == attempts[0]["composite"] and detail["n_rounds"] == 4
    recent = await get(client, f"/api/runs/{run_id}", store=store, window="2")
    assert [a["round"] for a in recent["attempts"]] == [2, 3] and recent["curve"] == curve
    [test] = detail["tests"]
    assert test["suite"] == "clean-test" and test["status"] == "done" and test["composite"] is not None


async def test_attempt_detail_on_both_splits_and_its_diff(client, run_id):
    store = await _store(client)
    detail = await get(client, f"/api/runs/{run_id}", store=store)
    first = detail["attempts"][1]
    val = await get(client, f"/api/attempts/{first['id']}", store=store, split="val")
    assert val["suite"] == "clean-val" and val["evaluation"]["status"] == "done"
    assert len(val["cells"]) == val["evaluation"]["n_cells"] == 16
    assert val["tests"]["names"] and set(val["tests"]["grid"]) == {c["task_id"] for c in val["cells"]}
    assert set(val["figures"]) == {"candidate", "parent", "comparator", "seed"}
    assert val["figures"]["seed"]["composite"] is not None
    # round 1 is compared with the seed: the gate's comparator is the seed's val evaluation, and so is the
    # parent row
    seed_val = detail["attempts"][0]["val_evaluation_id"]
    assert (val["attempt"]["comparator"]["evaluation_id"] == val["figures"]["comparator"]["evaluation_id"]
            == seed_val)
    assert val["figures"]["parent"]["evaluation_id"] == seed_val
    assert val["attempt"]["gate"]["n"] == 8 and isinstance(val["attempt"]["critic"], list)
    train = await get(client, f"/api/attempts/{first['id']}", store=store, split="train")
    assert train["suite"] == "clean-train"
    diff = await get(client, f"/api/attempts/{first['id']}/diff", store=store)
    assert diff["diff"].startswith("diff --git") and diff["genome"] == first["genome_hash"]
    seed_diff = await get(client, f"/api/attempts/{detail['attempts'][0]['id']}/diff", store=store)
    assert "+++ b/SKILL.md" in seed_diff["diff"]  # the seed diffs against the empty tree


async def test_cell_drill_down_reads_its_files(client, run_id):
    store = await _store(client)
    detail = await get(client, f"/api/runs/{run_id}", store=store)
    val = await get(client, f"/api/attempts/{detail['attempts'][1]['id']}", store=store)
    cell = await get(client, f"/api/cells/{val['cells'][0]['id']}", store=store)
    assert (cell["found_dir"] and cell["events"][0]["type"] == "system"
            and cell["events"][-1]["type"] == "result")
    assert set(cell["cell"]["tests"]) and "grade.stdout" in cell["files"] and "cell_dir" not in cell["cell"]
    # skill telemetry: the cell's own record, and the evaluation's file × (read, run) table beside its
    # parent's
    assert cell["cell"]["skill_use"] == {"loaded": True, "loaded_turn": 1,
                                         "files_read": ["SKILL.md", "rules.json"], "scripts_run": [],
                                         "read_tokens_est": cell["cell"]["skill_use"]["read_tokens_est"]}
    used = val["attempt"]["skill_use"]
    files = {f["path"]: (f["read"], f["run"]) for f in used["candidate"]["files"]}
    assert used["candidate"]["cells"] == used["parent"]["cells"] == 16 and used["candidate"]["loaded"] == 16
    assert files["SKILL.md"] == files["rules.json"] == (16, 0) and files["examples.md"] == (0, 0)
    assert "examples.md read in 0 of 16 cells" in used["candidate"]["lines"]


async def test_lineage_chain_runs_champion_to_seed(client, run_id):
    store = await _store(client)
    lineage = await get(client, f"/api/runs/{run_id}/lineage", store=store)
    chain = lineage["chain"]
    assert chain[0]["genome_hash"] == lineage["run"]["incumbent_hash"]
    assert chain[-1]["genome_hash"] == lineage["run"]["seed_hash"]
    assert len(lineage["nodes"]) == 4


async def test_history_has_one_regime_with_train_and_test(client, run_id):
    store = await _store(client)
    [regime] = await get(client, "/api/history", store=store, skill="csv-clean")
    assert regime["run"]["id"] == run_id and len(regime["points"]) == 4
    seed = dict(zip(regime["columns"], regime["points"][0]))
    assert seed["verdict"] == "SEED" and seed["t_composite"] is not None and len(regime["tests"]) == 1


@pytest.mark.parametrize("path", ["/api/runs/run-000000000000", "/api/runs/run-000000000000/lineage",
                                  "/api/attempts/999999", "/api/attempts/999999/diff", "/api/cells/999999"])
async def test_unknown_ids_are_404(client, path):
    await get(client, path, 404, store=await _store(client))


@pytest.mark.parametrize(("path", "params", "status"), [
    ("/api/runs", {"store": "0123456789"}, 404),
    ("/api/runs", {"store": "../../etc"}, 400),
    ("/api/runs", {"skill": "../x"}, 400),
    ("/api/runs/notarun", {}, 400),
    ("/api/attempts/1", {"split": "test; drop"}, 400),
    ("/api/history", {}, 400),
])
async def test_bad_parameters_are_refused(client, path, params, status):
    response = await client.get(path, params=params)
    assert response.status == status


async def test_events_stream_sends_a_change_first(client):
    store = await _store(client)
    response = await client.get("/api/events", params={"store": store})
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/event-stream")
    line = await response.content.readline()
    assert line == b"event: change\n"
    data = await response.content.readline()
    assert b'"version"' in data
    response.close()


async def test_stages_follow_an_evaluation_in_progress(aiohttp_client, store_copy, run_id):
    """Doctor a copy into 'round 3 is being graded': the timeline shows grading running at n_done/n_cells."""
    with sqlite3.connect(store_copy / "mutator.db") as conn:
        attempt_id, ev_id = conn.execute("select id, val_evaluation_id from attempts where round = 3"
                                         ).fetchone()
        conn.execute("update attempts set verdict = null, gate = null, delta = null, gate_threshold = null, "
                     "val_evaluation_id = null, status = 'pending' where id = ?", [attempt_id])
        conn.execute("update evaluations set status = 'running', n_done = 5 where id = ?", [ev_id])
    client = await aiohttp_client(create_app(data_dir=store_copy, project_root=store_copy.parent,
                                             token=TOKEN))
    detail = await get(client, f"/api/runs/{run_id}", store=await _store(client))
    stages = {s["stage"]: s for s in detail["attempts"][-1]["stages"]}
    assert stages["mutation"]["state"] == "done" and stages["critic"]["state"] == "done"
    assert stages["grading"]["state"] == "running" and stages["grading"]["progress"]["n_done"] == 5
    assert stages["grading"]["progress"]["n_cells"] == 16 and stages["score"]["state"] == "pending"


async def test_a_cell_dir_outside_the_store_is_never_read(aiohttp_client, store_copy, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "grade.stdout").write_text("SECRET")
    with sqlite3.connect(store_copy / "mutator.db") as conn:
        conn.execute("update cells set cell_dir = ?, task_id = '..' where id = 1", [str(outside)])
    client = await aiohttp_client(create_app(data_dir=store_copy, project_root=store_copy.parent,
                                             token=TOKEN))
    cell = await get(client, "/api/cells/1", store=await _store(client))
    assert cell["found_dir"] is False and cell["files"] == {} and "SECRET" not in str(cell)


async def test_run_detail_carries_solve_meta_skill_val_queries_and_the_honest_report(client, run_id):
    """The fixture ran with --confirm, --meta-skill-every 2 and a solve phase, then --test-run."""
    store = await _store(client)
    detail = await get(client, f"/api/runs/{run_id}", store=store)
    run = detail["run"]
    assert run["confirm"] == 1 and run["val_query_warn"] == 200
    confirmed = [a for a in detail["attempts"] if a["confirm"]]
    # 3 candidates query val (the seed's baseline does not count), and each confirmation re-evaluates two
    # genomes
    assert run["val_queries"] == 3 + 2 * len(confirmed)
    [lessons] = run["meta_skill"]
    assert lessons["round"] == 2 and lessons["lessons"] and lessons["cost_usd"] >= 0
    solve = run["solve"]
    assert (solve["aborted"] is False and 1 <= solve["passes"] <= solve["attempts"] == 2
            and len(solve["tasks"]) == 12)
    assert all(0 <= t["score"] <= 1 and 1 <= t["pass"] <= 2 for t in solve["tasks"].values())
    [test] = detail["tests"]
    report = test["report"]
    assert set(report["splits"]) == {"train", "val", "test"} and report["splits"]["test"]["n_tasks"] > 0
    assert report["splits"]["test"]["delta"]["se"] is not None and set(report["gap"]) == {"train", "val"}


async def test_round_analysis_has_the_confirmation_and_critic_rows(client, run_id):
    store = await _store(client)
    detail = await get(client, f"/api/runs/{run_id}", store=store)
    kept = [a for a in detail["attempts"] if a["confirm"]]
    assert kept, "the dry run's keeps are re-checked on fresh val replicates"
    for a in kept:
        assert isinstance(a["confirm"]["stands"], bool) and "threshold" in a["confirm"]["gate"]
    found = await get(client, f"/api/attempts/{kept[0]['id']}", store=store)
    confirm = found["attempt"]["confirm"]
    assert confirm["salt"].startswith("confirm:") and confirm["gate"]["n"] == 8
    for side in ("candidate", "incumbent"):
        assert confirm["figures"][side]["composite"] is not None and confirm["figures"][side]["n_cells"] == 16
    assert confirm["candidate_evaluation_id"] != found["attempt"]["val_evaluation_id"]  # fresh replicates
    critic = found["attempt"]["critic"]
    assert {row["gate"] for row in critic} >= {"non-empty", "size", "growth", "fences", "placeholders",
                                               "leftovers"}
    assert all(set(row) == {"gate", "verdict", "reason"} for row in critic)
    seed = await get(client, f"/api/attempts/{detail['attempts'][0]['id']}", store=store)
    assert seed["attempt"]["confirm"] is None and seed["attempt"]["critic"] is None


async def test_a_store_from_before_migration_v3_still_reads(aiohttp_client, store_copy, run_id):
    """A store no newer loop has opened lacks attempts.confirm and the run's v3 columns."""
    with sqlite3.connect(store_copy / "mutator.db") as conn:
        for table, column in (("attempts", "confirm"), ("runs", "solve"), ("runs", "meta_skill"),
                              ("runs", "val_queries"), ("runs", "confirm")):
            conn.execute(f"alter table {table} drop column {column}")
    client = await aiohttp_client(create_app(data_dir=store_copy, project_root=store_copy.parent,
                                             token=TOKEN))
    store = await _store(client)
    detail = await get(client, f"/api/runs/{run_id}", store=store)
    assert detail["run"]["solve"] is None and detail["run"]["meta_skill"] == []
    assert all(a["confirm"] is None for a in detail["attempts"])
    found = await get(client, f"/api/attempts/{detail['attempts'][1]['id']}", store=store)
    assert found["attempt"]["confirm"] is None
