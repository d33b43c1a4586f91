"""Preflight for an agent command: run its resolved programs once, harmlessly, inside the chosen sandbox.

A program that resolves on the host but cannot start in the sandbox (a shim's manager not mounted, an
interpreter's lib/ missing, a script the sandbox does not show) is named before any cell or mutator call
is paid. Never runs the agent itself: an interpreter is asked to do nothing (`python3 -c pass`), a program the
command runs itself (the claude CLI) is asked its `--version`, and any other binary is checked for presence.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from sandbox import Launcher
from sandbox.resolve import Command, Program, ProgramError, resolve_command

# What an interpreter does when asked to do nothing, by its name.
IDLE = ((re.compile(r"python[0-9.]*"), ("-c", "pass")), (re.compile(r"node(js)?"), ("-e", "0")),
        (re.compile(r"(ba|da|z)?sh"), ("-c", ":")), (re.compile(r"ruby|perl"), ("-e", "0")),
        (re.compile(r"bun"), ("-e", "0")))
MISSING = 127


def idle_args(name: str) -> tuple[str, ...] | None:
    """The no-op arguments for an interpreter of this name (None: not one we know)."""
    return next((args for pattern, args in IDLE if pattern.fullmatch(name)), None)


def interpreter_argv(program: Program) -> list[str]:
    """How the sandbox reaches the interpreter at the end of the chain, the way the agent's exec will: a
    script's `#!/usr/bin/env NAME` is looked up on the sandbox's PATH, not the host's."""
    if program.interpreter is None:
        return [str(program.path)]
    exec_argv = program.exec_argv()
    if len(exec_argv) > 1:   # its interpreter came through a shim: run by its real path
        return exec_argv[:-1]
    inner = program.interpreter
    if program.via_env:
        return ["/usr/bin/env", inner.given, *program.interpreter_args]
    return [*interpreter_argv(inner), *program.interpreter_args]


def probe_script(command: Command, start_argv: Callable[[list[str]], list[str]] | None = None) -> str:
    """One /bin/sh script: every file the command needs is visible, each interpreter starts and does nothing,
    each program the command runs itself answers --version. The first failure is named on stderr.
    `start_argv`: how the sandbox starts a program of the host (a task's container:
    through the host's loader)."""
    lines: list[str] = []

    def need(path: Path | str, test: str, what: str) -> None:
        lines.append(f"[ {test} {shlex.quote(str(path))} ] || {{ echo "
                     f"{shlex.quote(what)} >&2; exit {MISSING}; }}")

    def run(argv: list[str], what: str) -> None:
        quoted = " ".join(map(shlex.quote, argv))
        lines.append(f"{quoted} >/dev/null || {{ rc=$?; "
                     f"echo {shlex.quote(what)} \"(exit $rc)\" >&2; exit $rc; }}")

    program = command.program
    for step in program.programs():
        need(step.path, "-x", f"{step.path} is not visible or not executable in the sandbox")
    if command.script is not None:
        need(command.script, "-r", f"{command.script} is not readable in the sandbox")
    # An interpreter named as the program (`python3 agent.py`) runs exactly as the agent will exec it, so a
    # wrapper script in its place is run too; a script's #! interpreter is
    # reached the way its exec reaches it.
    start: list[str] = []
    if (idle := idle_args(Path(command.argv[0]).name)) is not None:
        start = [command.argv[0]]
    elif program.interpreter is not None and (idle := idle_args(program.final().path.name)) is not None:
        start = interpreter_argv(program)
    if start and idle is not None:
        run((start_argv or list)([*start, *idle]), f"`{' '.join(start)} {' '.join(idle)}` "
                                                   "failed in the sandbox")
    for tool in command.tools:
        need(tool.path, "-x", f"{tool.path} is not visible or not executable in the sandbox")
        run([str(tool.path), "--version"], f"`{tool.path} --version` failed in the sandbox")
    return "\n".join(lines)


FIX = ("Run the real program by its full path (not a wrapper script that calls another), or use --sandbox "
       "none for a program you trust")


def probe(launcher: Launcher, argv: Sequence[str], *, what: str, timeout_s: float = 120,
          fix: str = FIX) -> None:
    """Run `argv`'s programs once in `launcher`'s sandbox, in a scratch working dir; raise ProgramError naming
    `what` (e.g. "the build agent (--agent-cmd)"), the program, the path it resolved to and the fix."""
    with tempfile.TemporaryDirectory(prefix="sm-preflight-") as tmp:
        cwd = Path(tmp)
        try:
            command = resolve_command(tuple(argv), cwd=cwd)
        except ProgramError as err:
            raise ProgramError(f"{what}: {err}") from None
        script = probe_script(command, getattr(launcher, "start_argv", None))
        wrapped = launcher.wrap(argv, cwd=cwd, writable=[cwd], readable=[], network=False,
                                run=["/bin/sh", "-c", script])
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd),
               "LANG": os.environ.get("LANG", "C.UTF-8")}
        try:
            done = subprocess.run(wrapped, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ProgramError(f"{what}: `{argv[0]}` ({command.program.chain()}) did not answer within "
                               f"{timeout_s:g} s in the {launcher.id} sandbox") from None
        if done.returncode == 0:
            return
        said = " ".join(done.stderr.strip().splitlines()[-6:]) or "(no output)"
        mounted = ", ".join(str(p) for p in command.mounts((cwd,))) or "system dirs only"
        raise ProgramError(
            f"{what}: `{argv[0]}` resolves to {command.program.chain()}, which cannot run in the "
            f"{launcher.id} sandbox (exit {done.returncode}): "
            f"{said}. Mounted for it, read-only: {mounted}. {fix}")
