"""Tamper evidence for one mutator call: it may change only skill/ and result.json of its workspace.

Without a sandbox (`--sandbox none`) a mutator process can write anywhere; this compares every file
of its workspace (bar skill/, result.json and the harness's own logs), the folder around it, its parent
genome and the watched folders (the seed skill, the suites) before and after the call, and names what
changed. Reads only; never repairs anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from collections.abc import Mapping
from pathlib import Path

from mutator.store.evidence import stored
from mutator.store.runs import evolve_runs

MAY_WRITE = {"skill", "result.json", "stream.jsonl", "agent.stdout", "agent.stderr"}
SKIP = {"__pycache__"}


def _digest(path: str, entry: os.DirEntry | None = None) -> str:
    """A file's content digest; a stored file linked in is named by its inode (any write moves its mtime,
    mutator/store/evidence.py), a folder is "<dir>", a symlink its target."""
    if entry is not None and entry.is_dir(follow_symlinks=False):   # from the directory entry: no lstat
        return "<dir>"
    try:
        st = entry.stat(follow_symlinks=False) if entry is not None else os.lstat(path)
    except OSError as err:
        return f"<unreadable: {err.strerror}>"
    if stat.S_ISLNK(st.st_mode):
        return "-> " + os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return "<dir>"
    if stored(st):
        return f"<stored file {st.st_ino}>"
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as err:
        return f"<unreadable: {err.strerror}>"


def _tree(root: Path, label: str, *, allowed: set[str] = frozenset()) -> dict[str, str]:
    """Every entry under root (not below a symlinked folder, nor in SKIP, nor in `allowed` at the top) by
    "label/relative path": one scandir and one lstat per entry, so a staged file costs microseconds."""
    state: dict[str, str] = {}
    top = str(root)
    pending = [(top, f"{label}/")]
    while pending:
        folder, prefix = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError, PermissionError):   # as rglob skips them
            continue
        for entry in entries:
            if entry.name in SKIP or (allowed and folder == top and entry.name in allowed):
                continue
            key = prefix + entry.name
            state[key] = _digest(entry.path, entry)
            if state[key] == "<dir>":
                pending.append((entry.path, key + "/"))
    return state


# their file names are val/test details: a message names only the suite
PRIVATE = ("val suite", "test suite")


def snapshot(workspace: Path, parent_dir: Path, watch: Mapping[str, Path] | None = None, *,
             around: bool = True) -> dict[str, str]:
    """Everything the mutator must leave as it was, by path -> content digest (watched folders by label).
    `around`: the folder around the workspace too (one entry per earlier round's workspace); a sandbox that
    mounts only the workspace (bwrap) shows the mutator no such folder, so there it is left out."""
    state = _tree(workspace, str(workspace), allowed=MAY_WRITE)
    # `../`: the other workspaces, anything new beside
    for entry in os.scandir(workspace.parent) if around else ():
        if entry.name != workspace.name:
            state[entry.path] = _digest(entry.path, entry)
    state.update(_tree(parent_dir, str(parent_dir)))
    for label, folder in (watch or {}).items():
        state.update(_tree(folder, f"{label} {folder}" if label not in PRIVATE else label))
    return state


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What was added, removed or rewritten, sorted; a private suite is named once, never by its files
    (the message becomes the attempt's error, which later briefings show the mutator)."""
    paths = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    private = {label for label in PRIVATE for path in paths if path.startswith(label + "/")}
    public = {path for path in paths if path.split("/")[0] not in private}
    return sorted(public | {f"the {label}" for label in private})


def seed_changed_since(conn: sqlite3.Connection, identity: dict, seed_dir: Path,
                       genomes_root: Path) -> str | None:
    """Before a new run starts: an earlier run with these very suites and settings but another seed means the
    seed folder changed since (an edit, or a mutator that wrote outside its workspace). A warning naming the
    changed files, else None; the new run goes ahead (editing a seed is a new experiment)."""
    same = json.dumps({k: v for k, v in identity.items() if k != "seed"}, sort_keys=True, default=str)
    for run_id, seed_hash, config, _suites in evolve_runs(conn):
        earlier = json.loads(config or "{}")
        earlier.pop("seed", None)
        if seed_hash != identity.get("seed") and json.dumps(earlier, sort_keys=True, default=str) == same:
            files = [path.split("/", 1)[1] for path in changed(_tree(genomes_root / seed_hash, "seed"),
                                                               _tree(seed_dir, "seed"))]
            return (f"the seed skill {seed_dir} changed since {run_id} (same suites and settings): "
                    f"{', '.join(files) or 'its files'}; this starts a new run. Restore the seed to resume "
                    f"{run_id}")
    return None
