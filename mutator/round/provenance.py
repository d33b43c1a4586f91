"""What a run records of how it was started: its suites by resolved path and its agent flags, so
`--test-run RUN` finds a suite given by path again and measures the agent the run used. Pure."""

from __future__ import annotations

from pathlib import Path

from mutator.store.db import dumps


def launch_columns(suites, agents, skill_dir: Path) -> dict:
    """What a run records of how it was started, so `--test-run RUN` can repeat it: the suites by
    resolved path and the agent flags (`suites`, `agents`: mutator.round.loop.Suites and Agents), and
    the seed skill's folder (where `--propose RUN` aims its accept line)."""
    found = {"suite_path": str(suites.train.path.resolve()), "val_path": str(suites.val.path.resolve()),
             "agents": dumps(agents.launch), "skill_dir": str(Path(skill_dir).resolve())}
    if suites.holdout:
        found["holdout_path"] = str(suites.holdout.path.resolve())
    return found
