"""A run stored before the finite-sample gate (1.4826·MAD, no scale figures in `gate`) resumes under the new gate:
its old verdicts and figures stay, new attempts carry the correction factor, and nothing crashes."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from mutator.scoring.mad import MAD_NORMAL_SCALE
from tests.conftest import run_cli

RUN = ("--suite", "clean-train", "--val", "clean-val", "--replicates", "1", "--seed", "3")
NO_SCREEN = {**os.environ, "SKILL_MUTATOR_SCREEN_TASKS": "0"}   # round 3's candidate reaches val's gate


def test_an_old_run_resumes_under_the_new_gate(tmp_path):
    data_dir = tmp_path / "data"
    first = run_cli(*RUN, "--rounds", "2", "--data-dir", str(data_dir), env=NO_SCREEN)
    assert first.returncode == 0, first.stderr[-3000:]
    db = sqlite3.connect(data_dir / "mutator.db")
    old = {}
    for attempt_id, gate in db.execute("select id, gate from attempts where gate is not null").fetchall():
        figures = json.loads(gate)
        for key in ("scale_method", "scale_factor", "pooling"):
            figures.pop(key)                                  # as the gate stored them before
        raw = sorted(abs(d - sorted(figures["deltas"].values())[len(figures["deltas"]) // 2])
                     for d in figures["deltas"].values())
        figures["s_r"] = MAD_NORMAL_SCALE * raw[len(raw) // 2] if raw else 0.0
        old[attempt_id] = figures
        db.execute("update attempts set gate = ? where id = ?", [json.dumps(figures), attempt_id])
    db.commit()
    db.close()
    assert old
    again = run_cli(*RUN, "--rounds", "3", "--data-dir", str(data_dir), env=NO_SCREEN)
    assert again.returncode == 0, again.stderr[-3000:]
    db = sqlite3.connect(data_dir / "mutator.db")
    found = {i: json.loads(g) for i, g in db.execute("select id, gate from attempts where gate is not null")}
    for attempt_id, figures in old.items():
        assert found[attempt_id] == figures                   # old figures untouched
    new = [g for i, g in found.items() if i not in old]
    assert new and all(g["scale_method"] in ("mad", "sd", "none") and g["pooling"] == "mean" for g in new)
    # the new attempt pooled the stored s_r of the old ones as they are: s = Σ(n_r−1)s_r / Σ(n_r−1)
    last = max(i for i in found if i not in old)
    (gate_s, gate_df) = db.execute("select gate_s, gate_df from attempts where id = ?", [last]).fetchone()
    comps = [(g["n"], g["s_r"]) for i, g in sorted(found.items()) if i <= last]
    assert gate_df == sum(n - 1 for n, _ in comps)
    assert gate_s == pytest.approx(sum((n - 1) * s for n, s in comps) / gate_df)
    db.close()
