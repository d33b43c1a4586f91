"""An API outage is nobody's verdict on the skill: against a server that fails, the seed's evaluation is
not a result and the run stops; the same command against a healthy server re-runs exactly the cells the
outage failed, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from mutator.store.db import connect_readonly
from tests.eval.agents.messages_server import demo_agent, error
from tests.eval.agents.test_real_run import clean_env, demo_subset, run_py


def test_an_outage_then_a_healthy_api_reruns_exactly_the_failed_cells(server, tmp_path: Path) -> None:
    state = {"outage": True}

    def responder(body: dict):
        # the payments task meets a dead API while the outage lasts; the others are served
        if state["outage"] and "payments spreadsheet" in json.dumps(body):
            return error(529, "overloaded_error")
        return demo_agent(body)

    server.responder = responder
    train, val = demo_subset(tmp_path, "clean-train", 2), demo_subset(tmp_path, "clean-val", 2)
    data = tmp_path / "data"
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", SM_ANTHROPIC_BACKOFF_S="0.01",
                    SM_ANTHROPIC_RETRIES="0")
    args = ("--suite", str(train), "--val", str(val), "--real", "--agent", "anthropic", "--no-solve", "--rounds",
            "0", "--replicates", "1", "--infra-retries", "1", "--data-dir", str(data))
    first = run_py(*args, env=env)
    assert first.returncode == 8, first.stderr[-3000:]          # README's exit codes: cells that are not results
    assert "the seed's evaluation is not complete, so no mutation was tried" in first.stderr
    assert "1 infra_error and 0 grader_error cells of 2 are not results" in first.stderr
    assert "likely cause: the model API or the harness" in first.stderr
    db = connect_readonly(data / "mutator.db")
    before = {r["task_id"]: dict(r) for r in db.query("select * from cells")}
    assert {t: (c["status"], c["retries"]) for t, c in before.items()} == \
        {"orders-13": ("ok", 0), "payments-14": ("infra_error", 1)}      # tried twice in place, then left
    assert "infrastructure (the model API, not the skill)" in before["payments-14"]["error"]
    assert dict(next(iter(db.query("select status from runs"))))["status"] == "stopped"

    state["outage"] = False
    second = run_py(*args, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    db = connect_readonly(data / "mutator.db")
    after = {(r["suite"], r["task_id"]): dict(r) for r in
             db.query("select c.*, e.suite from cells c join evaluations e on e.id = c.evaluation_id")}
    val_cells = {t: c for (s, t), c in after.items() if s == "clean-val"}
    assert val_cells["orders-13"]["id"] == before["orders-13"]["id"]          # the ok cell was not run again
    assert (val_cells["payments-14"]["status"], val_cells["payments-14"]["retries"]) == ("ok", 2)
    assert val_cells["payments-14"]["score"] > 0
    assert {c["status"] for c in after.values()} == {"ok"} and len(after) == 4
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["status"] == "finished" and run["error"] is None
