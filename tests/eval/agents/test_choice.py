"""Which backend runs the build agent and the mutator, and setup errors that name what the user typed."""

from __future__ import annotations

import sys

import pytest

from eval.agents import AgentSetupError
from eval.agents.choice import backend_for, choose

PY = sys.executable


@pytest.mark.parametrize("flags, build, mutator", [
    ({}, ("anthropic", ""), ("anthropic", "")),
    ({"agent": "claude-cli"}, ("claude-cli", ""), ("claude-cli", "")),
    ({"agent_cmd": "a.py"}, ("command", "a.py"), ("anthropic", "")),
    ({"agent": "command", "agent_cmd": "a.py"}, ("command", "a.py"), ("anthropic", "")),
    ({"agent_cmd": "a.py", "mutator_cmd": "m.py"}, ("command", "a.py"), ("command", "m.py")),
    ({"mutator_cmd": "m.py"}, ("anthropic", ""), ("command", "m.py")),
    ({"agent": "claude-cli", "mutator_agent": "anthropic"}, ("claude-cli", ""), ("anthropic", "")),
])
def test_choices(flags: dict, build: tuple, mutator: tuple) -> None:
    found = choose(**{"agent": None, "agent_cmd": None, "mutator_agent": None, "mutator_cmd": None, **flags})
    assert [(c.backend, c.command) for c in found] == [build, mutator]
    assert [c.can_solve for c in found][1] == (mutator[0] != "command")


@pytest.mark.parametrize("flags, says", [
    ({"agent": "anthropic", "agent_cmd": "a.py"}, "--agent-cmd runs your own build agent, but --agent anthropic"),
    ({"mutator_agent": "claude-cli", "mutator_cmd": "m.py"}, "--mutator-cmd runs your own mutator, but "
                                                            "--mutator-agent claude-cli"),
])
def test_conflicting_flags_are_named(flags: dict, says: str) -> None:
    with pytest.raises(AgentSetupError, match=says):
        choose(**{"agent": None, "agent_cmd": None, "mutator_agent": None, "mutator_cmd": None, **flags})


def check(flags: dict, environ: dict) -> str:
    build, mutator = choose(**{"agent": None, "agent_cmd": None, "mutator_agent": None, "mutator_cmd": None, **flags})
    with pytest.raises(AgentSetupError) as err:
        for choice in (build, mutator):
            backend_for(choice, config_file=None, environ=environ)
    return str(err.value)


def test_a_missing_key_names_the_default_that_applied_not_a_flag_never_typed() -> None:
    said = check({"agent_cmd": f"{PY} a.py"}, {"PATH": ""})
    assert said.startswith("the mutator (the default mutator --mutator-agent anthropic")
    assert "pass --mutator-cmd CMD for your own" in said and "ANTHROPIC_API_KEY" in said
    said = check({}, {"PATH": ""})
    assert said.startswith("the build agent (the default build agent --agent anthropic")


def test_command_errors_name_the_mutator_flag() -> None:
    said = check({"mutator_agent": "command"}, {"ANTHROPIC_API_KEY": "x"})
    assert "--mutator-agent command needs --mutator-cmd" in said
    said = check({"mutator_cmd": "/no/such/mutator"}, {"ANTHROPIC_API_KEY": "x"})
    assert said.startswith("the mutator (--mutator-cmd): --mutator-cmd: '/no/such/mutator' is neither on PATH")


@pytest.mark.parametrize("flags, env, says", [
    (("--model", "claude-mystery-9"), {}, "error: --model claude-mystery-9: model 'claude-mystery-9' has no price"),
    ((), {"SKILL_MUTATOR_MUTATOR_MODEL": "gpt-x"},
     "error: the mutatorModel 'gpt-x' from "),
], ids=["typed", "default"])
def test_an_unpriced_model_names_the_flag_or_the_default_that_applied(tmp_path, flags, env, says) -> None:
    from tests.eval.agents.test_real_run import DEMO, clean_env, run_py
    done = run_py(*DEMO, "--real", *flags, "--data-dir", str(tmp_path / "data"),
                  env=clean_env(ANTHROPIC_API_KEY="x", **env), timeout=120)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    if not flags:
        assert "(pass --mutator-model to choose another)" in done.stderr
