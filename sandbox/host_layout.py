"""A Harbor task's layout on the host's own system, for machines with no container engine: bubblewrap binds
the cell's work dir at the task's WORKDIR (e.g. /app), its tests/ at /tests read-only and /logs/verifier
writable, over the host's system dirs read-only, with no network.

It stands in for `ContainerEngine` (same `run`, `image_for`, `copy_out`), but no image is built: a task whose
tools the host lacks fails, naming the missing program, and the task's cpus and memory are not enforced.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from sandbox.bwrap import BwrapLauncher
from sandbox.container import LOG_TAIL, Bind, Finished, Limits

HOST = "host-system"       # the "image" of this layout: the host's own /usr, /bin, /lib, /etc
NOTE = ("note: run on the host's own system in the task's layout "
        "(--sandbox bwrap); the task's image was not built\n")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class HostLayout:
    id = "bwrap"

    def __init__(self) -> None:
        self.launcher = BwrapLauncher()
        self.launcher.check()

    def image_for(self, context: Path, content_hash: str, *, timeout_s: float = 600.0,
                  base_image: str | None = None) -> str:
        return HOST

    def copy_out(self, image: str, folder: str, dest: Path) -> str:
        return ""   # nothing was built: the cell holds the environment's own files (its inputs)

    def run(self, image: str, command: Sequence[str], *, binds: Sequence[Bind], workdir: str, limits: Limits,
            env: Mapping[str, str] | None = None) -> Finished:
        args = self.launcher.base_args(limits.network)
        for bind in binds:
            args += ["--bind" if bind.writable else "--ro-bind", str(Path(bind.host).resolve()),
                     bind.container]
        args += ["--chdir", workdir, "--", *command]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=limits.timeout_s,
                                  stdin=subprocess.DEVNULL, env={"PATH": PATH, "HOME": "/tmp", **(env or {})})
        except subprocess.TimeoutExpired:
            return Finished(None, NOTE)
        return Finished(done.returncode, NOTE + (done.stdout + done.stderr)[-LOG_TAIL:])
