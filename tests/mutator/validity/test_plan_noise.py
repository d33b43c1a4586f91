"""--plan before any cell (mutator/validity/plan.py): σ from the SkillsBench prior named as such (pass/fail
grader vs graded bound), what detecting 0.05 takes, and the warning when the run cannot see below 0.15, with
exact printed figures on constructed suites."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

from scipy import stats

from mutator.validity import calibration
from mutator.validity.plan import tasks_to_detect
from tests.conftest import run_cli

SUITES = Path(__file__).resolve().parents[3] / "suites"


def pass_fail_copy(name: str, tmp_path: Path) -> Path:
    """The demo suite, its suite.md declaring a pass/fail grader."""
    folder = tmp_path / name
    shutil.copytree(SUITES / name, folder)
    md = folder / "suite.md"
    md.write_text(md.read_text().replace("runner: script\n", "runner: script\ngrades: pass-fail\n", 1))
    return folder


def brute_tasks(effect, sigma, critical):
    n = 2
    while (critical(n - 1) + stats.t.ppf(0.8, n - 1)) * sigma / math.sqrt(n) > effect:
        n += 1
    return n


def test_a_pass_fail_suite_gets_the_data_prior_and_the_cost_of_seeing_005(tmp_path):
    val, test = pass_fail_copy("clean-val", tmp_path), pass_fail_copy("clean-test", tmp_path)
    out = run_cli("--plan", "--suite", "clean-train", "--val", str(val), "--holdout", str(test), "--rounds", "4",
                  "--replicates", "2", "--data-dir", str(tmp_path / "none"))
    assert out.returncode == 0, out.stderr
    v = calibration.fit(None).trial_var
    sigma = math.sqrt(2 * v / 2)                                  # √(2·E[p(1−p)]/R) at 2 replicates
    assert (f"noise σ (SD of a per-task composite delta) = {sigma:.4f} — from a prior for a pass/fail grader: "
            f"SkillsBench's trials, E[p(1−p)] = {v:.4f}") in out.stdout
    gate_n = brute_tasks(0.05, sigma, lambda df: stats.t.ppf(stats.norm.cdf(1.0), df))
    test_n = brute_tasks(0.05, sigma, lambda df: stats.t.ppf(0.975, df))
    # the demo prices an estimated cell at $0.06 (claude-haiku-4-5, 40k in + 4k out)
    assert (f"Detecting a change of 0.05 at 80% power, at σ {sigma:.4f} and 2 replicate(s): the gate needs "
            f"{gate_n} val tasks × 2 = {2 * gate_n} cells per candidate (≈ ${2 * gate_n * 0.06:.4f} of val a "
            f"round); the final test {test_n} test tasks × 2 = {2 * test_n} cells per genome "
            f"(≈ ${3 * 2 * test_n * 0.06:.4f} a test run)") in out.stdout
    # 8 val tasks at 2 replicates: the last round's gate MDE (df 4·7 = 28) is the best the run can see
    t28 = stats.t.ppf(stats.norm.cdf(1.0), 28)
    best = (t28 + stats.t.ppf(0.8, 28)) * sigma / math.sqrt(8)
    assert best > 0.15
    assert f"WARNING: this run cannot see a change smaller than 0.15: its smallest detectable change is {best:.4f}" \
        in out.stdout


def test_a_big_enough_suite_gets_no_warning_and_says_so_by_its_figures(tmp_path):
    out = run_cli("--plan", "--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test",
                  "--rounds", "4", "--replicates", "40", "--data-dir", str(tmp_path / "none"))
    assert out.returncode == 0, out.stderr
    assert "a stated conservative bound for a graded suite" in out.stdout
    assert "WARNING: this run cannot see" not in out.stdout and "Detecting a change of 0.05" in out.stdout


def test_tasks_to_detect_is_the_smallest_n():
    for sigma in (0.05, 0.2417, 0.4):
        crit = lambda df: stats.t.ppf(0.975, df)  # noqa: E731
        n = tasks_to_detect(0.05, sigma, crit)
        assert n == brute_tasks(0.05, sigma, crit)
