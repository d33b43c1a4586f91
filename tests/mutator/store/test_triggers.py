"""Per-evaluation trigger figures (mutator/store/triggers.py): stored beside eval when the evaluation closes, and
re-derivable from the cells' skill_use rows and the evaluation's no_trigger_tasks alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.suite import SuiteError, load_suite
from mutator.store import cache
from mutator.store.db import connect

CONTRACT = Contract(model="m", replicates=2, max_turns=5, agent="fake@1", silence_ms=1000, heartbeat_ms=1000)


def write_suite(root: Path, tasks: list[dict]) -> Path:
    (root / "fixtures").mkdir(parents=True)
    (root / "suite.md").write_text(f"---\nname: {root.name}\nsplit: val\nrunner: script\n---\n", encoding="utf-8")
    (root / "run-eval.py").write_text("print('{}')\n", encoding="utf-8")
    (root / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    return root


TASKS = [{"id": "csv-a", "prompt": "clean the csv"}, {"id": "csv-b", "prompt": "tidy this csv", "trigger": True},
         {"id": "poem", "prompt": "write a poem about tables", "trigger": False}]


@pytest.fixture
def db(tmp_path):
    db = connect(tmp_path / "data" / "mutator.db")
    if "skill_use" not in db["cells"].columns_dict:   # added by the telemetry branch's cell_skill_use migration
        db["cells"].add_column("skill_use", str)
    yield db
    db.close()


def add_cells(db, evaluation_id: int, loaded: dict[tuple[str, int], bool | None]) -> None:
    for (task, rep), was in loaded.items():
        db["cells"].insert({"evaluation_id": evaluation_id, "task_id": task, "replicate": rep, "status": "ok",
                            "score": 1.0, "cost_usd": 0.0, "steps": 1,
                            "skill_use": None if was is None else json.dumps({"loaded": was, "loaded_turn": 1 if was
                                                                              else None, "files_read": [],
                                                                              "scripts_run": [],
                                                                              "read_tokens_est": 0})})


def test_an_evaluation_stores_recall_and_false_trigger_rate_beside_eval(db, tmp_path):
    suite = load_suite(write_suite(tmp_path / "trig-val", TASKS))
    assert [t.trigger for t in suite.tasks] == [True, True, False]
    row = cache.open_evaluation(db, "k1", "g1", suite, CONTRACT)
    assert json.loads(row["no_trigger_tasks"]) == ["poem"]
    # should trigger: 3 of 4 loaded (one cell has no record and is left out); near-miss: 1 of 2 loaded
    add_cells(db, row["id"], {("csv-a", 0): True, ("csv-a", 1): True, ("csv-b", 0): False, ("csv-b", 1): True,
                              ("poem", 0): True, ("poem", 1): False})
    db["cells"].update(db.execute("select id from cells where task_id = 'csv-a' and replicate = 1").fetchone()[0],
                       {"skill_use": None})
    cache.close_evaluation(db, row["id"])
    stored = db["evaluations"].get(row["id"])
    assert (stored["trigger_recall"], stored["false_trigger_rate"], stored["eval"]) == (2 / 3, 0.5, 1.0)
    # re-derived from the store alone
    rederived = db.execute(
        "select avg(case when json_extract(c.skill_use, '$.loaded') then 1.0 else 0.0 end) from cells c "
        "join evaluations e on e.id = c.evaluation_id where e.id = ? and c.skill_use is not null "
        "and c.task_id not in (select value from json_each(e.no_trigger_tasks))", [row["id"]]).fetchone()[0]
    assert rederived == pytest.approx(stored["trigger_recall"])


def test_a_suite_with_no_record_or_no_near_miss_stores_none(db, tmp_path):
    suite = load_suite(write_suite(tmp_path / "plain-val", TASKS[:2]))
    row = cache.open_evaluation(db, "k2", "g1", suite, CONTRACT)
    assert row["no_trigger_tasks"] is None
    add_cells(db, row["id"], {("csv-a", 0): None, ("csv-b", 0): True})
    cache.close_evaluation(db, row["id"])
    stored = db["evaluations"].get(row["id"])
    assert (stored["trigger_recall"], stored["false_trigger_rate"]) == (1.0, None)


@pytest.mark.parametrize("value", ["no", 0, None])
def test_a_trigger_that_is_not_a_boolean_names_the_file_and_line(tmp_path, value):
    root = write_suite(tmp_path / "bad-val", [TASKS[0], {"id": "x", "prompt": "p", "trigger": value}])
    with pytest.raises(SuiteError, match=r"tasks\.jsonl:2: 'trigger' must be true .* or false"):
        load_suite(root)
