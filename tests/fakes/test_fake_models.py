"""The fake build agent takes the eval model into account: a thorough model (sonnet, opus) reads each skill
rule twice, so it rarely fumbles one but spends more steps; every other model reads as before. Deterministic
per cell seed."""

from __future__ import annotations

from fakes.csv_rules import READS_PER_RULE, load_rule_ops
from tests.fakes.test_fake_agent import ALL_OPS, make_cell, make_skill, run_agent


def test_rule_reads_depend_on_the_model(tmp_path) -> None:
    skill = make_skill(tmp_path, ["trim", "headers"])
    rules = skill / "rules.json"
    assert load_rule_ops(rules, "claude-haiku-4-5") == ["trim", "headers"]      # the default: as before
    assert load_rule_ops(rules, "some-other-model") == ["trim", "headers"]
    assert load_rule_ops(rules, "claude-sonnet-4-5") == ["trim", "trim", "headers", "headers"]
    assert set(READS_PER_RULE) == {"claude-sonnet-4-5", "claude-opus-4-5"}


def turns(events: list[dict]) -> int:
    return next(e for e in events if e["type"] == "result")["num_turns"]


def test_two_models_differ_and_each_is_deterministic_per_cell_seed(tmp_path) -> None:
    skill = make_skill(tmp_path, ALL_OPS)
    runs = {}
    for name, model in (("h1", "claude-haiku-4-5"), ("h2", "claude-haiku-4-5"), ("s1", "claude-sonnet-4-5"),
                        ("s2", "claude-sonnet-4-5")):
        cell = make_cell(tmp_path, name)
        proc, events = run_agent(cell, skill, seed=7, SM_MODEL=model)
        assert proc.returncode == 0, proc.stderr
        runs[name] = ((cell / "output.csv").read_text(), turns(events))
    assert runs["h1"] == runs["h2"] and runs["s1"] == runs["s2"]                 # same seed, same cell
    assert runs["s1"][1] == runs["h1"][1] + len(ALL_OPS)                         # one extra read per rule
