"""The one root of every error the harness raises on purpose, each with the exit code `run.py` returns for it.

It lives at the floor of the house (it imports nothing), so eval/, sandbox/, strategies/ and mutator/ all
derive from it and mutator/cli/main.py maps every one of them in one `except SkillMutatorError`. The tree:

    SkillMutatorError (exit 2, "error")      bad input: the message names the file or flag and the fix
    ├── ConfigError, SuiteError, PricingError, SandboxError (ProgramError: an agent's program cannot run in
    │   the sandbox), StrategyError, AgentSetupError, ExecutorError
    ├── StoreError, LockHeld                  the store is damaged / unwritable, or another process writes
    │                                         the run
    ├── LoopError, TestRunError, ExportError, EvalsImportError, AuditError, ProposalError, DeployError,
    │   MiningError, SplitError, SequentialError, LaunchError
    ├── SolveAbort (exit 4)                   the solve phase found the mutator model not capable
    ├── ControlFailed (exit 10)               --test-run: champion vs seed reported and stored, but the
    │                                         no-skill control's cells are not results (cause and cells said)
    └── Stop (exit 3, "stopped")              a clean stop; re-running the same command resumes
        ├── BudgetStop, DiskFull
        ├── ExecutorLost (exit 8)             where cells run went away mid-evaluation (a Ray cluster's head)
        └── EvaluationStop (exit 8)           an evaluation no verdict may rest on
            └── UnhealthyEvaluation (exit 7)

Errors that never reach the user as such (a tool call's refusal, a stream's shape, a deadline) stay outside.
"""

from __future__ import annotations

EXIT_INCOMPLETE = 8     # an evaluation holds cells that are not results: the same command redoes exactly them


class SkillMutatorError(Exception):
    """An error the user can act on: `run.py` prints `<label>: <message>` and exits with `exit_code`."""
    exit_code: int = 2
    label: str = "error"


class Stop(SkillMutatorError):
    """A clean stop (a budget, a full disk, an evaluation no verdict may rest
    on); the same command resumes."""
    exit_code = 3
    label = "stopped"


class ControlFailed(SkillMutatorError):
    """`--test-run`: the champion-vs-seed report is complete (printed and stored), but the no-skill control
    failed (its evaluation holds cells that are not results); the message gives the cause and the cells. The
    same command re-runs just the control's missing cells."""
    exit_code = 10
    label = "no-skill control failed"
