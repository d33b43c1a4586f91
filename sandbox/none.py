"""The bare launcher: the agent runs as a plain child process in its working dir.

For skills and suites you authored and trust; it isolates nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


class NoneLauncher:
    id = "none"
    binds_folders = False   # a bare process sees the host's paths only

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path],
             readable: Sequence[Path], network: bool, run: Sequence[str] | None = None,
             env: Mapping[str, str] | None = None, shown: Mapping[Path, Path] | None = None) -> list[str]:
        if shown:
            raise ValueError("the none launcher cannot show a folder at another path "
                             "(binds_folders is False)")
        return list(argv if run is None else run)

    def check(self) -> None:
        return None
