#!/usr/bin/env python3
"""The one launcher: a thin entry to mutator/cli/ (flags, subcommands, the command registry, exit codes).

Default is a zero-spend dry run with the fakes. Re-running the same command resumes the same run.
The `skill-mutator` console script (mutator/cli/console.py) runs the same parser.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from mutator.cli.console import skip_pandas_probe  # noqa: E402

skip_pandas_probe()   # before anything imports sqlite_utils: ~0.5 s a call (see its docstring)

from mutator.cli.commands import load  # noqa: E402, F401  (tests and scripts load a suite for a role)
from mutator.cli.flags import parser  # noqa: E402, F401  (tests/test_readme.py reads every flag)
from mutator.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
