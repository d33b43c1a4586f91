"""Export one run's record as tables for notebooks: attempts, evaluations, cells, tests, test_runs.

Reads the store read-only (safe beside a running loop) and writes one file per table. Parquet needs
pyarrow; CSV needs nothing beyond pandas. Never writes to the database.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from eval.errors import SkillMutatorError
from mutator.store.db import connect_readonly
from mutator.store.export_tables import run_frames
from mutator.store.run_lookup import run_ids

FORMATS = ("csv", "parquet")


class ExportError(SkillMutatorError, ValueError):
    """The export cannot be made as asked; the message says the fix."""


def frames(db_path: Path, run_id: str) -> dict[str, pd.DataFrame]:
    """The run's tables: its attempts, the evaluations they (and its test runs) used, their cells and
    tests."""
    if not db_path.is_file():
        raise ExportError(f"no store at {db_path}; pass the --data-dir the run was made with")
    db = connect_readonly(db_path)
    try:
        runs = run_ids(db)
        if run_id not in runs:
            raise ExportError(f"run {run_id!r} is not in {db_path}; runs there: "
                              f"{', '.join(runs) or '(none)'}")
        return run_frames(db, run_id)
    finally:
        db.conn.close()


def export(db_path: Path, run_id: str, fmt: str, out_dir: Path) -> list[Path]:
    """Write each table as out_dir/<run>-<table>.<fmt>; returns the files written."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not supported; use one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ExportError("--format parquet needs pyarrow, which is not installed: `pip install "
                              "'pyarrow>=14'` or use --format csv") from None
    tables = frames(db_path, run_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables.items():
        path = out_dir / f"{run_id}-{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        written.append(path)
    return written
