"""config.json < environment < flags, and errors that name the key and where it came from."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from eval.cost import PricingError
from mutator.config import CONFIG_FILE, KEYS, ConfigError, load_settings


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
    assert load_settings(config_file=path, environ={"SKILL_MUTATOR_GATE_Z": "0"}).score.gate_z == 0.0


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
    message = "environment SKILL_MUTATOR_ROUNDS: 'rounds' must be an integer >= 0"
    with pytest.raises(ConfigError, match=message):
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
    """evidenceReplicates 0 = the run's replicates; absent (a config written before the key) = the declared
    default, config.json's 1 (it was 0 in the code before issue 46, 1 in config.json)."""
    tree = json.loads(CONFIG_FILE.read_text())
    del tree["evidenceReplicates"], tree["score"]["tieRule"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(tree))
    settings = load_settings(config_file=old, environ={})
    assert (settings.evidence_replicates, settings.train_replicates, settings.score.tie_rule) == \
        (1, 1, "noAddedCost")
    zero = load_settings(config_file=write_config(tmp_path, evidenceReplicates=0), environ={})
    assert (zero.evidence_replicates, zero.train_replicates) == (0, zero.replicates)
    one = load_settings(config_file=write_config(tmp_path, evidenceReplicates=1, score__tieRule="keep"),
                        environ={})
    assert (one.train_replicates, one.score.tie_rule) == (1, "keep")
    with pytest.raises(ConfigError, match="'evidenceReplicates' must be an integer >= 0"):
        load_settings(config_file=write_config(tmp_path, evidenceReplicates=-1), environ={})
    with pytest.raises(ConfigError, match="'score.tieRule' must be noAddedCost"):
        load_settings(config_file=write_config(tmp_path, score__tieRule="often"), environ={})


# ---- issue 46: settings as sections; config.json and the declarations agree; run ids unchanged -------------

# every key's flat name (the flag's dest, SKILL_MUTATOR_<NAME>) and config path before the sections (old KEYS)
FLAT_NAMES = dict(pair.split("=") for pair in """
    skill_dir=skillDir with_skills=withSkills rounds=rounds replicates=replicates strategy=strategy
    strategy_opts=strategyOpts min_improvement=score.minImprovement gate_z=score.gateZ
    gate_method=score.gateMethod model_gate=score.modelGate seed=seed model=model
    mutator_model=mutatorModel max_turns=maxTurns concurrency=concurrency
    build_timeout_ms=watchdog.silenceMs build_heartbeat_ms=watchdog.heartbeatMs
    grader_timeout_ms=graderTimeoutMs cell_timeout_ms=cellTimeoutMs max_output_mb=maxOutputMb
    infra_retries=infraRetries max_failed_share=maxFailedShare propose_min_delta=proposeMinDelta
    propose_no_harm=proposeNoHarm seal_test=sealTest solve=solve solve_attempts=solveAttempts
    solve_min_score=solveMinScore meta_skill_every=metaSkillEvery confirm=confirm
    null_controls=nullControls data_dir=dataDir pass_env=passEnv executor=executor
    ray_address=rayAddress ray_timeout_s=rayTimeoutS sandbox=sandbox mutator_cmd=mutatorCmd
    w_cost=score.wCost w_steps=score.wSteps w_trigger=score.wTrigger val_query_warn=valQueryWarn
    critic_max_lines=critic.maxSkillLines critic_max_bytes=critic.maxSkillBytes
    critic_max_growth=critic.maxGrowth critic_min_growth_bytes=critic.minGrowthBytes
    cell_resources=cellResources tie_rule=score.tieRule keep_rule=score.keepRule evidence_replicates=evidenceReplicates
    sequential=sequential.waves sequential_early_z=sequential.earlyZ screen_tasks=screen.tasks
    screen_replicates=screen.replicates screen_z=screen.z suites=suites pricing=pricing
    breaker_infra_failures=breaker.infraFailures fake_noise=fakeNoise
""".split())


def lookup(tree: dict, dotted: str) -> object:
    node = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def test_every_key_keeps_its_flat_name_flag_and_variable() -> None:
    assert {key.attr: key.path for key in KEYS} == FLAT_NAMES
    for key in KEYS:
        assert key.env == "SKILL_MUTATOR_" + key.attr.upper()
        assert key.option == "--" + key.attr.replace("_", "-")
        assert key.path.split(".")[0] == key.section if key.section else "." not in key.path


def test_config_json_values_are_the_declared_defaults() -> None:
    """A key's declared default is what config.json says (evidenceReplicates 0 vs 1 and screen.tasks 0 vs 6
    disagreed before issue 46: config.json's values ran); a key with no default is given by config.json."""
    tree = json.loads(CONFIG_FILE.read_text())
    differ = {key.path: (lookup(tree, key.path), key.default) for key in KEYS
              if key.default is not None and lookup(tree, key.path) not in (None, key.default)}
    assert differ == {}
    assert [key.path for key in KEYS if key.default is None and lookup(tree, key.path) is None] == []


def test_a_key_is_read_from_its_section_by_flat_name() -> None:
    settings = load_settings({"gate_z": 2.0, "screen_tasks": 4, "sequential": False}, environ={})
    assert (settings.score.gate_z, settings.screen.tasks, settings.sequential.waves) == (2.0, 4, False)
    assert settings.value("gate_z") == 2.0
    assert settings.value("build_timeout_ms") == settings.watchdog.silence_ms
    assert {key.attr for key in KEYS} == set(FLAT_NAMES)
    assert settings.value("critic_max_lines") == settings.critic.max_lines
    with pytest.raises(TypeError, match="not a truth value"):
        bool(settings.screen)      # a section is no bool: `if settings.sequential:` unrewritten fails loudly


# the run ids below were computed on main 050b7df (before the sections) by this same code with the
# flat attributes (s.w_cost, s.build_timeout_ms, ...), loading the repository's config.json: they must
# not move
EVERY_SCORE_KEY = {"gate_z": 2.0, "w_trigger": 0.5, "model_gate": "each", "gate_method": "t",
                   "sequential": False, "screen_tasks": 0, "tie_rule": "keep", "evidence_replicates": 0,
                   "confirm": True, "null_controls": 1, "min_improvement": 0.01, "w_cost": 0.2, "w_steps": 0.0}
# the ids before score.keepRule's default became 'positive' are the same under --keep-rule lenient (old stores
# keep their ids); the default's ids are new. --confirm under keep rule positive re-checks a keep under that rule
# since main 6715848: a new id (run-708e4d207cdd before, the id its older era finds again)
DEMO_RUN_IDS = [({"keep_rule": "lenient"}, "run-0018ff19044f"),
                ({**EVERY_SCORE_KEY, "keep_rule": "lenient"}, "run-07646669200f"),
                ({}, "run-62763e0393b6"),
                (EVERY_SCORE_KEY, "run-ce627a9fb49b")]


@pytest.mark.parametrize("flags, run_id", DEMO_RUN_IDS, ids=["lenient", "every-score-key-changed-lenient", "config.json",
                                                                "every-score-key-changed"])
def test_a_demo_run_id_is_unchanged(flags: dict, run_id: str) -> None:
    from eval.cells import Contract
    from mutator.round.eras import configured, older
    from mutator.round.session import Agents, Suites, run_id_for, run_identity
    from mutator.scoring.score import Weights
    s = load_settings(flags, environ={})
    suites = Suites(*(SimpleNamespace(name=name, agent_hash=f"{name}-agent", content_hash=f"{name}-content",
                                      path=name) for name in ("clean-train", "clean-val")))
    agents = Agents(build_argv=(), build_id="fake@1", mutator_argv=(), mutator_id="fake-mutator@1")
    watchdog = s.watchdog
    contract = Contract(model=s.model, replicates=s.replicates, max_turns=s.max_turns, agent="fake@1",
                        silence_ms=watchdog.silence_ms, heartbeat_ms=watchdog.heartbeat_ms)
    weights = Weights(s.score.w_cost, s.score.w_steps, s.score.w_trigger)
    decisions = configured(s, weights)
    identity = run_identity(s, suites, agents, contract, "seed-hash", cheaper=decisions.identity())
    assert run_id_for(identity) == run_id
    if flags is EVERY_SCORE_KEY:   # the run made before --confirm applied the keep rule: its older era's id
        then = older(decisions)[0]
        assert then.confirm_rule == "lenient" and then.gating.keep_rule == "positive"
        assert run_id_for(run_identity(s, suites, agents, contract, "seed-hash",
                                       cheaper=then.identity())) == "run-708e4d207cdd"


@pytest.mark.parametrize(("changes", "environ", "says"), [
    ({"seed": 10**23}, {}, "'seed' is out of range, got 100000000000000000000000; give an integer, between "),
    ({"seed": 1e23}, {}, "'seed' must be an integer, got 1e+23"),
    ({}, {"SKILL_MUTATOR_ROUNDS": "99999999999999999999"}, "environment SKILL_MUTATOR_ROUNDS: 'rounds' is out of range"),
    ({"screen__tasks": -2**64}, {}, "'screen.tasks' is out of range"),
])
def test_an_integer_the_store_cannot_hold_is_refused(tmp_path: Path, changes: dict, environ: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_settings(config_file=write_config(tmp_path, **changes), environ=environ)


def test_the_highest_integer_the_store_holds_is_taken(tmp_path: Path) -> None:
    assert load_settings(config_file=write_config(tmp_path, seed=2**63 - 1), environ={}).seed == 2**63 - 1


@pytest.mark.parametrize("name", ["screen", "sequential", "critic", "score"])
def test_a_known_section_given_a_scalar_must_be_an_object(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match=f"'{name}' must be an object of its keys \\(") as err:
        load_settings(config_file=write_config(tmp_path, **{name: 6}), environ={})
    assert "unknown key" not in str(err.value) and "got 6" in str(err.value)
