"""Content hashing and copying of skill trees: the genome-hash linchpin.

`hash_tree(dir)` must give the same hash on every machine and for any file-system order, so it
hashes sorted POSIX relative paths and file bytes only (never mtimes, permissions or VCS junk).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from pathlib import Path

EXCLUDE = (".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".ruff_cache", "node_modules",
           ".DS_Store", "Thumbs.db", "*.pyc", "*.pyo", "*.swp", "*~", ".ipynb_checkpoints",
           # skill-creator keeps its eval set inside the skill: never part of a
           # genome, never shown to the mutator
           "evals")


_EXCLUDED = re.compile("|".join(fnmatch.translate(pattern) for pattern in EXCLUDE))


def excluded(name: str) -> bool:
    return _EXCLUDED.match(name) is not None   # any(fnmatch(name, p) for p in EXCLUDE), in one match


def list_files(root: Path) -> list[Path]:
    """Every file under root that belongs to the tree, as sorted relative paths: regular files only (no
    symlink, nor anything under a symlinked folder), none with an excluded part."""
    found: list[str] = []
    pending = [(str(root), "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError, PermissionError):   # as rglob skips them
            continue
        for entry in entries:
            if excluded(entry.name):
                continue
            if entry.is_dir(follow_symlinks=False):
                pending.append((entry.path, f"{prefix}{entry.name}/"))
            elif entry.is_file(follow_symlinks=False):
                found.append(prefix + entry.name)
    return [Path(rel) for rel in sorted(found)]


def copy_file(src: Path | str, dst: Path | str, mode: int | None = None) -> None:
    """shutil.copyfile for a new file in a folder the harness just made (no same-file nor special-file checks,
    which cost more than a small file's bytes): the kernel copies; `mode` set when given."""
    source = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        target = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        try:
            while os.sendfile(target, source, None, 1 << 30):
                pass
            if mode is not None:
                os.fchmod(target, mode)
        finally:
            os.close(target)
    finally:
        os.close(source)


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
    made = {dst}
    for rel in list_files(src):
        target = dst / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        copy_file(src / rel, target)


def tree_size(root: Path) -> tuple[int, int]:
    """(file count, total bytes) of the included files."""
    files = list_files(root)
    return len(files), sum((root / rel).stat().st_size for rel in files)
