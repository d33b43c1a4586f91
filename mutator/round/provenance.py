"""What a run records of how it was started: its suites by resolved path and its agent flags, so
`--test-run RUN` finds a suite given by path again and measures the agent the run used, and the command line
that started it, secrets redacted (the dashboard shows it to copy). Pure."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from eval.environment import SECRET_NAME
from eval.redact import REDACTED, redact
from mutator.store.db import dumps


def command_line(argv: Sequence[str] | None = None) -> str:
    """`python run.py ...` as typed, shell-quoted, with the value of any flag whose name looks secret
    (`--api-key X`, `--token=X`), any environment secret's value and any key shape replaced by [REDACTED]."""
    out: list[str] = []
    hide = False
    for arg in sys.argv if argv is None else argv:
        name, eq, _ = arg.partition("=")
        if hide:
            out.append(REDACTED)
        elif arg.startswith("-") and SECRET_NAME.search(name):
            out.append(f"{name}={REDACTED}" if eq else arg)
        else:
            out.append(arg)
        hide = arg.startswith("-") and not eq and SECRET_NAME.search(name) is not None and not hide
    return redact("python " + shlex.join(out)) or ""


def launch_columns(suites, agents, skill_dir: Path) -> dict:
    """What a run records of how it was started, so `--test-run RUN` can repeat it: the suites by
    resolved path and the agent flags (`suites`, `agents`: mutator.round.loop.Suites and Agents), and
    the seed skill's folder (where `--propose RUN` aims its accept line), and the command that (re)started
    it."""
    found = {"suite_path": str(suites.train.path.resolve()), "val_path": str(suites.val.path.resolve()),
             "agents": dumps(agents.launch), "skill_dir": str(Path(skill_dir).resolve()),
             "command": command_line()}
    if suites.holdout:
        found["holdout_path"] = str(suites.holdout.path.resolve())
    return found


def gate_columns(settings) -> dict:
    """How the run's gate decides, as run columns (its identity names them only when not the old default, so
    run ids are unchanged); a run resumed with sealTest is sealed from then on (never unsealed)."""
    return {"gate_method": settings.score.gate_method, "model_gate": settings.score.model_gate,
            **({"seal_test": 1} if settings.seal_test else {})}
