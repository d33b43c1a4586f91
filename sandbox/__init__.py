"""How an agent process is launched: the `Launcher` protocol and the registry of launchers.

A launcher only rewrites an argv (it never runs anything itself), so the runner owns process
lifetime, watchdog and kill semantics for every launcher alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol


class SandboxError(RuntimeError):
    """A launcher cannot be used on this machine; the message says what to install or enable."""


class Launcher(Protocol):
    id: str

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path],
             readable: Sequence[Path], network: bool) -> list[str]:
        """The argv that runs `argv` in `cwd` with only `writable` writable and `readable` visible."""
        ...

    def check(self) -> None:
        """Raise SandboxError (what to install / enable) when this launcher cannot run here."""
        ...


def get_launcher(launcher_id: str) -> Launcher:
    from sandbox.bwrap import BwrapLauncher
    from sandbox.none import NoneLauncher
    registry: dict[str, type] = {"none": NoneLauncher, "bwrap": BwrapLauncher}
    if launcher_id not in registry:
        raise SandboxError(f"unknown sandbox {launcher_id!r}; choose one of: {', '.join(registry)}")
    launcher = registry[launcher_id]()
    launcher.check()
    return launcher
