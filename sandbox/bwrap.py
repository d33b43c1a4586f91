"""The bubblewrap launcher: the agent sees system dirs read-only, its programs' real installations (found
through PATH, shims, symlinks and #! lines by sandbox/resolve.py) and its script folder read-only, the
caller's `readable` paths read-only and its `writable` paths read-write — nothing else.

Home, the data dir, every suite dir and other cells are invisible because they are never mounted. It
must never bind a parent of those (e.g. the project root or the data dir) on the agent's behalf.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from sandbox import SandboxError
from sandbox.resolve import resolve_command

# Read-only in every sandbox: what a dynamically linked program needs to start.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install "
                "bubblewrap`) or use --sandbox none")
USERNS_HINT = ("bubblewrap cannot create its namespaces here; enable unprivileged user namespaces "
               "(`sysctl -w kernel.unprivileged_userns_clone=1`, `sysctl -w user.max_user_namespaces=15000`, "
               "or on Ubuntu ≥ 23.10 `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), run the "
               "container with --privileged or a seccomp profile that allows clone(CLONE_NEWUSER), "
               "or use --sandbox none")


def _is_system(path: Path) -> bool:
    """Already mounted by system_args(), or the root itself (/bin/sh's
    "prefix"), which must never be bound."""
    text = str(path)   # string tests: this runs for every mount of every cell
    return text == "/" or any(text == d or text.startswith(d + "/") for d in SYSTEM_DIRS)


def system_args() -> list[str]:
    """Mounts shared by every sandbox: system dirs read-only (symlinks kept as symlinks), private
    /proc, /dev and /tmp. User binds come after, so a cell under /tmp is mounted on the private tmpfs."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


class BwrapLauncher:
    id = "bwrap"
    binds_folders = True   # wrap's `shown`: a host folder bound read-only at another path
    dies_with_parent = True   # base_args' --die-with-parent: the sandbox goes with the harness

    def __init__(self, *, drop_caps: bool = True) -> None:
        # drop_caps=False exists only so a test can show why --cap-drop ALL is needed as root.
        self.drop_caps = drop_caps
        self._checked = False
        self._program: str | None = None

    def base_args(self, network: bool) -> list[str]:
        # bwrap found on PATH once, not by each spawn's exec trying every PATH folder in turn (~15 here)
        self._program = self._program or shutil.which("bwrap") or "bwrap"
        args = [self._program, "--unshare-all", "--die-with-parent", "--new-session"]
        if network:
            args.append("--share-net")  # only when the backend must reach the model API
        if self.drop_caps:
            args += ["--cap-drop", "ALL"]  # as root, bwrap otherwise keeps caps: ro binds could be remounted
        return args + system_args()

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path],
             readable: Sequence[Path], network: bool, run: Sequence[str] | None = None,
             env: Mapping[str, str] | None = None, shown: Mapping[Path, Path] | None = None) -> list[str]:
        cwd = Path(cwd).absolute()
        command = resolve_command(tuple(argv), cwd=cwd)   # ProgramError names what is missing
        writable_abs = tuple(Path(w).absolute() for w in writable)
        programs = [p for p in command.mounts(writable_abs) if not (_is_system(p) or _is_system(p.resolve()))]
        mounts: dict[Path, bool] = {}  # dest -> writable; a path given as writable wins
        for path in [*programs, *readable]:
            mounts.setdefault(Path(path).absolute(), False)
        for path in writable_abs:
            mounts[path] = True
        sources = {Path(dest).absolute(): Path(source) for dest, source in (shown or {}).items()}
        for dest in sources:   # another host folder, read-only, at `dest` (an empty folder the caller made)
            mounts[dest] = False
        args = self.base_args(network)
        # Parents before children, so `skill/` (rw) lands on top of its read-only workspace.
        for dest in sorted(mounts, key=lambda p: (len(p.parts), str(p))):
            if not dest.exists() or not sources.get(dest, dest).exists():
                raise SandboxError(f"sandbox: {sources.get(dest, dest) if dest.exists() else dest} does not "
                                   "exist; it must be created before the agent runs")
            args += ["--bind" if mounts[dest] else "--ro-bind", str(sources.get(dest, dest).resolve()),
                     str(dest)]
        if network and Path("/run").is_dir():
            args += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]  # resolv.conf target
        if first := command.path_dirs():
            # The shims on PATH are not mounted: what they pointed at on the host comes first instead, for the
            # agent's `#!/usr/bin/env python3` and its own tools alike.
            args += ["--setenv", "PATH", os.pathsep.join([*map(str, first), os.environ.get("PATH", "")])]
        # The sandbox's own root is a scratch tmpfs: read-only, so a write outside the binds fails loudly
        # (EROFS) instead of vanishing with the sandbox. `run` (preflight's probe) runs in place of argv.
        return [*args, "--remount-ro", "/", "--chdir", str(cwd), "--",
                *(command.argv if run is None else run)]

    def check(self) -> None:
        if self._checked:
            return
        if shutil.which("bwrap") is None:
            raise SandboxError(f"--sandbox bwrap: the `bwrap` program is not on PATH; {INSTALL_HINT}")
        probe = [*self.base_args(network=False), "--", "/bin/sh", "-c", "exit 0"]
        try:
            done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise SandboxError(f"--sandbox bwrap: running bwrap failed ({err}); {INSTALL_HINT}") from None
        if done.returncode != 0:
            why = done.stderr.strip() or f"exit {done.returncode}"
            raise SandboxError(f"--sandbox bwrap: bwrap could not start a sandbox ({why}); {USERNS_HINT}")
        self._checked = True
