"""Several eval models end to end (fakes): a two-model dry run finishes, resumes with 0 new cells, and reuses
every cell a one-model run of its first model already paid for."""

from __future__ import annotations

import re
from pathlib import Path

from mutator.config import load_settings
from mutator.store.db import connect_readonly, loads
from tests.conftest import PLAIN_ARGS, ROOT, copy_store, run_cli

ARGS = PLAIN_ARGS   # the session fixture plain_run ran it once
TWO = "claude-haiku-4-5,claude-sonnet-4-5"


def cells_run(stdout: str) -> int:
    return int(re.search(r"(\d+) cells run by this command", stdout).group(1))


def haiku_cells(data_dir: Path) -> set[int]:
    db = connect_readonly(data_dir / "mutator.db")
    return {r["id"] for r in db.query("select c.id from cells c join evaluations e on e.id = c.evaluation_id "
                                      "where e.model = 'claude-haiku-4-5'")}


def test_two_models_reuse_one_model_cells_then_resume_with_none(plain_run, tmp_path: Path) -> None:
    data = copy_store(plain_run[0], tmp_path / "data")   # the session's run of ARGS at the config's one model
    one = plain_run[1]
    assert one.returncode == 0 and one.args[2:-2] == list(ARGS), one.stderr[-2000:]
    assert load_settings(config_file=ROOT / "config.json").model == "claude-haiku-4-5"
    before = haiku_cells(data)
    two = run_cli(*ARGS, "--model", TWO, "--data-dir", str(data))
    assert two.returncode == 0, two.stderr[-2000:]
    assert haiku_cells(data) == before          # not one haiku cell re-run: the group reused them
    db = connect_readonly(data / "mutator.db")
    runs = {r["model"]: dict(r) for r in db.query("select * from runs")}
    assert set(runs) == {"claude-haiku-4-5", TWO}
    sonnet = db.execute("select count(*) from cells c join evaluations e on e.id = c.evaluation_id "
                        "where e.model = 'claude-sonnet-4-5'").fetchone()[0]
    assert cells_run(two.stdout) == sonnet > 0

    run = runs[TWO]
    assert [m for m, _, _ in loads(run["seed_models"])["val"]] == ["claude-haiku-4-5", "claude-sonnet-4-5"]
    rows = [dict(r) for r in db.query("select * from attempts where run_id = ? order by round", [run["id"]])]
    for a in rows[1:]:
        gate = loads(a["gate"])
        assert gate["n"] == 2 * 8 and all("@" in k for k in gate["deltas"])      # clean-val: 8 tasks x 2 models
        per_model = gate["by_model"]
        assert abs(a["delta"] - sum(f["delta"] for f in per_model.values()) / 2) < 1e-12   # Δ = mean over models
    group = db["evaluations"].get(rows[0]["val_evaluation_id"])
    assert group["model"] == TWO and set(loads(group["members"])) == {"claude-haiku-4-5", "claude-sonnet-4-5"}
    assert group["n_cells"] == 16 and group["status"] == "done"
    assert "· claude-sonnet-4-5" in two.stdout and "per model Δ:" in two.stdout

    again = run_cli(*ARGS, "--model", TWO, "--data-dir", str(data))
    assert again.returncode == 0, again.stderr[-2000:]
    assert "Resuming" in again.stderr + again.stdout and cells_run(again.stdout) == 0
