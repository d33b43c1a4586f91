"""Tamper evidence for one mutator call: it may change only skill/ and result.json of its workspace.

Without a sandbox (`--sandbox none`) a mutator process can write anywhere; this compares every file
of its workspace (bar skill/, result.json and the harness's own logs), the folder around it, its parent
genome and the watched folders (the seed skill, the suites) before and after the call, and names what
changed. Reads only; never repairs anything.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

MAY_WRITE = {"skill", "result.json", "stream.jsonl", "agent.stdout", "agent.stderr"}
SKIP = {"__pycache__"}


def _digest(path: Path) -> str:
    if path.is_symlink():
        return "-> " + str(path.readlink())
    if path.is_dir():
        return "<dir>"
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as err:
        return f"<unreadable: {err.strerror}>"


def _tree(root: Path, label: str, *, allowed: set[str] = frozenset()) -> dict[str, str]:
    state: dict[str, str] = {}
    if not root.exists():
        return state
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] in allowed or SKIP & set(rel.parts):
            continue
        state[f"{label}/{rel.as_posix()}"] = _digest(path)
    return state


PRIVATE = ("val suite", "test suite")   # their file names are val/test details: a message names only the suite


def snapshot(workspace: Path, parent_dir: Path, watch: Mapping[str, Path] | None = None) -> dict[str, str]:
    """Everything the mutator must leave as it was, by path -> content digest (watched folders by label)."""
    state = _tree(workspace, str(workspace), allowed=MAY_WRITE)
    for entry in workspace.parent.iterdir():  # `../`: the run's other workspaces and anything new beside them
        if entry != workspace:
            state[str(entry)] = "<dir>" if entry.is_dir() and not entry.is_symlink() else _digest(entry)
    state.update(_tree(parent_dir, str(parent_dir)))
    for label, folder in (watch or {}).items():
        state.update(_tree(folder, f"{label} {folder}" if label not in PRIVATE else label))
    return state


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What was added, removed or rewritten, sorted; a private suite is named once, never by its files
    (the message becomes the attempt's error, which later briefings show the mutator)."""
    paths = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    private = {label for label in PRIVATE for path in paths if path.startswith(label + "/")}
    return sorted({path for path in paths if path.split("/")[0] not in private} | {f"the {label}" for label in private})
