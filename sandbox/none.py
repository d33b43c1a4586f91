"""The bare launcher: the agent runs as a plain child process in its working dir, under its cell's keeper.

For skills and suites you authored and trust; it isolates nothing but time: the keeper (eval/cell_keeper.py,
a child subreaper) kills every process the agent started when the cell ends, setsid and double forks included.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

KEEPER = Path(__file__).resolve().parent.parent / "eval" / "cell_keeper.py"


def kept(argv: Sequence[str]) -> list[str]:
    """`argv` run under its cell's keeper (no import of ours: `python -I -S`, ~10 ms of CPU per agent)."""
    return [sys.executable, "-I", "-S", str(KEEPER), "--", *argv]


class NoneLauncher:
    id = "none"
    binds_folders = False   # a bare process sees the host's paths only

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path],
             readable: Sequence[Path], network: bool, run: Sequence[str] | None = None,
             env: Mapping[str, str] | None = None, shown: Mapping[Path, Path] | None = None) -> list[str]:
        if shown:
            raise ValueError("the none launcher cannot show a folder at another path "
                             "(binds_folders is False)")
        return kept(argv if run is None else run)

    def check(self) -> None:
        return None
