"""Health checks through the real Evaluator with the fake agents: baseline then drift, repeatable suites,
cancel by --max-seconds or a real SIGINT keeping partial results (and saying so), exit 6 on REGRESSED."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from eval.suite import load_suite
from mutator.after.health import HealthCheck
from mutator.config import load_settings
from mutator.round.progress import Progress
from sandbox import get_launcher
from tests.conftest import run_py, with_sigint

from .conftest import ROOT, SEED

SLOW = Path(__file__).with_name("slow_agent.py")


@pytest.fixture(autouse=True)
def pass_hang_tasks(monkeypatch) -> None:
    """The slow agent's HANG_TASKS reaches it the way a user's variable would: --pass-env (SM_PASS_ENV)."""
    monkeypatch.setenv("SM_PASS_ENV", "HANG_TASKS")


def checker(data: Path, *, max_seconds=None, parallel=8, budget_usd=None) -> HealthCheck:
    settings = load_settings({"data_dir": data, "replicates": 1}, environ={})
    return HealthCheck(settings, (sys.executable, str(SLOW)), "slow@1", get_launcher("none"), parallel=parallel,
                       progress=Progress(open(os.devnull, "w")), max_seconds=max_seconds, budget_usd=budget_usd)


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    target = tmp_path / "skills" / "csv-clean"
    shutil.copytree(SEED, target)
    return target


def val():
    return load_suite(ROOT / "suites" / "clean-val")


def test_baseline_then_compared_with_the_previous_check_of_the_same_fingerprint(tmp_path, skill, monkeypatch):
    monkeypatch.delenv("HANG_TASKS", raising=False)
    first = checker(tmp_path / "data").run(skill, [val()])
    assert first["status"] == "done" and not first["partial"] and first["band"] == "baseline"
    assert first["n_done"] == first["n_cells"] == 8 and 0 <= first["score"] <= 100
    assert [t["score"] for t in first["tasks"]] == sorted(t["score"] for t in first["tasks"])   # worst first
    assert first["cost_usd"] > 0
    second = checker(tmp_path / "data").run(skill, [val()])
    assert second["previous_id"] == first["id"] and second["previous_score"] == first["score"]
    assert second["band"] in ("unchanged", "improved", "slightly down", "declined", "REGRESSED")
    assert second["evaluation_ids"] != first["evaluation_ids"]   # fresh cells, not the cache
    other = checker(tmp_path / "data").run(skill, [val(), load_suite(ROOT / "suites" / "clean-test")])
    assert other["fingerprint"] != first["fingerprint"] and other["band"] == "baseline"
    assert other["n_cells"] == 16 and {t["task"].split("/")[0] for t in other["tasks"]} == {"clean-val", "clean-test"}


def test_max_seconds_keeps_the_scored_cells_and_says_it_is_partial(tmp_path, skill, monkeypatch):
    monkeypatch.delenv("HANG_TASKS", raising=False)
    baseline = checker(tmp_path / "data").run(skill, [val()])
    monkeypatch.setenv("HANG_TASKS", "payments-14,subscriptions-15")
    check = checker(tmp_path / "data", max_seconds=8).run(skill, [val()])
    assert check["status"] == "cancelled" and check["partial"] == 1
    assert check["n_done"] == 6 and check["n_cells"] == 8
    assert "Cancelled before completion (--max-seconds 8 reached): partial result kept" in check["summary"]
    assert "6 of 8 cells" in check["summary"]
    scored = {t["task"] for t in check["tasks"]}
    assert scored.isdisjoint({"clean-val/payments-14", "clean-val/subscriptions-15"}) and len(scored) == 6
    # compared on the tasks it scored, against the last complete check
    same = [t["score"] for t in baseline["tasks"] if t["task"] in scored]
    assert check["previous_id"] == baseline["id"]
    assert check["previous_score"] == pytest.approx(sum(same) / len(same))
    with sqlite3.connect(tmp_path / "data" / "mutator.db") as conn:
        kept = conn.execute("select count(*) from cells where evaluation_id in (select value from json_each(?))",
                            [check["evaluation_ids"]]).fetchone()[0]
    assert kept == 6
    # a partial check never becomes the baseline of the next one
    monkeypatch.delenv("HANG_TASKS")
    after = checker(tmp_path / "data").run(skill, [val()])
    assert after["previous_id"] == baseline["id"]


def test_budget_usd_caps_a_check_and_keeps_what_it_scored(tmp_path, skill, monkeypatch):
    # --budget-usd on a check: nothing measured yet, so a cell is priced at the stated prior (40,000 input + 4,000
    # output tokens at haiku: $0.06): under it not even the pilot starts (issue 49: never $0 for lack of a measure)
    monkeypatch.delenv("HANG_TASKS", raising=False)
    none = checker(tmp_path / "data", budget_usd=1e-9).run(skill, [val()])
    assert none["status"] == "stopped" and none["n_done"] == 0 and "budget reached" in none["reason"]
    with sqlite3.connect(tmp_path / "data" / "mutator.db") as conn:
        assert conn.execute("select count(*) from charges").fetchone()[0] == 0          # nothing was spent
    # at the prior: the pilot cell starts alone; the rest at its measured price c, never past the cap
    check = checker(tmp_path / "data", budget_usd=0.06).run(skill, [val()])
    assert "--budget-usd 0.06" in (check.get("reason") or "") or check["status"] == "done"
    with sqlite3.connect(tmp_path / "data" / "mutator.db") as conn:
        charged = conn.execute("select sum(usd), count(*), count(run_id), min(usd) from charges").fetchone()
    assert charged[:3] == (pytest.approx(check["cost_usd"]), check["n_done"], 0) and check["cost_usd"] > 0
    cell = charged[3]                                                   # every cell of the fake costs the same
    assert check["n_done"] == min(8, int(0.06 / cell + 1e-9)) and check["cost_usd"] <= 0.06 + 1e-12


@pytest.fixture
def sigint_handled():
    """Python's own SIGINT handler for a test that sends a real SIGINT: a test process started as a script's
    background job has SIGINT ignored (a shell without job control does that), so the signal would never arrive."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("a SIGINT handler can only be installed from the main thread, and this test runs off it")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_real_sigint_keeps_the_partial_result(tmp_path, skill, monkeypatch, sigint_handled):
    monkeypatch.setenv("HANG_TASKS", "orders-13")
    hc = checker(tmp_path / "data")
    timer = threading.Timer(8, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        check = hc.run(skill, [val()])
    finally:
        timer.cancel()
    assert check["status"] == "cancelled" and check["partial"] == 1 and check["n_done"] == 7
    assert check["band"] == "baseline"   # nothing complete to compare with
    assert "interrupted (Ctrl-C)" in check["summary"] and "7 of 8 cells" in check["summary"]


def test_cancelled_before_any_cell_finished_shows_no_score(tmp_path, skill, monkeypatch):
    monkeypatch.setenv("HANG_TASKS", "*")
    check = checker(tmp_path / "data", max_seconds=2).run(skill, [val()])
    assert check["score"] is None and check["band"] is None and check["n_done"] == 0 and check["partial"] == 1
    assert "no cell finished, so there is no score" in check["summary"]


def test_cli_exit_codes_regressed_and_max_seconds(tmp_path, skill):
    data = str(tmp_path / "data")
    args = ("--check", str(skill), "--suite", "clean-val", "--replicates", "1", "--data-dir", data)
    first = run_py(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "First health check" in first.stdout
    assert first.stderr.startswith("dry run (fake agents): nothing is spent. The fakes know only the demo's CSV rules")
    assert ": done — dry run (fake agents)" in first.stdout.splitlines()[0]
    with sqlite3.connect(tmp_path / "data" / "mutator.db") as conn:   # construct a much better last check
        conn.execute("update health_checks set score = 100")
    regressed = run_py(*args)
    assert regressed.returncode == 6, regressed.stdout + regressed.stderr[-2000:]
    assert "Health check REGRESSED" in regressed.stdout
    hung = run_py(*args, "--max-seconds", "2", env={**os.environ, "FAKE_AGENT_HANG": "1"})
    assert hung.returncode == 5, hung.stdout + hung.stderr[-2000:]
    assert "no cell finished, so there is no score" in hung.stdout
    capped = run_py(*args, "--budget-usd", "0.000001")
    assert capped.returncode == 3, capped.stdout + capped.stderr[-2000:]   # the budget's exit code
    assert ": stopped (PARTIAL)" in capped.stdout and "1/8 cells" in capped.stdout


def run_py_ignoring_sigint(*args: str, timeout: float, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(with_sigint([sys.executable, str(ROOT / "run.py"), *args], "ignore"), cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_max_seconds_is_honoured_when_sigint_is_ignored(tmp_path, skill):
    """A scheduled check started as a script's background job has SIGINT ignored: --max-seconds must still stop it
    (the event loop's own timeout), not run on until the watchdog kills every hung agent. The watchdog is set to
    30 s here so a deadline that depended on SIGINT fails by finishing "done" on timed-out cells, not by hanging."""
    hung = run_py_ignoring_sigint("--check", str(skill), "--suite", "clean-val", "--replicates", "1", "--data-dir",
                  str(tmp_path / "data"), "--max-seconds", "2", "--build-timeout-ms", "30000",
                  "--build-heartbeat-ms", "30000", env={**os.environ, "FAKE_AGENT_HANG": "1"},
                  timeout=300)
    assert hung.returncode == 5, hung.stdout + hung.stderr[-2000:]
    assert "Cancelled before completion (--max-seconds 2 reached)" in hung.stdout
    with sqlite3.connect(tmp_path / "data" / "mutator.db") as conn:
        status, n_done, summary = conn.execute("select status, n_done, summary from health_checks").fetchone()
        timed_out = conn.execute("select count(*) from cells where status = 'timeout'").fetchone()[0]
    assert (status, n_done, timed_out) == ("cancelled", 0, 0)   # no cell waited for the watchdog
    assert "no cell finished, so there is no score" in summary
    assert not list((tmp_path / "data" / "pids").glob("*"))   # every hung agent's group was killed and reaped


def test_check_refuses_a_folder_without_skill_md(tmp_path):
    done = run_py("--check", str(tmp_path), "--suite", "clean-val", "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 2 and "no SKILL.md" in done.stderr
