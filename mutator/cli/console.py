"""The `skill-mutator` console script (pyproject's [project.scripts]): run.py's parser and commands, the same
start-up as run.py. Imports nothing heavy before the pandas probe below is answered.
"""

from __future__ import annotations

import sys


def skip_pandas_probe() -> None:
    """Import sqlite_utils with pandas answered "not installed".

    sqlite_utils imports pandas, when installed, only to map pd.Timestamp to TEXT; that probe costs every
    CLI call ~0.5 s. Nothing inserts pandas values (pandas is used, and imported normally, by the export
    alone), so the probe is answered "not installed" while sqlite_utils loads."""
    if "pandas" not in sys.modules:
        sys.modules["pandas"] = None  # type: ignore[assignment]
        try:
            import sqlite_utils  # noqa: F401
        finally:
            del sys.modules["pandas"]


def console() -> None:
    """`skill-mutator ARGS` is `python run.py ARGS`."""
    skip_pandas_probe()
    from mutator.cli.main import main
    sys.exit(main())
