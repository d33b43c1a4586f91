"""What a graded cell keeps so a changed grader can grade it again, and how it is put back for grading.

A graded cell keeps its agent's outputs: its working dir without the skill (removed before grading) and
without the inputs the agent left byte-for-byte as staged (listed in `restore.json`, copied back from the
suite's fixtures, which the agent key vouches for). Past KEEP_BYTES the working dir is dropped: that cell
is run again if its grader changes. Never grades; never reads the skill.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

KEEP_BYTES = 64 * 2**20
RESTORE = "restore.json"
# a cell root's agent side: what its agent made and what its grader reads (grades and logs of grading are not)
AGENT_FILES = ("prompt.md", "stream.jsonl", "agent.stdout", "agent.stderr", RESTORE)


def slim(cell_root: Path, fixtures: Path, inputs: Sequence[str]) -> None:
    """Keep the agent's outputs in work/: drop the untouched inputs (noted for `restore`), or all of work/
    when what is left is over KEEP_BYTES."""
    work = cell_root / "work"
    if not work.is_dir():
        return
    dropped = []
    for rel in inputs:
        path, staged = work / rel, fixtures / rel
        if path.is_file() and not path.is_symlink() and staged.is_file() and \
                path.stat().st_size == staged.stat().st_size and path.read_bytes() == staged.read_bytes():
            path.unlink()
            dropped.append(rel)
    size = sum(p.stat().st_size for p in work.rglob("*") if p.is_file() and not p.is_symlink())
    if size > KEEP_BYTES:
        shutil.rmtree(work, ignore_errors=True)
        return
    (cell_root / RESTORE).write_text(json.dumps({"inputs": dropped}), encoding="utf-8")


def regradable(cell_root: Path) -> bool:
    """An agent's finished work is here to grade: its working dir and its stream."""
    return (cell_root / "work").is_dir() and (cell_root / "stream.jsonl").is_file()


def put_back(source: Path, cell_root: Path, fixtures: Path, inputs: Sequence[str]) -> Path:
    """The working dir of `source`'s agent run, whole again, in `cell_root` (a fresh dir unless it is the
    source itself): the agent's files copied, then the untouched inputs from the fixtures. Only the task's own
    `inputs` are restored, whatever `restore.json` says (the agent could write beside its working dir).
    Returns work/."""
    if source != cell_root:
        if cell_root.exists():
            shutil.rmtree(cell_root)
        cell_root.mkdir(parents=True)
        for name in AGENT_FILES:
            if (source / name).is_file():
                shutil.copyfile(source / name, cell_root / name)
        shutil.copytree(source / "work", cell_root / "work", symlinks=True)
    work = cell_root / "work"
    restore = cell_root / RESTORE
    try:
        listed = (json.loads(restore.read_text(encoding="utf-8")).get("inputs", [])
                  if restore.is_file() else [])
    except (ValueError, AttributeError):   # not the harness's: restore nothing it names
        listed = []
    for rel in [rel for rel in inputs if rel in listed]:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixtures / rel, work / rel)
    restore.unlink(missing_ok=True)
    return work
