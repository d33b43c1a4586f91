"""Files the dashboard shows from inside a store: a genome's diff (from genomes.git) and a cell's logs.

Read-only; every path is resolved and must stay inside the store's data dir (a cell_dir recorded
elsewhere, or a symlink out, is not followed). Sizes are capped so a huge log cannot stall the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import git
import sqlite_utils

from eval.stream_metrics import decode_line
from mutator.server.stores import Store, inside
from mutator.store.queries import attempts
from mutator.store.queries.genomes import git_commits

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree: a seed diffs against nothing
CELL_FILES = ("stream.jsonl", "grade.stdout", "grade.stderr", "agent.stderr")
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
FILE_CAP = 256_000
DIFF_CAP = 400_000


def genome_diff(store: Store, db: sqlite_utils.Database, attempt_id: int) -> dict | None:
    a = attempts.genomes(db, attempt_id)
    if a is None:
        return None
    commits = git_commits(db, a["parent_hash"], a["genome_hash"])
    child = commits.get(a["genome_hash"])
    if not child:
        return {"diff": "", "note": "no genome (the mutation failed before producing one)"}
    git_dir = inside(store.data_dir, store.data_dir / "genomes.git")
    if git_dir is None or not git_dir.is_dir():
        return {"diff": "", "note": "genomes.git is missing from this store"}
    base = commits.get(a["parent_hash"]) or EMPTY_TREE
    text = git.Repo(git_dir).git.diff(base, child, "--no-color", "--no-ext-diff")
    return {"diff": text[:DIFF_CAP], "truncated": len(text) > DIFF_CAP, "parent": a["parent_hash"],
            "genome": a["genome_hash"]}


def cell_dir(store: Store, cell: dict) -> Path | None:
    """The cell's folder: as recorded, else where the store keeps it (a moved or copied store)."""
    candidates = [Path(cell["cell_dir"])] if cell.get("cell_dir") else []
    if SEGMENT.match(cell["task_id"] or "") and re.match(r"^[0-9a-f]+$", cell["evaluation_key"] or ""):
        folder = f"{cell['task_id']}__r{cell['replicate']}"
        candidates.append(store.data_dir / "evals" / cell["evaluation_key"] / folder)
    for candidate in candidates:
        found = inside(store.data_dir, candidate)
        if found is not None and found.is_dir():
            return found
    return None


def read_capped(path: Path, cap: int = FILE_CAP) -> tuple[str, bool]:
    with path.open("rb") as fh:
        data = fh.read(cap + 1)
    return data[:cap].decode(errors="replace"), len(data) > cap


def cell_files(store: Store, cell: dict) -> dict[str, Any]:
    folder = cell_dir(store, cell)
    files: dict[str, Any] = {}
    if folder is not None:
        for name in CELL_FILES:
            path = inside(store.data_dir, folder / name)
            if path is not None and path.is_file():
                text, truncated = read_capped(path)
                files[name] = {"text": text, "truncated": truncated}
    events = []
    for line in files.pop("stream.jsonl", {}).get("text", "").splitlines():
        try:
            event = decode_line(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    cell = {k: v for k, v in cell.items() if k != "cell_dir"}
    return {"cell": cell, "files": files, "events": events, "found_dir": folder is not None}
