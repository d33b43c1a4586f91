"""Content hashing and copying of skill trees: the genome-hash linchpin.

`hash_tree(dir)` must give the same hash on every machine and for any file-system order, so it
hashes sorted POSIX relative paths and file bytes only (never mtimes, permissions or VCS junk).
"""

from __future__ import annotations

import fnmatch
import hashlib
import shutil
from pathlib import Path

EXCLUDE = (".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".ruff_cache", "node_modules",
           ".DS_Store", "Thumbs.db", "*.pyc", "*.pyo", "*.swp", "*~", ".ipynb_checkpoints",
           # skill-creator keeps its eval set inside the skill: never part of a genome, never shown to the mutator
           "evals")


def excluded(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in EXCLUDE)


def list_files(root: Path) -> list[Path]:
    """Every file under root that belongs to the tree, as sorted relative paths."""
    found: list[Path] = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(excluded(part) for part in rel.parts):
            continue
        if path.is_file() and not path.is_symlink():
            found.append(rel)
    return sorted(found, key=lambda p: p.as_posix())


def hash_tree(root: Path) -> str:
    """sha256 over (relative POSIX path, sha256 of bytes) of every included file, sorted by path."""
    digest = hashlib.sha256()
    for rel in list_files(root):
        digest.update(rel.as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return digest.hexdigest()


def copy_tree(src: Path, dst: Path) -> None:
    """Copy the included files of src into dst (created; must not exist yet)."""
    dst.mkdir(parents=True, exist_ok=False)
    for rel in list_files(src):
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)


def tree_size(root: Path) -> tuple[int, int]:
    """(file count, total bytes) of the included files."""
    files = list_files(root)
    return len(files), sum((root / rel).stat().st_size for rel in files)
