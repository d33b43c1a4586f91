"""Deploy an accepted proposal into a skill folder atomically, and roll a deploy back byte for byte.

The champion is written beside the target, checked against its genome hash, then swapped in with one
rename (renameat2 RENAME_EXCHANGE where the kernel offers it). The previous folder is never copied: it
is renamed into `.skill-mutator-backups/<name>/` beside the target, so a rollback restores the very
same files. Never called by the loop: only `run.py --accept` / `--rollback` (or the dashboard) deploy.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from eval.errors import SkillMutatorError
from eval.snapshot import copy_tree, hash_tree
from mutator.after import proposals
from mutator.store.db import now, rows
from mutator.store.genome import GenomeStore

BACKUPS = ".skill-mutator-backups"
RENAME_EXCHANGE = 2
AT_FDCWD = -100


class DeployError(SkillMutatorError, RuntimeError):
    """A deploy or rollback did not happen; the message says why, and the skill folder is as it was."""


def _exchange(a: Path, b: Path) -> None:
    """Swap two paths in one step: renameat2(RENAME_EXCHANGE); two renames (undone on failure) without it."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(code, f"swapping {a} and {b}: {os.strerror(code)}")
    parked = a.with_name(a.name + ".parked")
    os.rename(b, parked)
    try:
        os.rename(a, b)
    except BaseException:
        os.rename(parked, b)
        raise
    os.rename(parked, a)


def backup_root(target: Path) -> Path:
    return target.parent / BACKUPS / target.name


def deploy(db: sqlite_utils.Database, genomes: GenomeStore, proposal_id: int, target: Path, *,
           note: str | None = None, before_swap: Callable[[], None] | None = None) -> dict:
    """Accept the proposal and deploy it into `target`; returns the deployment row (status deployed).

    A failure at any step leaves `target` untouched, marks the proposal failed with the reason and
    raises DeployError. `before_swap` is a test seam called between the write and the rename.
    """
    proposal = proposals.accept(db, proposal_id, note)
    target = Path(os.path.abspath(target))
    deployment_id = db["deployments"].insert({
        "proposal_id": proposal_id, "target_dir": str(target), "genome_hash": proposal["genome_hash"],
        "status": "deploying", "deployed_at": now()}).last_pk
    staging = target.parent / f".{target.name}.incoming-{secrets.token_hex(4)}"
    try:
        source = genomes.path(proposal["genome_hash"])
        if not source.is_dir():
            raise DeployError(f"genome {proposal['genome_hash'][:12]} is missing from {genomes.root}; "
                              f"deploy from the data dir the run was made in (--data-dir)")
        if not target.parent.is_dir():
            raise DeployError(f"{target.parent} does not exist; create it or pass another --to")
        if target.exists() and not target.is_dir():
            raise DeployError(f"{target} is a file, not a skill folder")
        copy_tree(source, staging)
        if hash_tree(staging) != proposal["genome_hash"]:
            raise DeployError(f"the copy written to {staging} does not hash to {proposal['genome_hash'][:12]}")
        backup = backup_root(target) / f"{deployment_id}-{time.strftime('%Y%m%dT%H%M%S')}"
        backup.parent.mkdir(parents=True, exist_ok=True)
        if before_swap:
            before_swap()
        previous = hash_tree(target) if target.exists() else None
        if previous is not None:
            _exchange(staging, target)   # target now holds the champion, staging the previous version
            try:
                os.rename(staging, backup)
            except OSError:
                backup = staging         # deployed all the same; the previous version is kept where it is
        else:
            os.rename(staging, target)
    except BaseException as err:
        shutil.rmtree(staging, ignore_errors=True)
        reason = f"{type(err).__name__}: {err}"
        db["deployments"].update(deployment_id, {"status": "failed", "error": reason})
        proposals.record(db, proposal_id, "deploy", "accepted", "failed", reason)
        if isinstance(err, Exception):
            raise DeployError(f"deploy of proposal {proposal_id} into {target} failed ({reason}); {target} is "
                              f"unchanged") from err
        raise
    db["deployments"].update(deployment_id, {
        "status": "deployed", "previous_hash": previous, "backup_dir": str(backup) if previous else None})
    proposals.record(db, proposal_id, "deploy", "accepted", "deployed",
                     f"into {target}" + (f"; previous version kept at {backup}" if previous else
                                         "; there was no previous version"))
    return rows(db, "select * from deployments where id = ?", [deployment_id])[0]


def rollback(db: sqlite_utils.Database, target: Path) -> dict:
    """Restore the version the latest live deploy into `target` replaced; returns that deployment row."""
    target = Path(os.path.abspath(target))
    live = rows(db, "select * from deployments where target_dir = ? and status = 'deployed' order by id desc "
                    "limit 1", [str(target)])
    if not live:
        raise DeployError(f"nothing deployed into {target} is recorded in this store (pass the --data-dir used "
                          f"for --accept)")
    deployment = live[0]
    current = hash_tree(target) if target.is_dir() else None
    if current != deployment["genome_hash"]:
        raise DeployError(f"{target} changed since deploy {deployment['id']} (now {str(current)[:12]}, deployed "
                          f"{deployment['genome_hash'][:12]}); rolling back would lose those edits: move them "
                          f"aside first")
    undone = backup_root(target) / f"{deployment['id']}-undone-{time.strftime('%Y%m%dT%H%M%S')}"
    undone.parent.mkdir(parents=True, exist_ok=True)
    backup = Path(deployment["backup_dir"]) if deployment["backup_dir"] else None
    if backup is not None:
        if not backup.is_dir():
            raise DeployError(f"the previous version of {target} was kept at {backup}, which is gone")
        _exchange(backup, target)      # target holds the previous version again; backup path the undone one
        os.rename(backup, undone)
    else:
        os.rename(target, undone)      # there was nothing before the deploy
    db["deployments"].update(deployment["id"], {"status": "rolled_back", "rolled_back_at": now()})
    if deployment["proposal_id"] is not None:
        proposals.record(db, deployment["proposal_id"], "rollback", "deployed", "rolled_back",
                         f"{target} restored" + (f" from {backup}" if backup else " (removed: nothing was there "
                                                                               "before)") + f"; undone copy at {undone}")
    return rows(db, "select * from deployments where id = ?", [deployment["id"]])[0]
