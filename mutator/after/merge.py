"""What a deploy writes into a live skill folder: the champion's files plus the folder's own files.

A file of the live folder that was never part of the seed genome (a user's `evals/`, local notes, `.git`)
is the user's: it is carried into the deployed folder. A seed file the champion deleted is not (the genome's
own deletions apply), and a champion file wins over a user's file at the same path (the user's copy stays
in the backup). Pure listing and copying of folders; never touches the store.
"""

from __future__ import annotations

import filecmp
import fnmatch
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from eval.snapshot import list_files

# Written by tools as they run, so a rollback's "edited since the deploy?" check looks past them.
CACHES = ("__pycache__", ".pytest_cache", ".ruff_cache", "*.pyc", "*.pyo", ".DS_Store", "Thumbs.db", "*.swp",
          "*~")


@dataclass(frozen=True)
class Merge:
    """The live folder's files against the seed and the champion (sorted POSIX relative paths)."""
    kept: tuple[str, ...]       # the user's own files, carried into the deployed folder
    shadowed: tuple[str, ...]   # own files a champion file (or folder) at the same path replaces
    # seed files edited in the live folder: the champion's version or deletion wins
    replaced: tuple[str, ...]

    def words(self) -> str:
        """One clause for the deploy's decision note and the printed line ("" when there is nothing to
        say)."""
        parts = []
        if self.kept:
            parts.append(f"kept {len(self.kept)} file(s) of the folder's own (not in the seed genome): "
                         + _some(self.kept))
        if self.shadowed:
            parts.append(f"{len(self.shadowed)} own file(s) replaced by the champion's file of the same path "
                         f"(the old copy is in the backup): " + _some(self.shadowed))
        if self.replaced:
            parts.append(f"{len(self.replaced)} seed file(s) edited in the folder were replaced by the "
                         f"champion's version (the edit is in the backup): " + _some(self.replaced))
        return "; ".join(parts)


def _some(paths: tuple[str, ...], shown: int = 5) -> str:
    return ", ".join(paths[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def every_file(root: Path, *, skip_caches: bool = False) -> list[str]:
    """Every file and symlink under root (nothing left out but, when asked, tool caches), as sorted POSIX
    paths."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if skip_caches and any(fnmatch.fnmatch(part, pattern) for part in rel.parts for pattern in CACHES):
            continue
        if path.is_symlink() or path.is_file():
            found.append(rel.as_posix())
    return sorted(found)


def plan(live: Path, seed: Path, champion: Path) -> Merge:
    """Sort the live folder's files: the user's own (kept unless the champion has that path), edited seed
    files."""
    seed_files = {p.as_posix() for p in list_files(seed)}
    champion_files = {p.as_posix() for p in list_files(champion)}
    champion_dirs = {str(parent) for rel in champion_files for parent in PurePosixPath(rel).parents}
    kept, shadowed, replaced = [], [], []
    for rel in every_file(live):
        if rel in seed_files:
            path = live / rel
            if path.is_symlink() or not filecmp.cmp(path, seed / rel, shallow=False):
                replaced.append(rel)
            continue
        parents = {str(parent) for parent in PurePosixPath(rel).parents}
        if rel in champion_files or rel in champion_dirs or parents & champion_files:
            shadowed.append(rel)
        else:
            kept.append(rel)
    return Merge(tuple(kept), tuple(shadowed), tuple(replaced))


def carry(live: Path, staging: Path, merge: Merge) -> None:
    """Copy the user's own files from the live folder into the staged champion (modes and symlinks kept)."""
    for rel in merge.kept:
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(live / rel, target, follow_symlinks=False)


def matches(target: Path, champion: Path, live: Path, merge: Merge) -> bool:
    """Is `target` still what a deploy of `champion` over `live` wrote? Tool caches aside, file for file."""
    expected = {p.as_posix(): champion / p for p in list_files(champion)}
    expected.update({rel: live / rel for rel in merge.kept})
    expected = {rel: source for rel, source in expected.items()
                if not any(fnmatch.fnmatch(part, pattern) for part in rel.split("/") for pattern in CACHES)}
    if every_file(target, skip_caches=True) != sorted(expected):
        return False
    for rel, source in expected.items():
        here = target / rel
        if here.is_symlink() or source.is_symlink():
            if not (here.is_symlink() and source.is_symlink() and os.readlink(here) == os.readlink(source)):
                return False
        elif not filecmp.cmp(here, source, shallow=False):
            return False
    return True
