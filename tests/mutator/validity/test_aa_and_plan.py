"""A/A mode on the demo (fakes): what lands in the store, resume/extension, and --plan reading it back."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest
from scipy import stats

from mutator.scoring import signflip
from mutator.store.db import connect_readonly, loads
from mutator.validity import calibration
from tests.conftest import built_once, copy_store, run_cli

AA_ARGS = ("--aa", "3", "--suite", "clean-train", "--val", "clean-val", "--replicates", "2")
PLAN_ARGS = ("--plan", "--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "6")


@pytest.fixture(scope="session")
def aa_store(tmp_path_factory: pytest.TempPathFactory):
    """One A/A run, built once per test session and only read; a test that writes takes a copy_store."""
    def build(folder: Path) -> None:
        result = run_cli(*AA_ARGS, "--data-dir", str(folder / "data"))
        assert result.returncode == 0, result.stderr[-3000:]
        (folder / "stdout.txt").write_text(result.stdout)

    folder = built_once(tmp_path_factory, "aa-store", build)
    return folder / "data", subprocess.CompletedProcess(AA_ARGS, 0, (folder / "stdout.txt").read_text(), "")


def _rows(data_dir: Path, sql: str, params=()) -> list[dict]:
    return [dict(r) for r in connect_readonly(data_dir / "mutator.db").query(sql, params)]


def test_aa_run_is_its_own_kind_with_one_attempt_per_copy(aa_store) -> None:
    data_dir, result = aa_store
    (run,) = _rows(data_dir, "select * from runs")
    assert run["kind"] == "aa" and run["status"] == "finished" and run["rounds_done"] == 3
    assert run["id"].startswith("aa-") and run["val"] == "clean-val" and run["incumbent_hash"] == run["seed_hash"]
    attempts = _rows(data_dir, "select * from attempts order by round")
    assert [a["round"] for a in attempts] == [0, 1, 2, 3]
    assert attempts[0]["verdict"] == "SEED"
    assert {a["genome_hash"] for a in attempts} == {run["seed_hash"]}       # byte-identical copies
    evaluation_ids = [a["val_evaluation_id"] for a in attempts]
    assert len(set(evaluation_ids)) == 4                                       # ...each really evaluated
    bases = [loads(a["gate"])["aa"]["seed_evaluation_id"] for a in attempts[1:]]
    assert len(set(bases) | set(evaluation_ids)) == 7                          # each copy has its own seed re-run
    ids = evaluation_ids + bases
    salts = {e["id"]: json.loads(e["contract"])["salt"] for e in
             _rows(data_dir, f"select id, contract from evaluations where id in ({','.join('?' * 7)})", ids)}
    assert [salts[i] for i in evaluation_ids] == ["", "aa-1", "aa-2", "aa-3"]
    assert [salts[i] for i in bases] == ["aa-1-seed", "aa-2-seed", "aa-3-seed"]
    # val in waves (the loop's sequential gate): each copy and its seed re-run spend the cells of the waves used
    used = [loads(a["looks"])[-1]["cells"] for a in attempts[1:]]
    assert _rows(data_dir, "select count(*) as n from cells")[0]["n"] == 8 * 2 + 2 * sum(used)
    prior_weight, prior_df = 0.0, 0
    for copy in attempts[1:]:
        gate, last = loads(copy["gate"]), loads(copy["looks"])[-1]
        assert copy["verdict"] in ("KEEP", "REJECT") and (copy["verdict"] == "KEEP") == gate["keep"]
        assert copy["delta"] == pytest.approx(sum(gate["deltas"].values()) / 8)
        assert copy["gate_df"] == prior_df + 7                                  # pooled like a run's rounds
        z = 2.0 if last["decision"] else last["z"]
        assert gate["gate_z"] == pytest.approx(z)
        assert gate["t_student"] == pytest.approx(stats.t.ppf(stats.norm.cdf(z), copy["gate_df"]))
        widen = (2 / last["replicates"]) ** 0.5 if last["decision"] else 1.0
        if gate["flip"] is not None:    # the sign-flip critical value re-derives from the stored deltas and prior
            assert gate["method"] == "signflip"
            assert copy["gate_t"] == pytest.approx(signflip.critical(
                list(gate["deltas"].values()), prior_weight * widen, prior_df, stats.norm.sf(z)).t)
        if not last["decision"]:        # an early look is never pooled into a later gate
            prior_weight, prior_df = prior_weight + 7 * gate["s_r"], prior_df + 7
        assert copy["gate_se"] == pytest.approx(copy["gate_s"] / math.sqrt(8))
        assert gate["aa"]["false_improvement"] == (copy["delta"] > copy["gate_t"] * copy["gate_se"])
    out = result.stdout
    assert f"A/A run {run['id']}" in out and "vs 3 byte-identical copies" in out
    rejects = sum(a["verdict"] == "REJECT" for a in attempts[1:])
    assert f"false REJECT   {rejects:>3}/3" in out and "design 15.9% per side at gate_z 1" in out
    assert f"pooled robust s = {attempts[-1]['gate_s']:.4f} (df {attempts[-1]['gate_df']})" in out
    assert f"s/√8 = {attempts[-1]['gate_s'] / math.sqrt(8):.4f}" in out


def test_an_aa_run_measures_the_noise_gate_whatever_the_keep_rule(aa_store) -> None:
    """score.keepRule's default is 'positive', which rejects a null copy whose Δ ≤ 0 by construction. An A/A
    checks the noise gate against its design rate, so it applies the lenient gate: copy 1 (Δ −0.0046 above its
    threshold −0.0304) is KEEP, no gate stores keep_rule figures, and the A/A id does not name the rule."""
    data_dir, _ = aa_store
    (run,) = _rows(data_dir, "select id, config from runs")
    copies = _rows(data_dir, "select round, verdict, delta, gate_threshold, gate from attempts where round > 0 "
                             "order by round")
    assert [(c["round"], c["verdict"], round(c["delta"], 4), round(c["gate_threshold"], 4)) for c in copies][0] \
        == (1, "KEEP", -0.0046, -0.0304)
    assert all("keep_rule" not in loads(c["gate"]) for c in copies)
    assert all((c["verdict"] == "KEEP") == (c["delta"] >= c["gate_threshold"]) for c in copies)
    assert "keep_rule" not in loads(run["config"])


def test_aa_rerun_resumes_from_the_cache(aa_store, tmp_path: Path) -> None:
    data_dir = copy_store(aa_store[0], tmp_path / "data")
    again = run_cli(*AA_ARGS, "--data-dir", str(data_dir))
    assert again.returncode == 0 and "0 cells run by this command" in again.stdout
    assert len(_rows(data_dir, "select * from runs")) == 1


def test_an_aa_run_names_its_tie_rule_so_one_from_before_it_is_another_id_with_every_cell_cached(aa_store,
                                                                                                  tmp_path: Path) -> None:
    """score.tieRule is part of an A/A run's id (its verdicts depend on it) when it is not 'keep', the one code before
    the tie rule used, which wrote no such key: an A/A store from then is a different run, re-run from the cache."""
    data_dir = copy_store(aa_store[0], tmp_path / "data")
    before = _rows(data_dir, "select count(*) as n from cells")[0]["n"]
    old = run_cli(*AA_ARGS, "--data-dir", str(data_dir), env={**os.environ, "SKILL_MUTATOR_TIE_RULE": "keep"})
    assert old.returncode == 0 and "0 cells run by this command" in old.stdout, old.stderr[-2000:]
    runs = {r["id"]: json.loads(r["config"]) for r in _rows(data_dir, "select id, config from runs")}
    assert len(runs) == 2 and _rows(data_dir, "select count(*) as n from cells")[0]["n"] == before
    assert sorted(c.get("tie_rule", "absent") for c in runs.values()) == ["absent", "noAddedCost"]
    for copy in _rows(data_dir, "select run_id, gate from attempts where round > 0"):
        gate = loads(copy["gate"])   # the rule at the last look; an early look never applies it
        assert gate["tie"]["rule"] == ("keep" if "early_look" in gate else runs[copy["run_id"]].get("tie_rule", "keep"))


def test_plan_uses_the_aa_noise_and_rescales_replicates(aa_store, tmp_path: Path) -> None:
    data_dir = copy_store(aa_store[0], tmp_path / "data")
    s = _rows(data_dir, "select gate_s from attempts where round = 3")[0]["gate_s"]
    (run,) = _rows(data_dir, "select id from runs")
    result = run_cli(*PLAN_ARGS, "--replicates", "4", "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    sigma = s * math.sqrt(2 / 4)
    assert f"noise σ (SD of a per-task composite delta) = {sigma:.4f} — from A/A run {run['id']}" in result.stdout
    assert "rescaled ×√(2/4)" in result.stdout
    # one round's gate at round 1: df 7, t = t.ppf(Φ(1), 7); MDE = (t + t.ppf(0.8, 7))·σ/√8
    t7 = stats.t.ppf(stats.norm.cdf(1.0), 7)
    assert f"{(t7 + stats.t.ppf(0.8, 7)) * sigma / math.sqrt(8):.4f} at round 1 (df 7)" in result.stdout
    # final test: 8 tasks, two-sided 5%: (t.ppf(.975, 7) + t.ppf(.8, 7))·σ/√8
    test_mde = (stats.t.ppf(0.975, 7) + stats.t.ppf(0.8, 7)) * sigma / math.sqrt(8)
    assert f"8 tasks): {test_mde:.4f}" in result.stdout
    assert "measured: the seed's" in result.stdout                            # the A/A evaluated the seed


def test_plan_without_a_store_states_its_defaults(tmp_path: Path) -> None:
    result = run_cli(*PLAN_ARGS, "--data-dir", str(tmp_path / "none"))
    assert result.returncode == 0, result.stderr
    assert "a stated conservative bound for a graded suite" in result.stdout
    assert "estimated: 40,000 input" in result.stdout
    sigma = math.sqrt(2 * calibration.fit(None).trial_var / 3)       # the prior at config.json's 3 replicates
    mde_round1 = re.search(r"gate_z 1\): ([0-9.]+) at round 1", result.stdout).group(1)
    t7 = stats.t.ppf(stats.norm.cdf(1.0), 7)
    assert float(mde_round1) == pytest.approx((t7 + stats.t.ppf(0.8, 7)) * sigma / math.sqrt(8), abs=1e-4)
    assert not (tmp_path / "none" / "mutator.db").exists()                   # planning never creates a store


def test_plan_prices_the_screen_and_a_null_changes_expected_waves(tmp_path: Path) -> None:
    """The expected round: every candidate screened, then val at a null change's expected waves (normal theory)."""
    out = run_cli(*PLAN_ARGS, "--data-dir", str(tmp_path / "none"), env={**os.environ, "SKILL_MUTATOR_SCREEN_TASKS": "6"})
    assert out.returncode == 0, out.stderr
    text = out.stdout

    def figure(pattern: str) -> float:
        return float(re.search(pattern, text).group(1))
    cell, mutator = figure(r"a cell ≈ \$([0-9.]+)"), figure(r"a mutator call ≈ \$([0-9.]+)")
    val_cells, train_cells = figure(r"estimated ([0-9.]+) of \d+ val cells for a null"), figure(r"train evaluation of (\d+) cells")
    screen = figure(r"the train screen: (\d+) cells per candidate")
    upper, expected = figure(r"per round ≤ \$([0-9.]+)"), figure(r"per round ≈ \$([0-9.]+) expected")
    assert screen == 6 and expected < upper
    assert expected == pytest.approx((val_cells + screen + train_cells) * cell + mutator, abs=0.06 * cell + 1e-4)
