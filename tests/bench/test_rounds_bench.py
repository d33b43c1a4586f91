"""bench/rounds.py --count: each round's Python calls and SQLite steps are counted in the harness's process, and the
summary compares the medians of the first and the last cell-free rounds."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def rounds_bench():
    spec = importlib.util.spec_from_file_location("rounds_bench", ROOT / "bench" / "rounds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_summary_compares_the_medians_of_the_first_and_last_cell_free_rounds() -> None:
    records = [{"round": n, "self": 0.01, "children": 0.0, "staging": 0.0, "bytes": 0, "cells": 4 * (n % 5 == 0),
                "calls": 1000 + n, "steps": 500 + (n > 150) * 7} for n in range(1, 201)]
    found = rounds_bench().summary(records)
    quiet = [r for r in records if not r["cells"]]           # 160 cell-free rounds: buckets of 40
    assert found["bucket"] == 40
    assert (quiet[19]["round"], quiet[20]["round"], quiet[-21]["round"], quiet[-20]["round"]) == (24, 26, 174, 176)
    assert found["calls"] == (1025, 1175)                      # the middle two of each bucket of 40, averaged
    assert found["steps"] == (500, 507)


def test_count_mode_records_each_rounds_calls_and_steps(tmp_path: Path) -> None:
    out = tmp_path / "records.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "rounds.py"), "--child", str(ROOT), "--rounds", "2",
                    "--replicates", "1", "--out", str(out), "--data-dir", str(tmp_path / "data"), "--sandbox", "none",
                    "--count"], check=True, cwd=ROOT, capture_output=True)
    records = json.loads(out.read_text())
    assert [r["round"] for r in records] == [1, 2]
    # a round runs the mutator, the critic, the gate: thousands of calls and SQLite steps, never none
    assert all(r["calls"] > 1000 and r["steps"] > 1000 for r in records), records
