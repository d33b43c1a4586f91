"""The round loop and the mutator's view: loop, mutate, critic, score (composite + gate), briefing,
evidence, view, solve, meta, progress, the run budget, the summary report and the merged config.

May import: its rooms `store/` (and, for the summary, nothing else of them), `eval/`, `strategies/`,
`sandbox/`. Its rooms `validity/`, `after/` and `server/` build on it; it never imports them.
"""

import sys as _sys

# sqlite_utils imports pandas, when installed, only to map pd.Timestamp to TEXT; that probe costs every CLI call,
# fake agent and grader that opens the store ~0.5 s. Nothing here inserts pandas values (pandas is used, and
# imported normally, by the export alone), so the probe is answered "not installed" while sqlite_utils loads.
if "sqlite_utils" not in _sys.modules and "pandas" not in _sys.modules:
    _sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        import sqlite_utils  # noqa: F401
    finally:
        del _sys.modules["pandas"]
