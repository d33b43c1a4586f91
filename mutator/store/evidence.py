"""The mutator's staged evidence, kept once: each attempt's diff and each train rollout is written to
<data dir>/evidence/ the first time a workspace needs it and hard-linked into every later workspace, so a
round's staging costs no more at round 500 than at round 5; `staged` is the one reader of what a workspace
was shown, and `kept` what of it this store still holds once the workspace is gone (the dashboard reads these,
never the folders themselves).

Holds only what is staged: never val task details nor anything of the test suite. A stored file is
read-only with a fixed mtime; a write to it (a mutator without a sandbox) moves the mtime, and the next
staging stores it anew rather than show the written copy.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

# a workspace's read-only folders, as the mutator sees them
STAGED = ("evidence", "history", "tasks", "solve")
STORED_NS = 946_684_800 * 10**9                       # 2000-01-01: the mtime of every stored file


def workspace_dir(data_dir: Path, run_id: str, name: str) -> Path:
    """A mutator-role call's workspace: `round-<round>-<sibling>` of a mutation, `meta-<round>` of the meta
    skill."""
    return data_dir / "workspaces" / run_id / name


def untouched(path: Path) -> bool:
    """A stored file (linked into a workspace) that nothing has written since it was stored."""
    try:
        return stored(os.lstat(path))
    except OSError:
        return False


def stored(st: os.stat_result) -> bool:
    """`untouched` from a file's lstat."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and st.st_mtime_ns == STORED_NS


@dataclass(frozen=True)
class Shared:
    """A run's history as its workspaces see it, kept once: `history/` (each attempt's diff, linked from the
    store, and the ledger) and `attempts/` (each train-evaluated attempt's rollouts, linked), bound read-only
    at a workspace's history/ and evidence/attempts/ by a sandbox that binds folders
    (mutator/briefing/evidence.py)."""
    root: Path

    @property
    def history(self) -> Path:
        return self.root / "history"

    @property
    def attempts(self) -> Path:
        return self.root / "attempts"


class EvidenceStore:
    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "evidence"

    def shared(self, run_id: str) -> Shared:
        return Shared(self.root / "runs" / run_id)

    def diff(self, parent_hash: str, genome_hash: str, make: Callable[[str, str], str]) -> Path:
        """An attempt's diff vs its parent (genomes are immutable, so the pair names it), made once by
        `make`."""
        return self._kept(f"{self.root}/diffs/{parent_hash}-{genome_hash}.diff",
                          lambda: make(parent_hash, genome_hash).encode("utf-8"))

    def rollout(self, evaluation_id: int, name: str, trajectory: Path | str) -> Path | None:
        """A cell's trajectory.md as stored (a re-graded cell rewrites it: its mtime names the version), or
        None."""
        try:
            version = os.stat(trajectory).st_mtime_ns
        except FileNotFoundError:
            return None
        # a string path: staging asks this for every rollout shown, each round
        return self._kept(f"{self.root}/rollouts/{evaluation_id}/{name}.{version}.md",
                          Path(trajectory).read_bytes)

    def stored_diff(self, parent_hash: str, genome_hash: str) -> Path | None:
        found = self.root / "diffs" / f"{parent_hash}-{genome_hash}.diff"
        return found if found.is_file() else None

    def rollouts(self, evaluation_id: int) -> dict[str, Path]:
        """{cell name: its newest stored trajectory} of an evaluation (a re-graded cell is stored once per
        version)."""
        found: dict[str, tuple[int, Path]] = {}
        for path in (self.root / "rollouts" / str(evaluation_id)).glob("*.md"):
            name, _, version = path.name[:-len(".md")].rpartition(".")
            if name and version.isdigit() and int(version) >= found.get(name, (-1, path))[0]:
                found[name] = (int(version), path)
        return {name: path for name, (_, path) in sorted(found.items())}

    @staticmethod
    def _kept(where: Path | str, content: Callable[[], bytes]) -> Path:
        try:
            st = os.lstat(where)
            if st.st_mtime_ns == STORED_NS and stat.S_IMODE(st.st_mode) == 0o444:   # else written since: anew
                return Path(where)
        except FileNotFoundError:
            pass
        path = Path(where)
        path.parent.mkdir(parents=True, exist_ok=True)
        incoming = path.with_name(f".incoming-{os.getpid()}-{path.name}")
        incoming.write_bytes(content())
        incoming.chmod(0o444)
        os.utime(incoming, ns=(STORED_NS, STORED_NS))
        os.replace(incoming, path)   # atomic: a stored file is whole or absent
        return path


def link(stored: Path, target: Path | str) -> None:
    """Show a stored file at `target` in a workspace: a hard link (never a symlink, which a sandbox would not
    resolve); a copy where links are refused (another filesystem)."""
    for attempt in range(2):
        try:
            os.link(stored, target)
            return
        except FileNotFoundError:
            if attempt:
                raise
            # its folder is new: made once, not per file
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            break
    shutil.copyfile(stored, target)
    os.chmod(target, 0o444)


def staged(data_dir: Path, run_id: str, name: str) -> dict[str, Path]:
    """What the workspace `name` of a run was shown beside its skill: relative path -> file, sorted; empty
    when the workspace is gone."""
    root = workspace_dir(data_dir, run_id, name)
    found = {}
    for folder in STAGED:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and not path.is_symlink():
                found[path.relative_to(root).as_posix()] = path
    return found


def kept(db: sqlite_utils.Database, data_dir: Path, attempt: dict) -> dict[str, Path]:
    """What the workspace of `attempt` (run_id, round, parent_hash) was shown that this store keeps, as
    `staged` names it: the parent's train rollouts (evidence/current/), and each earlier round's train
    rollouts and diff. For when the workspace is gone; the ledger, task statements and solve demonstrations
    were written into the workspace only. Earlier rounds stand for "the attempts stored when it was staged"
    (siblings of its own round had no genome yet)."""
    store, found = EvidenceStore(data_dir), {}
    earlier = [dict(r) for r in db.query(
        "select round, sibling, parent_hash, genome_hash, train_evaluation_id from attempts where run_id = ? "
        "and round > 0 and round < ? order by round, sibling", [attempt["run_id"], attempt["round"]])]
    trained = [dict(r) for r in db.query(
        "select genome_hash, train_evaluation_id from attempts where run_id = ? and round < ? and "
        "train_evaluation_id is not null order by id", [attempt["run_id"], attempt["round"]])]
    current = {r["genome_hash"]: r["train_evaluation_id"] for r in trained}.get(attempt.get("parent_hash"))
    if current is not None:
        found.update({f"evidence/current/{name}.md": path for name, path in store.rollouts(current).items()})
    for a in earlier:
        label = f"{a['round']}" + (f"-{a['sibling']}" if a["sibling"] else "")
        if a["train_evaluation_id"]:
            found.update({f"evidence/attempts/round-{label}/{name}.md": path
                          for name, path in store.rollouts(a["train_evaluation_id"]).items()})
        both = a["parent_hash"] and a["genome_hash"]
        diff = store.stored_diff(a["parent_hash"], a["genome_hash"]) if both else None
        if diff is not None:
            found[f"history/round-{label}.diff"] = diff
    return dict(sorted(found.items()))
