#!/usr/bin/env python3
"""The one launcher: a thin entry to mutator/cli/ (flags, the command registry, exit codes).

Default is a zero-spend dry run with the fakes. Re-running the same command resumes the same run.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

# sqlite_utils imports pandas, when installed, only to map pd.Timestamp to TEXT; that probe costs every CLI call
# ~0.5 s. Nothing inserts pandas values (pandas is used, and imported normally, by the export alone), so the probe
# is answered "not installed" while sqlite_utils loads.
if "pandas" not in sys.modules:
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        import sqlite_utils  # noqa: E402, F401
    finally:
        del sys.modules["pandas"]

from mutator.cli.commands import load  # noqa: E402, F401  (tests and scripts load a suite for a role)
from mutator.cli.flags import parser  # noqa: E402, F401  (tests/test_readme.py reads every flag)
from mutator.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
