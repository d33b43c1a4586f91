"""How an agent process is launched: the `Launcher` protocol and the registry of launchers.

A launcher only rewrites an argv (it never runs anything itself), so the runner owns process
lifetime, watchdog and kill semantics for every launcher alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from eval.errors import SkillMutatorError


class SandboxError(SkillMutatorError, RuntimeError):
    """A launcher cannot be used on this machine; the message says what to install or enable."""


class Launcher(Protocol):
    id: str

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path],
             readable: Sequence[Path], network: bool, run: Sequence[str] | None = None,
             env: Mapping[str, str] | None = None, shown: Mapping[Path, Path] | None = None) -> list[str]:
        """The argv that runs `argv` in `cwd` with only `writable` writable and `readable` visible. With
        `run`, that command runs instead, in the very sandbox `argv` would get (preflight's probe,
        sandbox/probe.py). `env` is what the process is started with (a container launcher passes its names
        in). `shown` maps a folder the agent sees to the host folder bound there read-only; only a launcher
        that `binds_folders` is given one."""
        ...

    def check(self) -> None:
        """Raise SandboxError (what to install / enable) when this launcher cannot run here."""
        ...


def binds_folders(launcher: Launcher) -> bool:
    """Whether `launcher` can show a host folder read-only at another path (wrap's `shown`): bwrap can; a bare
    process (none) sees only the host's own paths."""
    return bool(getattr(launcher, "binds_folders", False))


def dies_with_parent(launcher: Launcher) -> bool:
    """Whether what `launcher` wraps dies with the process that spawned it by itself (bwrap's
    --die-with-parent kills the whole sandbox when its parent dies), so the agent needs no parent-death signal
    of its own (eval/reaper.py: util-linux's setpriv, one more exec per agent)."""
    return bool(getattr(launcher, "dies_with_parent", False))


def get_launcher(launcher_id: str, *, on_fallback: Callable[[str], None] | None = None) -> Launcher:
    """A checked launcher. `auto` (the default) is bwrap when it is installed and works here, else none (the
    fallback's reason goes to `on_fallback`; run.py warns for real runs), and a Harbor task's agent runs in
    the task's container when an engine works here. `podman` / `docker` run Harbor tasks' agents in their
    containers (refused here when the engine is missing) and every other agent as `auto` would."""
    from sandbox.bwrap import BwrapLauncher
    from sandbox.none import NoneLauncher
    registry: dict[str, type] = {"none": NoneLauncher, "bwrap": BwrapLauncher}
    if launcher_id in ("auto", "podman", "docker"):
        from sandbox.container_launcher import ContainerSandbox
        return ContainerSandbox(launcher_id, lambda: _host(on_fallback))
    if launcher_id not in registry:
        raise SandboxError(f"unknown sandbox {launcher_id!r}; choose one of: "
                           f"auto, {', '.join(registry)}, podman, docker")
    launcher = registry[launcher_id]()
    launcher.check()
    return launcher


def _host(on_fallback: Callable[[str], None] | None) -> Launcher:
    """bwrap when it works here, else none."""
    try:
        return get_launcher("bwrap")
    except SandboxError as err:
        if on_fallback:
            on_fallback(str(err))
        return get_launcher("none")
