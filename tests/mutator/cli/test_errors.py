"""One exception root: every error the harness raises on purpose maps to its exit code and its word in one
`except` of mutator/cli/main.py, and no other exception is swallowed."""

from __future__ import annotations

import pytest

from eval.agents import AgentSetupError
from eval.cost import PricingError
from eval.errors import SkillMutatorError, Stop
from eval.executors import ExecutorError
from eval.suite import SuiteError
from mutator.after.audit import AuditError
from mutator.after.deploy import DeployError
from mutator.cli import main as cli
from mutator.config import ConfigError
from mutator.round.budget import BudgetStop
from mutator.round.session import LoopError
from mutator.round.solve import SolveAbort
from mutator.round.stops import IncompleteEvaluation, UnhealthySeed
from mutator.store.db import DiskFull, StoreError
from mutator.store.lock import LockHeld
from mutator.store.migrations import MigrationError
from mutator.validity import testrun
from sandbox import SandboxError
from strategies import StrategyError


@pytest.mark.parametrize(("error", "code", "word"), [
    (ConfigError, 2, "error"), (SuiteError, 2, "error"), (PricingError, 2, "error"),
    (SandboxError, 2, "error"),
    (StrategyError, 2, "error"), (StoreError, 2, "error"), (LockHeld, 2, "error"), (LoopError, 2, "error"),
    (testrun.TestRunError, 2, "error"), (AgentSetupError, 2, "error"), (ExecutorError, 2, "error"),
    (AuditError, 2, "error"), (DeployError, 2, "error"), (MigrationError, 2, "error"),
    (SolveAbort, 4, "error"), (BudgetStop, 3, "stopped"), (DiskFull, 3, "stopped"),
    (IncompleteEvaluation, 8, "stopped"), (UnhealthySeed, 7, "stopped"),
])
def test_each_error_leaves_with_its_own_exit_code_and_word(monkeypatch, capsys, error, code, word):
    assert issubclass(error, SkillMutatorError) and issubclass(error, Stop) == (word == "stopped")

    def fail(args):
        raise error("the message names the flag and the fix")
    monkeypatch.setattr(cli, "dispatch", fail)
    assert cli.main(["--rounds", "1"]) == code
    assert capsys.readouterr().err == f"{word}: the message names the flag and the fix\n"


def test_an_error_outside_the_root_is_not_swallowed(monkeypatch):
    def fail(args):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(cli, "dispatch", fail)
    with pytest.raises(ZeroDivisionError):
        cli.main(["--rounds", "1"])


def test_the_old_base_classes_still_catch_them():
    # callers that catch ValueError / RuntimeError keep working
    assert issubclass(ConfigError, ValueError) and issubclass(SuiteError, ValueError)
    assert issubclass(BudgetStop, RuntimeError) and issubclass(LockHeld, RuntimeError)
