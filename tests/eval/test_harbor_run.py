"""A Harbor verifier's verdict from its output and logs (no container): a verifier that could not reach the
network it was denied is a grader error naming the flag, never a 0; a real 0, or a positive score, stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.harbor import HarborConfig, HarborTask
from eval.harbor_run import OracleCheck, _judge, network_withheld
from sandbox.container import Finished

TASK = HarborTask("t", Path("/nowhere"), "do it", HarborConfig(), "/app")
CURL = "  % Total\ncurl: (6) Could not resolve host: astral.sh\n/tests/test.sh: line 4: uvx: command not found\n"


def logs_with(tmp_path: Path, reward: str | None) -> Path:
    logs = tmp_path / "verifier"
    logs.mkdir(parents=True)
    if reward is not None:
        (logs / "reward.txt").write_text(reward)
    return logs


@pytest.mark.parametrize("reward", ["0", None])
def test_a_verifier_denied_the_network_it_needed_is_a_grader_error(tmp_path: Path, reward: str | None) -> None:
    grades, why = _judge(TASK, Finished(1, CURL), logs_with(tmp_path, reward), withheld=True)
    assert grades is None
    assert why.startswith("verifier could not reach the network ('Could not resolve host' in its output)")
    assert "--allow-task-network" in why and (tmp_path / "verifier.log").read_text() == CURL


def test_without_withheld_network_or_with_a_score_the_reward_stands(tmp_path: Path) -> None:
    assert _judge(TASK, Finished(1, CURL), logs_with(tmp_path / "a", "0"), withheld=False) == ({"reward": 0.0}, "")
    assert _judge(TASK, Finished(0, CURL), logs_with(tmp_path / "b", "1"), withheld=True) == ({"reward": 1.0}, "")
    # a plain failing test is a 0, network or not
    said = "FAILED test_outputs.py::test_answer - AssertionError: 41 != 42\n"
    assert _judge(TASK, Finished(1, said), logs_with(tmp_path / "c", "0"), withheld=True) == ({"reward": 0.0}, "")


def test_network_is_withheld_only_from_a_task_that_allows_it_in_a_suite_imported_without_it() -> None:
    offline = HarborTask("t", Path("/n"), "x", HarborConfig(allow_internet=False), "/app")
    assert network_withheld({"task_network": "none"}, TASK) is True
    assert network_withheld({"task_network": "allowed"}, TASK) is False
    assert network_withheld({"task_network": "none"}, offline) is False


def test_an_oracle_checks_verdict_words() -> None:
    assert OracleCheck("t", 1.0, 0.0).verdict == "ok"
    assert OracleCheck("t", None, 0.0, no_oracle=True).verdict == "no oracle"
    assert OracleCheck("t", None, 1.0, no_oracle=True).verdict == "INVALID"
    assert OracleCheck("t", 0.0, 0.0).verdict == "INVALID"
    assert OracleCheck("t", None, None, "the task's image did not build", build_failed=True).verdict == \
        "image build failed"
