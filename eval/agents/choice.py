"""Which backend runs the build agent and which runs the mutator, from the flags the user typed.

Each choice remembers how it was made (a flag, or the default that applied), so a setup error names
what the user typed or says which default applied and how to change it. Describes; never runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from eval.agents import AgentBackend, AgentSetupError, make_backend

SOLVERS = ("anthropic", "claude-cli")   # backends that can solve a task bare as the mutator model


@dataclass(frozen=True)
class Choice:
    role: str      # "build" | "mutator"
    backend: str   # anthropic | claude-cli | command
    command: str   # the user's command line, for `command`
    how: str       # how it was chosen, in the user's words: "--agent claude-cli" or "the default ..."

    @property
    def can_solve(self) -> bool:
        return self.backend in SOLVERS


def choose(*, agent: str | None, agent_cmd: str | None, mutator_agent: str | None,
           mutator_cmd: str | None, mutator_cmd_source: str = "--mutator-cmd") -> tuple[Choice, Choice]:
    """(build, mutator). --agent-cmd alone implies --agent command; --mutator-cmd alone implies a command
    mutator; the mutator defaults to --agent, or to anthropic when the build agent is a command."""
    if agent_cmd and agent not in (None, "command"):
        raise AgentSetupError(f"--agent-cmd runs your own build agent, but --agent {agent} was also given; "
                              f"drop one of them (--agent-cmd alone implies --agent command)")
    if mutator_cmd and mutator_agent not in (None, "command"):
        raise AgentSetupError(f"{mutator_cmd_source} runs your own mutator, but --mutator-agent "
                              f"{mutator_agent} was also given; drop one of them")
    if agent:
        build = Choice("build", agent, agent_cmd or "", f"--agent {agent}")
    elif agent_cmd:
        build = Choice("build", "command", agent_cmd, "--agent-cmd (which implies --agent command)")
    else:
        build = Choice("build", "anthropic", "", "the default build agent --agent anthropic (pass --agent "
                                                 "claude-cli, or --agent-cmd CMD for your own)")
    if mutator_agent:
        mutator = Choice("mutator", mutator_agent, mutator_cmd or "", f"--mutator-agent {mutator_agent}")
    elif mutator_cmd:
        mutator = Choice("mutator", "command", mutator_cmd, mutator_cmd_source)
    elif build.backend == "command":
        mutator = Choice("mutator", "anthropic", "", "the default mutator --mutator-agent anthropic (used "
                                                     "when the build agent is a command; pass --mutator-cmd "
                                                     "CMD for your own)")
    else:
        mutator = Choice("mutator", build.backend, "", "the default mutator, the same backend as the build "
                                                       f"agent ({build.how}; pass --mutator-agent or "
                                                       "--mutator-cmd to change it)")
    return build, mutator


def backend_for(choice: Choice, *, config_file: Path | None, environ: Mapping[str, str],
                check: bool = True) -> AgentBackend:
    """The backend for a choice, checked (API key, CLI, command) before any spend; errors name the flag.
    `check=False` for a command that runs no agent (--plan): nothing is spent, so nothing is demanded."""
    backend = make_backend(choice.backend, command=choice.command, config_file=config_file)
    if not check:
        return backend
    try:
        backend.check(environ)
    except AgentSetupError as err:
        if choice.backend == "command" and not choice.command.strip():
            flag = "--agent-cmd" if choice.role == "build" else "--mutator-cmd (or config mutatorCmd)"
            raise AgentSetupError(f"{choice.how} needs {flag} 'PROGRAM ARGS...': an executable that follows "
                                  "the agent process contract in docs/reference/contracts.md") from None
        what = "build agent" if choice.role == "build" else "mutator"
        message = str(err)
        if choice.backend == "command":
            flag = "--agent-cmd" if choice.role == "build" else "--mutator-cmd"
            message = message.replace("--agent-cmd", flag)
        raise AgentSetupError(f"the {what} ({choice.how}): {message}") from None
    return backend
