"""The Student-t gate warns when it is chosen: at a run's start and in --plan (mutator/scoring/gate.py)."""

from __future__ import annotations

from mutator.scoring.gate import method_warning
from tests.conftest import run_cli


def test_only_the_student_t_gate_warns():
    assert method_warning("signflip", 1.0) is None and method_warning("t", 0.0) is None
    assert "rejects 18-22% of null changes at gateZ 1 against the design 15.9%" in method_warning("t", 1.0)


def test_plan_and_a_run_start_say_it(tmp_path):
    args = ("--suite", "clean-train", "--val", "clean-val", "--gate-method", "t", "--data-dir", str(tmp_path / "d"))
    plan = run_cli("--plan", *args, "--rounds", "2")
    assert plan.returncode == 0, plan.stderr
    assert "warning: --gate-method t: the Student-t gate is exact only for normal deltas" in plan.stdout
    run = run_cli(*args, "--rounds", "1", "--replicates", "1")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "warning: --gate-method t: the Student-t gate" in run.stdout + run.stderr
    quiet = run_cli("--plan", "--suite", "clean-train", "--val", "clean-val", "--data-dir", str(tmp_path / "e"))
    assert "--gate-method t:" not in quiet.stdout
