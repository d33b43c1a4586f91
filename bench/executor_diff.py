"""Do two stores hold the same run? Diff the attempts, evaluations, cells and tests rows of two data dirs,
e.g. the demo run with --executor local and with --executor ray.

Usage: python bench/executor_diff.py DATA_DIR_A DATA_DIR_B
Left out: row ids, times and durations, paths under the data dir, and cells.node (where a cell ran is
the point of the comparison, not a difference in it). Prints per table the rows compared and the rows
that differ (with the first few differences); exits 1 when any differ.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

SKIP = {"id", "started_at", "finished_at", "created_at", "updated_at", "heartbeat_at", "duration_ms", "node",
        "cell_dir", "pid", "workspace", "evaluation_id", "cell_id", "mutator_duration_ms", "applied_at"}
ORDER = {"attempts": "run_id, round, sibling", "evaluations": "key",
         "cells": "(select key from evaluations e where e.id = evaluation_id), task_id, replicate",
         "tests": "(select key from evaluations e where e.id = (select evaluation_id from cells c where c.id "
                  "= cell_id)), (select task_id || '/' || replicate from cells c where c.id = cell_id), name"}


def rows(db: sqlite3.Connection, table: str, root: str) -> list[tuple]:
    columns = [r[1] for r in db.execute(f"pragma table_info({table})") if r[1] not in SKIP and
               not r[1].endswith(("_at", "_ms"))]
    found = db.execute(f"select {', '.join(columns)} from {table} order by {ORDER[table]}").fetchall()
    return [tuple(v.replace(root, "<data>") if isinstance(v, str) else v for v in row)
            for row in found], columns


def main(argv: list[str]) -> int:
    a_dir, b_dir = (Path(p).resolve() for p in argv[1:3])
    a = sqlite3.connect(f"file:{a_dir / 'mutator.db'}?mode=ro", uri=True)
    b = sqlite3.connect(f"file:{b_dir / 'mutator.db'}?mode=ro", uri=True)
    differ = 0
    for table in ORDER:
        left, columns = rows(a, table, str(a_dir))
        right, _ = rows(b, table, str(b_dir))
        bad = [(x, y) for x, y in zip(left, right) if x != y] + [None] * abs(len(left) - len(right))
        differ += len(bad)
        print(f"{table:<12} {len(left):>5} vs {len(right):>5} rows, {len(bad)} differ ({len(columns)} "
              "columns compared)")
        for pair in bad[:3]:
            if pair:
                print("   ", {c: (x, y) for c, x, y in zip(columns, *pair) if x != y})
    has_node = lambda db: "node" in [r[1] for r in db.execute("pragma table_info(cells)")]  # noqa: E731
    by_node = "select coalesce(node, '?'), count(*) from cells group by node"
    nodes = {name: dict(db.execute(by_node).fetchall())
             if has_node(db) else {"(no cells.node: a store from before _v11)": None}
             for name, db in (("A", a), ("B", b))}
    print("cells per node:", {k: {n[:44]: c for n, c in v.items()} for k, v in nodes.items()})
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
