"""`--fake-noise realistic` (issue 47 item 6): a dry run as noisy as a real agent. Off, the demo's fakes and
ids are exactly as before; on, each cell is a pass/fail trial the suite's own grader scores, per-task success
drawn from SkillsBench's fitted prior, and the loop, --plan and --aa run on it."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import noisy_agent
from fakes.csv_rules import CANONICAL_ORDER
from mutator.cli.agents import fake_agents
from mutator.config import ROOT, load_settings
from mutator.store.db import connect_readonly, loads
from mutator.validity import calibration, rehearsal
from tests.conftest import run_cli

VAL = ROOT / "suites" / "clean-val"
LOOP = ("--suite", "clean-train", "--val", "clean-val")


def rows(data_dir: Path, sql: str, params=()) -> list[dict]:
    return [dict(r) for r in connect_readonly(data_dir / "mutator.db").query(sql, params)]


# ---- off: nothing moves ------------------------------------------------------------------------------------
def test_noise_off_is_the_default_and_keeps_the_demos_agents_and_ids_exactly():
    assert load_settings({}).fake_noise == "off"
    digest = hashlib.sha256((ROOT / "fakes" / "fake_agent.py").read_bytes()).hexdigest()[:10]
    for agents in (fake_agents(), fake_agents(None, "off")):
        assert agents.build_argv == (sys.executable, "-S", str(ROOT / "fakes" / "fake_agent.py"))
        assert agents.build_id == f"fake@{digest}" == agents.solve_id
        assert agents.launch == {"real": False}
    noisy = fake_agents(None, "realistic")
    assert noisy.build_argv[:3] == (sys.executable, "-S", str(ROOT / "fakes" / "noisy_agent.py"))
    assert noisy.build_argv[3:] == rehearsal.realistic().argv()
    assert noisy.build_id.startswith("fake@") and noisy.build_id != f"fake@{digest}"   # dry: priced as one
    assert noisy.solve_argv == fake_agents().solve_argv         # the solve phase stays noiseless
    assert noisy.launch == {"real": False, "fake_noise": "realistic"}


def test_a_store_made_without_noise_resumes_with_0_cells_when_off_is_said_outright(tmp_path):
    args = (*LOOP, "--rounds", "1", "--replicates", "1", "--data-dir", str(tmp_path / "data"))
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr[-3000:]
    again = run_cli(*args, "--fake-noise", "off")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 cells run by this command" in again.stdout
    assert "fake-noise" not in again.stderr


# ---- the model: fitted, and the noise it makes ---------------------------------------------------------------
def test_the_parameters_are_fitted_from_skillsbench_not_copied():
    params, bare, skilled = rehearsal.realistic(), calibration.fit("No Skills"), calibration.fit("With Skills")
    assert (params.alpha, params.beta) == (round(bare.alpha, 4), round(bare.beta, 4))
    # a skill closing the whole gap moves the prior's mean pass rate to the With Skills rows' mean
    assert rehearsal.mean_after_lift(bare, params.lift) == pytest.approx(skilled.mean, abs=1e-3)
    assert params.lift > 0


def test_per_cell_sd_over_many_tasks_is_the_priors_and_stable():
    """2,000 task identities × 4 cells at gain 0 (a bare agent): the pooled within-task variance estimates
    E[p(1-p)] of the fitted Beta. Each task's unbiased variance lies in [0, 1/3], so its SD is at most
    sqrt(E[p(1-p)]/3) and the mean of 2,000 is within 4 of those SEs of the prior's value (not a lucky draw:
    the seeds are fixed, and the bound holds for any)."""
    params = rehearsal.realistic()
    prior = calibration.BetaFit(params.alpha, params.beta)
    tasks, cells = 2000, 4

    def pooled() -> tuple[float, float]:
        variances, means = [], []
        for t in range(tasks):
            p = noisy_agent.task_p(f"task {t}".encode(), params.alpha, params.beta)
            outcomes = [float(noisy_agent.passes(f"{t}:{r}", noisy_agent.shifted(p, params.lift, 0.0)))
                        for r in range(cells)]
            variances.append(statistics.variance(outcomes))
            means.append(p)
        return statistics.fmean(variances), statistics.fmean(means)

    var, mean_p = pooled()
    se = math.sqrt(prior.trial_var / 3 / tasks)
    assert abs(var - prior.trial_var) < 4 * se, (var, prior.trial_var, se)
    assert math.sqrt(var) >= 0.25                  # the "realistic": per-cell SD of 0.25 or more
    assert abs(mean_p - prior.mean) < 4 * math.sqrt(prior.mean * (1 - prior.mean) / tasks)
    assert pooled() == (var, mean_p)               # deterministic: seeded by task identity and cell only


def test_the_skills_rules_shift_the_logit_the_expert_closes_the_gap_titlecase_opens_it():
    rows = [["Name ", "Order Date", "Amount"], [" ann lee", "03/04/2024", "$1,200"], ["bob", "2024-01-02", "5"]]
    expert = [op for op in CANONICAL_ORDER if op != "titlecase"]
    assert noisy_agent.gain(rows, expert) == pytest.approx(1.0)
    assert noisy_agent.gain(rows, []) == 0.0
    assert 0 < noisy_agent.gain(rows, ["trim", "headers"]) < noisy_agent.gain(rows, ["trim", "headers", "dates"])
    assert noisy_agent.gain(rows, [*expert, "titlecase"]) < 1.0
    assert noisy_agent.shifted(0.3, 2.0, 0.0) == pytest.approx(0.3)
    assert noisy_agent.shifted(0.3, 2.0, 1.0) > noisy_agent.shifted(0.3, 2.0, 0.5) > 0.3


# ---- the agent as a cell runs it, scored by the suite's own grader ------------------------------------------
def grade(cell: Path, task_id: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, str(VAL / "run-eval.py"), str(cell), task_id], cwd=VAL,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_each_cell_is_a_pass_or_a_fail_the_real_grader_scores_1_or_0(tmp_path):
    task = json.loads((VAL / "tasks.jsonl").read_text().splitlines()[0])
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "FAKE_"))}
    seen = set()
    for seed in range(24):
        cell = tmp_path / f"cell{seed}"
        shutil.copytree(VAL / "fixtures" / task["id"], cell)
        skill = cell / ".claude" / "skills" / "csv-clean"
        shutil.copytree(ROOT / "suites" / "csv-clean", skill)
        done = subprocess.run([sys.executable, "-S", str(ROOT / "fakes" / "noisy_agent.py"),
                               "--alpha", "1", "--beta", "1", "--lift", "0"], cwd=cell, input=task["prompt"],
                              text=True, capture_output=True, timeout=60,
                              env={**clean, "SM_CELL_SEED": str(seed), "SM_SKILL_DIR": str(skill),
                                   "SM_STREAM": str(cell / "stream.jsonl")})
        assert done.returncode == 0, done.stderr
        scores = set(grade(cell, task["id"]).values())
        assert scores in ({1.0}, {0.0}), scores
        seen |= scores
        assert '"subtype": "success"' in (cell / "stream.jsonl").read_text()   # fake_agent's turns, as today
    assert seen == {0.0, 1.0}                      # p = the task's Beta(1, 1) draw: both outcomes over 24 cells


# ---- the commands, rehearsed ------------------------------------------------------------------------------
def test_a_rehearsal_runs_the_loop_on_pass_fail_cells_and_its_test_run_stays_noisy(tmp_path):
    data = tmp_path / "data"
    done = run_cli(*LOOP, "--holdout", "clean-test", "--rounds", "2", "--replicates", "2", "--fake-noise",
                   "realistic", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--fake-noise realistic" in done.stderr and "status finished" in done.stdout
    (run,) = rows(data, "select id, agents from runs")
    assert loads(run["agents"]) == {"real": False, "fake_noise": "realistic"}
    agent = fake_agents(None, "realistic").build_id
    val = rows(data, "select c.score, e.contract from cells c join evaluations e on e.id = c.evaluation_id "
                     "where e.suite = 'clean-val'")
    assert val and {c["score"] for c in val} <= {0.0, 1.0}
    assert {loads(c["contract"])["agent"] for c in val} == {agent}
    tested = run_cli("--test-run", run["id"], "--data-dir", str(data))
    assert tested.returncode == 0, tested.stderr[-3000:]
    test_cells = rows(data, "select c.score, e.contract from cells c join evaluations e "
                            "on e.id = c.evaluation_id where e.suite = 'clean-test'")
    assert test_cells and {loads(c["contract"])["agent"] for c in test_cells} == {agent}


def test_plan_and_aa_rehearse_with_noise(tmp_path):
    data = tmp_path / "data"
    plan = run_cli("--plan", *LOOP, "--fake-noise", "realistic", "--data-dir", str(data))
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "--fake-noise realistic" in plan.stderr and "Cost:" in plan.stdout
    aa = run_cli("--aa", "2", *LOOP, "--replicates", "2", "--fake-noise", "realistic", "--data-dir", str(data))
    assert aa.returncode == 0, aa.stderr[-3000:]
    (run,) = rows(data, "select kind, status from runs")
    assert run == {"kind": "aa", "status": "finished"}
    scores = rows(data, "select c.score from cells c join evaluations e on e.id = c.evaluation_id "
                        "where e.suite = 'clean-val'")
    assert scores and {s["score"] for s in scores} <= {0.0, 1.0}
    # a dry plan reads the noise its own fake measured: the rehearsal's A/A, never the other fake's
    noisy = run_cli("--plan", *LOOP, "--fake-noise", "realistic", "--data-dir", str(data))
    quiet = run_cli("--plan", *LOOP, "--data-dir", str(data))
    assert noisy.returncode == quiet.returncode == 0, noisy.stderr[-2000:] + quiet.stderr[-2000:]
    assert "nothing measured" in plan.stdout and "from A/A run aa-" in noisy.stdout
    assert "nothing measured" in quiet.stdout and "from A/A run" not in quiet.stdout


def test_noise_is_for_the_fakes_only(tmp_path):
    done = run_cli("--plan", *LOOP, "--real", "--fake-noise", "realistic", "--data-dir", str(tmp_path / "d"))
    assert done.returncode == 2 and "drop --fake-noise or --real" in done.stderr
