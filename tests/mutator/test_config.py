"""config.json < environment < flags, and errors that name the key and where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cost import PricingError
from mutator.config import CONFIG_FILE, ConfigError, load_settings


def write_config(tmp_path: Path, **changes) -> Path:
    tree = json.loads(CONFIG_FILE.read_text())
    for dotted, value in changes.items():
        node = tree
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[part]
        node[last] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tree))
    return path


def test_precedence_file_env_flag(tmp_path: Path) -> None:
    path = write_config(tmp_path, replicates=5)
    assert load_settings(config_file=path, environ={}).replicates == 5
    assert load_settings(config_file=path, environ={"SKILL_MUTATOR_REPLICATES": "7"}).replicates == 7
    assert load_settings({"replicates": 9}, config_file=path,
                         environ={"SKILL_MUTATOR_REPLICATES": "7"}).replicates == 9
    assert load_settings(config_file=path, environ={"SKILL_MUTATOR_GATE_Z": "0"}).gate_z == 0.0


def test_paths_in_file_are_relative_to_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, dataDir="runs/x")
    assert load_settings(config_file=path, environ={}).data_dir == tmp_path / "runs" / "x"
    assert load_settings(config_file=path, environ={}).db_path == tmp_path / "runs" / "x" / "mutator.db"


@pytest.mark.parametrize("changes, source, message", [
    ({"replicates": 0}, "config.json", "'replicates' must be an integer >= 1, got 0"),
    ({"score__gateZ": -1}, "config.json", "'score.gateZ' must be a number >= 0, got -1.0"),
    ({"replicates": "three"}, "config.json", "'replicates' must be an integer >= 1, got 'three'"),
    ({"concurrency": True}, "config.json", "'concurrency' must be an integer >= 1"),
])
def test_bad_values_name_key_and_source(tmp_path: Path, changes: dict, source: str, message: str) -> None:
    path = write_config(tmp_path, **changes)
    with pytest.raises(ConfigError) as err:
        load_settings(config_file=path, environ={})
    assert source in str(err.value) and message in str(err.value)


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="environment SKILL_MUTATOR_ROUNDS: 'rounds' must be an integer >= 0"):
        load_settings(config_file=write_config(tmp_path), environ={"SKILL_MUTATOR_ROUNDS": "-2"})


def test_bad_flag_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="flag --gate-z: 'score.gateZ' must be a number >= 0"):
        load_settings({"gate_z": -0.5}, config_file=write_config(tmp_path), environ={})


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    path = write_config(tmp_path, replicate=3)
    with pytest.raises(ConfigError, match="unknown key 'replicate'; did you mean 'replicates'"):
        load_settings(config_file=path, environ={})


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{\n  "model": "x",\n  oops\n}')
    with pytest.raises(ConfigError, match=r"config.json:3: invalid JSON"):
        load_settings(config_file=path, environ={})


def test_missing_price_field(tmp_path: Path) -> None:
    path = write_config(tmp_path, pricing={"m": {"input": 1, "output": 2, "cacheWrite": 1}})
    with pytest.raises(PricingError, match=r"pricing.m.cacheRead: expected a non-negative number"):
        load_settings(config_file=path, environ={})


def test_evidence_replicates_and_the_tie_rule(tmp_path: Path) -> None:
    """evidenceReplicates 0 (or absent, in a config written before the key) = the run's replicates."""
    tree = json.loads(CONFIG_FILE.read_text())
    del tree["evidenceReplicates"], tree["score"]["tieRule"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(tree))
    settings = load_settings(config_file=old, environ={})
    assert (settings.evidence_replicates, settings.train_replicates, settings.tie_rule) == \
        (0, settings.replicates, "noAddedCost")
    one = load_settings(config_file=write_config(tmp_path, evidenceReplicates=1, score__tieRule="keep"), environ={})
    assert (one.train_replicates, one.tie_rule) == (1, "keep")
    with pytest.raises(ConfigError, match="'evidenceReplicates' must be an integer >= 0"):
        load_settings(config_file=write_config(tmp_path, evidenceReplicates=-1), environ={})
    with pytest.raises(ConfigError, match="'score.tieRule' must be noAddedCost"):
        load_settings(config_file=write_config(tmp_path, score__tieRule="often"), environ={})
