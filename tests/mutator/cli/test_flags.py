"""Flags that are settings are made from their config keys: each flagged key has one flag with its help, and a
value typed on the command line reaches Settings through the same key (config.json < environment < flag)."""

from __future__ import annotations

import json

import pytest

from mutator.cli.flags import FLAG_ATTRS, parser
from mutator.cli.main import main
from mutator.config import KEYS, load_settings
from tests.conftest import ROOT

FLAGGED = [key for key in KEYS if key.help is not None]
CONFIG = json.loads((ROOT / "config.json").read_text())


def typed(key, tmp_path):
    """A valid value for the key other than config.json's, as typed and as Settings holds it."""
    special = {"strategy": ("branching", "branching"), "model": ("m1,m2", "m1,m2"),
               "mutator_model": ("m3", "m3"), "sandbox": ("none", "none"), "gate_method": ("t", "t"), "keep_rule": ("eb", "eb"),
               "model_gate": ("each", "each"), "executor": ("ray", "ray"),
               "ray_address": ("auto", "auto"), "strategy_opts": ('{"width": 2}', {"width": 2}),
               "max_failed_share": ("0.5", 0.5), "solve_min_score": ("0.5", 0.5), "null_controls": ("2", 2),
               "with_skills": ("other-skills", "other-skills"), "fake_noise": ("realistic", "realistic")}
    if key.attr in special:
        return [key.option, special[key.attr][0]], special[key.attr][1]
    if key.kind is int:
        return [key.option, "7"], 7
    if key.kind is float:
        return [key.option, "0.75"], 0.75
    if key.kind.__name__ == "PosixPath" or key.attr.endswith("_dir"):
        return [key.option, str(tmp_path)], tmp_path
    if key.kind is list:
        return [key.option, "A_NAME", key.option, "B_NAME"], ["A_NAME", "B_NAME"]
    if key.kind is bool:
        return [key.option], True
    if key.attr == "solve":
        return ["--solve"], "on"
    raise AssertionError(f"no sample value for {key.attr}")


def test_every_flagged_key_has_one_flag_with_its_help():
    actions = {action.dest: action for action in parser()._actions}
    for key in FLAGGED:
        assert actions[key.attr].option_strings[0] == key.option and actions[key.attr].help == key.help
    assert set(FLAG_ATTRS) == {key.attr for key in FLAGGED}
    assert len(FLAGGED) == 40      # every flag that was a setting before keys made them, --ray-timeout-s,
    # --model-gate, --seal-test, --propose-no-harm, --with-skills, --null-controls, --keep-rule,
    # --breaker-infra-failures and --fake-noise


@pytest.mark.parametrize("key", FLAGGED, ids=lambda key: key.attr)
def test_a_typed_flag_reaches_settings_through_its_key(key, tmp_path):
    argv, expected = typed(key, tmp_path)
    args = parser().parse_args(argv)
    if key.attr == "solve":
        args.solve = "on" if args.solve else "off"      # as cli/main.py does
    settings = load_settings({attr: getattr(args, attr) for attr in FLAG_ATTRS}, environ={})
    assert settings.value(key.attr) == expected
    assert load_settings({}, environ={}).value(key.attr) != expected   # config.json says otherwise


def test_a_bad_flag_value_names_the_flag_and_the_rule(capsys):
    assert main(["--infra-retries", "-1", "--lint", str(ROOT / "suites" / "csv-clean")]) == 2
    assert capsys.readouterr().err == ("error: flag --infra-retries: 'infraRetries' must be an integer >= 0, "
                                       "got -1\n")


@pytest.mark.parametrize("flag", ["--rounds", "--seed", "--accept", "--aa", "--port", "--parallel"])
def test_an_integer_flag_out_of_the_stores_range_exits_2_naming_it(flag: str) -> None:
    from tests.conftest import run_py
    done = run_py(flag, "99999999999999999999")
    assert done.returncode == 2, done.stderr
    assert f"argument {flag}: 99999999999999999999 is out of range: give an integer between" in done.stderr
    assert "Traceback" not in done.stderr
