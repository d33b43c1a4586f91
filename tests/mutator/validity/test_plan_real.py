"""`--plan --real` in a store that holds only dry runs: the fakes' calls never price a real plan."""

from __future__ import annotations

import os
from pathlib import Path

from eval.cost import parse_pricing, price_for, usd
from mutator.validity.plan import JUDGE_TOKENS, MUTATOR_TOKENS
from tests.conftest import copy_store, run_cli

PLAN = ("--plan", "--suite", "clean-train", "--val", "clean-val", "--rounds", "6")
OPUS = parse_pricing({"o": {"input": 5, "output": 25, "cacheWrite": 6.25, "cacheRead": 0.5}})["o"]


def real_env() -> dict:
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SM_"))},
            "ANTHROPIC_API_KEY": "sk-ant-plan-only"}


def test_a_real_plan_prices_the_mutator_from_config_not_from_fake_calls(demo_store, tmp_path: Path) -> None:
    data = copy_store(demo_store[0], tmp_path / "data")
    dry = run_cli(*PLAN, "--data-dir", str(data))
    assert dry.returncode == 0, dry.stderr
    assert "measured: mean of 6 dry-run (fake) mutator calls in the store" in dry.stdout   # a dry plan may use them
    real = run_cli(*PLAN, "--real", "--agent", "anthropic", "--data-dir", str(data), env=real_env())
    assert real.returncode == 0, real.stderr
    expected = usd(OPUS, MUTATOR_TOKENS)
    assert f"a mutator call ≈ ${expected:.4f} (estimated: 80,000 input + 8,000 output tokens per call at " \
           "claude-opus-4-5 prices)" in real.stdout
    assert "measured" not in real.stdout.split("Cost:")[1].split("per round")[0]   # nor the cells from fake ones
    assert "a dry run's fakes never price a real plan" in real.stdout


def test_a_judge_suite_adds_its_judge_calls_to_the_plan(tmp_path: Path) -> None:
    suite = tmp_path / "clean-val"
    suite.mkdir()
    src = Path(__file__).resolve().parents[3] / "suites" / "clean-val"
    for item in src.iterdir():
        target = suite / item.name
        target.symlink_to(item, target_is_directory=item.is_dir())
    (suite / "suite.md").unlink()
    (suite / "suite.md").write_text((src / "suite.md").read_text().replace("runner: script", "runner: judge"))
    plan = run_cli("--plan", "--suite", "clean-train", "--val", str(suite), "--rounds", "1", "--data-dir",
                   str(tmp_path / "none"))
    assert plan.returncode == 0, plan.stderr
    haiku = price_for(parse_pricing({"claude-haiku-4-5": {"input": 1, "output": 5, "cacheWrite": 1.25,
                                                          "cacheRead": 0.1}}), "claude-haiku-4-5")
    assert f"the LLM judge grades clean-val: ≈ ${usd(haiku, JUDGE_TOKENS):.5f} a cell (estimated" in plan.stdout
