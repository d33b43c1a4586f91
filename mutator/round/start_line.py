"""What a run says when it starts or resumes: its strategy and sizes, the skill it evolves and that skill's
folder, its suites, and whether the solve phase runs and what it may cost. Words only; decides nothing."""

from __future__ import annotations

import json

from mutator.config import Settings
from mutator.round.session import Agents, Suites
from mutator.round.solve import solve_line


def solve_on(settings: Settings, agents: Agents) -> bool:
    """Whether the solve phase is asked for and can run (mutator.round.solve.solve_wanted refuses the
    rest)."""
    return settings.solve == "on" and agents.solve_argv is not None


def skill_words(settings: Settings, skill_name: str) -> str:
    return f"skill {skill_name} from {settings.skill_dir}"


def new_run_words(settings: Settings, suites: Suites, agents: Agents, skill_name: str) -> str:
    return (f"{settings.strategy}, {settings.rounds} rounds, {settings.replicates} replicates, "
            f"{skill_words(settings, skill_name)}, train {suites.train.name}, val {suites.val.name}; "
            f"{solve_line(settings, len(suites.train.tasks), solve_on(settings, agents))}")


def resume_words(settings: Settings, suites: Suites, agents: Agents, skill_name: str,
                 solve_record: str | None) -> str:
    """The skill, and the solve phase when it still has to run (never run, or aborted last time)."""
    pending = solve_on(settings, agents) and (solve_record is None
                                              or bool(json.loads(solve_record).get("aborted")))
    return skill_words(settings, skill_name) + (
        f"; {solve_line(settings, len(suites.train.tasks), True)}" if pending else "")
