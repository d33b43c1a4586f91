"""score.modelGate 'each': a decisive loss on any eval model rejects, the models tested step-down by Holm; its stored
per-model figures re-derive; with the fakes, a change that helps one model and costs the other is kept by 'mean'
and rejected by 'each'."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats

from mutator.scoring import holm
from mutator.scoring.gate import compare, pooled, robust_scale
from mutator.scoring.score import Comparison, TaskFigures
from mutator.store.db import connect_readonly, loads
from tests.conftest import ROOT, run_cli


def figures(a: list[float], b: list[float]) -> tuple[dict, dict]:
    """Candidate and incumbent per 'task@model' with these deltas on models a and b (no cost or steps)."""
    deltas = {**{f"t{i}@a": d for i, d in enumerate(a)}, **{f"t{i}@b": d for i, d in enumerate(b)}}
    incumbent = {k: TaskFigures(k, 0.5, 0.0, 0.0, 0.5, 1) for k in deltas}
    return {k: TaskFigures(k, 0.5 + d, 0.0, 0.0, 0.5 + d, 1) for k, d in deltas.items()}, incumbent


PRIOR = [Comparison(101, 0.1)]   # 100 df of earlier noise at s_r 0.1: every model's s sits near 0.1


def test_the_holm_steps_z() -> None:
    # 1 − Φ(1) = 0.158655; over 2 models 0.0793276 each; Φ⁻¹(1 − 0.0793276) = 1.40961; over 3 0.0528852 each: 1.61750
    assert holm.step_z(1.0, 2) == pytest.approx(1.40961, abs=1e-5)
    assert holm.step_z(1.0, 3) == pytest.approx(1.61750, abs=1e-5)
    assert holm.step_z(1.0, 1) == 1.0 and holm.step_z(0.0, 2) == 0.0


@pytest.mark.parametrize(("a", "b", "mean_keep", "each_keep", "rejected_by", "steps"), [
    ([0.4, 0.5, 0.6, 0.7], [-0.1, -0.15, -0.2, -0.25], True, False, ["b"], 2),        # helps a, hurts b: mean keeps
    ([0.1, 0.05, 0.0, 0.15], [0.05, -0.05, 0.1, 0.0], True, True, [], 1),              # no loss anywhere
    ([0.04, -0.16, -0.06, -0.06], [-0.3, -0.4, -0.5, -0.6], False, False, ["b", "a"], 2),   # a falls at step 2
])
def test_each_rejects_a_decisive_loss_on_any_model_step_down(a, b, mean_keep, each_keep, rejected_by, steps) -> None:
    candidate, incumbent = figures(a, b)
    mean = holm.gate(candidate, incumbent, prior=PRIOR, min_improvement=0.0, gate_z=1.0, method="t")
    each = holm.gate(candidate, incumbent, prior=PRIOR, min_improvement=0.0, gate_z=1.0, method="t", model_gate="each")
    assert mean.keep is mean_keep and mean.models is None
    assert each.keep is each_keep and each.models["rejected_by"] == rejected_by and each.models["steps"] == steps
    assert each.models["mean_keep"] is mean_keep
    assert (each.delta, each.threshold) == (mean.delta, mean.threshold)    # the stored mean figures are unchanged
    assert each.to_json()["pooling"] == "each" and each.to_json()["model_gate"] == each.models


def test_a_model_falls_at_holms_second_step_only() -> None:
    # b: Δ −0.45 is a loss at step 1 (z 1.40961); a: Δ −0.06 keeps at z 1.40961 but not at step 2's z 1.0
    candidate, incumbent = figures([0.04, -0.16, -0.06, -0.06], [-0.3, -0.4, -0.5, -0.6])
    each = holm.gate(candidate, incumbent, prior=PRIOR, min_improvement=0.0, gate_z=1.0, method="t", model_gate="each")
    a = each.models["models"]["a"]
    s, df = pooled([*PRIOR, Comparison(4, robust_scale([0.04, -0.16, -0.06, -0.06]))])
    assert (a["step"], a["z"], df) == (2, 1.0, 103)
    t1 = stats.t.ppf(stats.norm.cdf(holm.step_z(1.0, 2)), df)
    assert -0.06 >= -t1 * s / 2                                        # kept at step 1: −0.06 ≥ −0.0707
    assert a["threshold"] == pytest.approx(-stats.t.ppf(stats.norm.cdf(1.0), df) * s / 2)   # −0.05026
    assert a["threshold"] == pytest.approx(-0.05026, abs=1e-4) and not a["keep"]


@pytest.mark.parametrize("method", ["t", "signflip"])
def test_the_stored_per_model_figures_re_derive_from_the_stored_deltas(method) -> None:
    candidate, incumbent = figures([0.4, 0.5, 0.6, 0.7], [-0.1, -0.15, -0.2, -0.25])
    stored = holm.gate(candidate, incumbent, prior=PRIOR, min_improvement=0.0, gate_z=1.0, method=method,
                       model_gate="each").to_json()
    for model, figures_ in stored["model_gate"]["models"].items():
        keys = [k for k in stored["deltas"] if k.endswith(f"@{model}")]
        again = compare({k: candidate[k] for k in keys}, {k: incumbent[k] for k in keys}, prior=PRIOR,
                        min_improvement=0.0, gate_z=figures_["z"], method=method, tie_rule="keep")
        assert (again.delta, again.threshold, again.keep) == (figures_["delta"], figures_["threshold"], figures_["keep"])
        assert math.isclose(sum(stored["deltas"][k] for k in keys) / len(keys), figures_["delta"])


def test_one_model_and_mean_are_the_plain_gate() -> None:
    one = {f"t{i}": TaskFigures(f"t{i}", 0.5 + d, 0.0, 0.0, 0.5 + d, 1) for i, d in enumerate([0.1, -0.2, 0.0])}
    base = {k: TaskFigures(k, 0.5, 0.0, 0.0, 0.5, 1) for k in one}
    plain = compare(one, base, prior=PRIOR, min_improvement=0.0, gate_z=1.0)
    assert holm.gate(one, base, prior=PRIOR, min_improvement=0.0, gate_z=1.0, model_gate="each") == plain
    with pytest.raises(ValueError, match="score.modelGate"):
        holm.gate(one, base, prior=PRIOR, min_improvement=0.0, gate_z=1.0, model_gate="any")


def test_an_early_win_under_each_needs_every_model_to_win() -> None:
    candidate, incumbent = figures([0.4, 0.5, 0.6, 0.7], [0.0, 0.01, -0.01, 0.0])
    mean = holm.gate(candidate, incumbent, prior=PRIOR, min_improvement=0.0, gate_z=2.0, method="t")
    each = holm.gate(candidate, incumbent, prior=PRIOR, min_improvement=0.0, gate_z=2.0, method="t", model_gate="each")
    assert holm.early(mean, 0.0) == "win" and each.keep
    assert holm.early(each, 0.0) is None                   # b is no win: run the next wave


MISREAD = Path(__file__).with_name("misread_agent.py")
SEEDS = range(12)   # with the fake's 8% skip chance, 12 seeds × 8 rule reads leave some rule skipped on the old agent


def run_misread(cell: Path, skill: Path, model: str, seed: int) -> tuple[str, list[str]]:
    """One cell of misread_agent.py: its output.csv and the tool commands of its stream."""
    stream = cell / "stream.jsonl"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SM_", "FAKE_"))},
           "SM_STREAM": str(stream), "SM_SKILL_DIR": str(skill), "SM_MODEL": model, "SM_CELL_SEED": str(seed)}
    done = subprocess.run([sys.executable, str(MISREAD)], cwd=cell, input="Clean input.csv into output.csv.",
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in stream.read_text(encoding="utf-8").splitlines()]
    commands = [part["input"]["command"] for e in events if e["type"] == "assistant"
                for part in e["message"]["content"] if part.get("type") == "tool_use"]
    return (cell / "output.csv").read_text(encoding="utf-8"), commands


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "claude-sonnet-4-5"])
def test_the_misread_agents_cells_do_not_depend_on_their_seed(tmp_path: Path, model: str) -> None:
    """The dry run below rests on this: a cell's output and steps are the same under every SM_CELL_SEED."""
    skill = tmp_path / "skill" / "csv-clean"
    shutil.copytree(ROOT / "suites" / "csv-clean", skill)
    ops = ["trim", "headers", "dates", "amounts", "booleans", "emails", "dedupe"]
    (skill / "rules.json").write_text(json.dumps([{"id": op, "op": op} for op in ops]), encoding="utf-8")
    fixture = ROOT / "suites" / "clean-val" / "fixtures" / "subscriptions-15" / "input.csv"
    cells = []
    for seed in SEEDS:
        cell = tmp_path / f"cell-{seed}"
        cell.mkdir()
        shutil.copy(fixture, cell / "input.csv")
        cells.append(run_misread(cell, skill, model, seed))
    assert all(cell == cells[0] for cell in cells), "a cell of misread_agent.py changed with its seed"
    assert any("--rule dates" in c for c in cells[0][1]) is (model == "claude-haiku-4-5")   # sonnet skips `dates`


def test_a_dry_run_keeps_by_the_mean_what_each_rejects(tmp_path: Path) -> None:
    """The fake sonnet cannot use the `dates` rule the first round adds (misread_agent.py); haiku gains.

    Constructed, not drawn: misread_agent.py never fumbles a rule, so every cell is fixed by the skill, the model
    and the task, whatever seed the evaluation key (the command line, this checkout's files) gives it (checked
    above). Then sonnet's eight val deltas are one and the same small cost (it reads a longer skill and does the
    same work): its s_r and SE are 0, so its line is min_improvement 0 whatever its z, t or sign-flip sample, and
    its Δ < 0 falls below it: 'each' rejects at Holm's first step. The mean's Δ is > 0 (haiku gains on the tasks
    with dates): kept whatever t·SE ≥ 0 the gate draws (keep unless Δ < 0 − t·SE), and by a rule that keeps
    Δ > 0 alike. One round, so no earlier comparison enters the pooled scale."""
    agent = MISREAD.relative_to(ROOT)   # the command line as typed in the checkout (run_cli runs from it)
    env = {**os.environ, "SKILL_MUTATOR_SCREEN_TASKS": "0"}   # the val gate decides (the screen would kill it first)
    found = {}
    for rule in ("mean", "each"):
        data = tmp_path / rule
        done = run_cli("--sandbox", "none", "--real", "--agent-cmd", f"python3 {agent}", "--mutator-cmd",
                       f"python3 {Path('fakes') / 'fake_mutator.py'}",
                       "--suite", "clean-train", "--val", "clean-val", "--rounds", "1", "--replicates", "2",
                       "--model", "claude-haiku-4-5,claude-sonnet-4-5", "--model-gate", rule, "--data-dir", str(data),
                       env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        db = connect_readonly(data / "mutator.db")
        found[rule] = dict(next(iter(db.query("select a.verdict, a.reason, a.gate, a.delta, r.model_gate, r.id from "
                                              "attempts a join runs r on r.id = a.run_id where a.round = 1"))))
    mean, each = found["mean"], found["each"]
    assert (mean["verdict"], each["verdict"]) == ("KEEP", "REJECT")
    assert (mean["model_gate"], each["model_gate"]) == ("mean", "each") and mean["id"] != each["id"]
    gate = loads(each["gate"])
    sonnet = [d for key, d in gate["deltas"].items() if key.endswith("@claude-sonnet-4-5")]
    assert len(sonnet) == 8 and max(sonnet) < 0 and max(sonnet) - min(sonnet) < 1e-12   # the construction
    assert mean["delta"] > 0 and loads(mean["gate"])["min_improvement"] == 0
    by_model = gate["by_model"]
    assert by_model["claude-sonnet-4-5"]["delta"] < 0 < by_model["claude-haiku-4-5"]["delta"]
    assert gate["model_gate"]["models"]["claude-sonnet-4-5"]["se"] == 0
    assert gate["model_gate"]["rejected_by"] == ["claude-sonnet-4-5"]
    assert "a decisive loss on claude-sonnet-4-5" in each["reason"]
