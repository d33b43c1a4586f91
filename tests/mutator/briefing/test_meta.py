"""The meta skill is distilled every N rounds, stored on the run, and shown in later briefings."""

from __future__ import annotations

import json
from pathlib import Path

from mutator.store.db import connect_readonly
from tests.conftest import run_cli


def test_meta_skill_every_two_rounds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "3", "--replicates", "1",
                     "--meta-skill-every", "2", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select meta_skill, cost_usd from runs"))))
    entries = json.loads(run["meta_skill"])
    assert [e["round"] for e in entries] == [2] and entries[0]["cost_usd"] > 0
    assert "Helped (kept): Add the `dates` rule" in entries[0]["lessons"]
    round3 = next((data / "workspaces").glob("*/round-3-0")) / "briefing.md"
    assert "## Lessons so far (meta skill)\n- 2 attempts so far" in round3.read_text()
    round2 = next((data / "workspaces").glob("*/round-2-0")) / "briefing.md"
    assert "Lessons so far" not in round2.read_text()
