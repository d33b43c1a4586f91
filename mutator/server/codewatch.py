"""Whether the server's code changed on disk since it started: a fingerprint of every project module the
process has loaded (server, queries, spend, ...), which /api/health and the pages read to offer a restart.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from mutator.config import ROOT


def loaded_project_files(root: Path = ROOT) -> list[Path]:
    """Every project module this process has loaded (server_*, queries, spend, ...), not a hand-kept list."""
    root = root.resolve()
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py"):
            resolved = Path(path).resolve()
            if resolved.is_relative_to(root) and resolved.relative_to(root).parts[0] != "tests":
                found.add(resolved)
    return sorted(found)


class CodeWatch:
    """Fingerprint of the server's Python files at start; `stale` once the files on disk differ."""

    def __init__(self, paths: list[Path] | None = None) -> None:
        self.paths = loaded_project_files() if paths is None else paths
        self._stat: tuple = ()
        self._digest = ""
        self.started = self.digest()

    def digest(self) -> str:
        stat = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None for p in self.paths)
        if stat != self._stat:  # re-hash only when a file's mtime or size moved
            h = hashlib.sha256()
            for p in self.paths:
                h.update(p.read_bytes() if p.exists() else b"-")
            self._stat, self._digest = stat, h.hexdigest()[:16]
        return self._digest

    @property
    def stale(self) -> bool:
        return self.digest() != self.started
