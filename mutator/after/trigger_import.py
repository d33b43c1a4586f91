"""Import skill-creator's trigger eval set (a JSON list of {"query": ..., "should_trigger": true|false}, as
its `scripts/run_eval.py --eval-set` takes) as trigger suites.

Each query becomes a task with `"trigger": should_trigger`; the suites' grader gives every finished cell 1, so
only triggering separates genomes (set score.wTrigger > 0; README "Triggering"). Split into train/val/test
like an evals.json import (mutator/after/importer.py), each class split on its own so every split holds both
kinds when there are enough. Writes only under `out`.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

GRADER = '''"""Trigger suite grader: every finished cell scores 1; only whether the skill was loaded ''' '''\
(score.wTrigger) counts.

Usage: python run-eval.py <cell_dir> <task_id>   (cwd = the suite dir). Stdlib only.
"""
import json

print(json.dumps({"finished": 1.0}))
'''


def is_trigger_set(data: object) -> bool:
    """A trigger eval set is a JSON list of objects with a 'query' (an evals.json is an object or lacks
    it)."""
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "query" in data[0]


def trigger_tasks(data: list, evals_json: Path, problem: type[Exception]) -> list[dict]:
    """The tasks of a trigger eval set, each checked; `problem` is the error raised naming the file and
    entry."""
    tasks = []
    for index, entry in enumerate(data):
        where = f"{evals_json}: entry [{index}]"
        if not isinstance(entry, dict):
            raise problem(f"{where}: must be an object {{\"query\": ..., \"should_trigger\": true|false}}")
        query, should = entry.get("query"), entry.get("should_trigger")
        if not isinstance(query, str) or not query.strip():
            raise problem(f"{where}: needs a non-empty string 'query'")
        if not isinstance(should, bool):
            raise problem(f"{where}: 'should_trigger' must be true or false, got {should!r}")
        slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-")[:40].strip("-") or "query"
        tasks.append({"id": f"{'should' if should else 'should-not'}-{index:03d}-{slug}",
                      "prompt": query.strip(), "inputs": [], "required": [], "trigger": should})
    return tasks


def split_by_class(tasks: list[dict], seed: int, counts_of) -> dict[str, list[dict]]:
    """train/val/test task lists: each class (trigger true, false) shuffled by the seed and split by
    `counts_of` (a class too small to split goes whole to train); tasks keep their file order within a
    split."""
    out: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for cls in (True, False):
        members = [i for i, t in enumerate(tasks) if t["trigger"] is cls]
        random.Random(f"import-trigger:{seed}:{cls}").shuffle(members)
        try:
            counts = counts_of(len(members))
        except ValueError:
            counts = {"train": len(members), "val": 0, "test": 0}
        start = 0
        for split in ("train", "val", "test"):
            out[split] += members[start:start + counts[split]]
            start += counts[split]
    return {split: [tasks[i] for i in sorted(ids)] for split, ids in out.items()}
