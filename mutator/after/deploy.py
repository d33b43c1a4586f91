"""Deploy an accepted proposal into a skill folder atomically, and roll a deploy back byte for byte.

The champion is written beside the target, checked against its genome hash, joined by the target's own
files (those never part of the seed genome: mutator/after/merge.py), then swapped in with one rename
(renameat2 RENAME_EXCHANGE where the kernel offers it). The previous folder is never copied: it is renamed
into `.skill-mutator-backups/<name>/` beside the target, so a rollback restores the very same files. A
target named for another skill is refused unless forced. Never called by the loop: only `run.py --accept` /
`--rollback` (or the dashboard) deploy.
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
from eval.suite import SuiteError, parse_frontmatter
from mutator.after import merge, proposals
from mutator.store import deployments
from mutator.store.genome import GenomeStore
from mutator.store.proposals import proposal_row

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


def _skill_md_name(folder: Path) -> str | None:
    """The `name:` of folder/SKILL.md's frontmatter; "" when it has none or cannot be read; None without a
    SKILL.md."""
    path = folder / "SKILL.md"
    if not path.is_file():
        return None
    try:
        return parse_frontmatter(path.read_text(encoding="utf-8", errors="replace"), path).get("name", "")
    except SuiteError:
        return ""


def refuse_foreign(target: Path, skill: str, *, force: bool) -> None:
    """A target named for another skill (its folder, or its SKILL.md's name) is refused unless `force`."""
    if force:
        return
    problems = []
    if target.name != skill:
        problems.append(f"the folder is named {target.name!r}")
    existing = _skill_md_name(target) if target.is_dir() else None
    if existing is not None and existing != skill:
        problems.append(f"its SKILL.md names the skill {existing!r}" if existing else
                        "its SKILL.md has no readable name")
    if problems:
        raise DeployError(f"refusing to deploy the skill {skill!r} into {target}: {' and '.join(problems)}, "
                          f"not {skill!r}. Pass --to the skill's own folder (named {skill}), or add --force "
                          f"to deploy there anyway (the folder's current version is kept for --rollback)")


def deploy(db: sqlite_utils.Database, genomes: GenomeStore, proposal_id: int, target: Path, *,
           note: str | None = None, force: bool = False,
           before_swap: Callable[[], None] | None = None) -> dict:
    """Accept the proposal and deploy it into `target`; returns the deployment row (status deployed) with
    `merge` (mutator/after/merge.py: the target's own files kept, the seed files it had edited).

    A target named for another skill is refused before anything is recorded (DeployError) unless `force`.
    A failure at any later step leaves `target` untouched, marks the proposal failed with the reason and
    raises DeployError. `before_swap` is a test seam called between the write and the rename.
    """
    target = Path(os.path.abspath(target))
    found = proposals.get(db, proposal_id)
    proposals.refuse_unless_acceptable(found)
    refuse_foreign(target, found["skill_name"] or _skill_md_name(genomes.path(found["genome_hash"])) or "",
                   force=force)
    proposal = proposals.accept(db, proposal_id, note)
    deployment_id = deployments.start_deployment(db, proposal_id, str(target), proposal["genome_hash"])
    staging = target.parent / f".{target.name}.incoming-{secrets.token_hex(4)}"
    merged = merge.Merge((), (), ())
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
            raise DeployError(f"the copy written to {staging} does not hash to "
                              f"{proposal['genome_hash'][:12]}")
        if target.exists():
            merged = merge.plan(target, _seed_dir(genomes, proposal), source)
            merge.carry(target, staging, merged)
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
        deployments.deployment_failed(db, deployment_id, reason)
        proposals.record(db, proposal_id, "deploy", "accepted", "failed", reason)
        if isinstance(err, Exception):
            raise DeployError(f"deploy of proposal {proposal_id} into {target} failed ({reason}); {target} "
                              f"is unchanged") from err
        raise
    deployments.deployment_done(db, deployment_id, previous, str(backup) if previous else None)
    proposals.record(db, proposal_id, "deploy", "accepted", "deployed",
                     f"into {target}" + (f"; previous version kept at {backup}" if previous else
                                         "; there was no previous version")
                     + (f"; {merged.words()}" if merged.words() else ""))
    return {**deployments.deployment_row(db, deployment_id), "merge": merged}


def _seed_dir(genomes: GenomeStore, proposal: dict) -> Path:
    """The proposal's seed genome: which of the live folder's files were the skill's. Without it (a store that
    lost it), the champion stands in, so a seed file the champion deleted is kept rather than lost."""
    seed = genomes.path(proposal["seed_hash"]) if proposal.get("seed_hash") else None
    return seed if seed is not None and seed.is_dir() else genomes.path(proposal["genome_hash"])


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at)) if at else "an unrecorded time"


def still_deployed(db: sqlite_utils.Database, genomes: GenomeStore, deployment: dict, target: Path) -> bool:
    """Is the folder still what the deploy wrote (the champion plus the folder's own files), tool caches
    aside?"""
    if not target.is_dir():
        return False
    backup = Path(deployment["backup_dir"]) if deployment["backup_dir"] else None
    proposal = proposal_row(db, deployment["proposal_id"])
    champion = genomes.path(deployment["genome_hash"])
    if champion.is_dir() and proposal and backup and backup.is_dir():
        if merge.matches(target, champion, backup, merge.plan(backup, _seed_dir(genomes, proposal),
                                                              champion)):
            return True
    # a deploy into a new folder, or one made before the folder's own files were kept: the genome itself
    if hash_tree(target) != deployment["genome_hash"]:
        return False
    return not champion.is_dir() or \
        merge.every_file(target, skip_caches=True) == merge.every_file(champion, skip_caches=True)


def rollback(db: sqlite_utils.Database, genomes: GenomeStore, target: Path) -> dict:
    """Restore the version the latest live deploy into `target` replaced; returns that deployment row.

    Refused unless the folder is still, file for file, what the deploy wrote (its own files included)."""
    target = Path(os.path.abspath(target))
    deployment = deployments.live_deployment(db, str(target))
    if deployment is None:
        undone = deployments.last_rolled_back(db, str(target))
        if undone:
            raise DeployError(f"{target} is already rolled back: deploy {undone['id']} (proposal "
                              f"{undone['proposal_id']}) was undone at {_when(undone['rolled_back_at'])}, "
                              f"and no earlier deploy into it is live")
        raise DeployError(f"nothing deployed into {target} is recorded in this store (pass the --data-dir "
                          f"used for --accept)")
    if not still_deployed(db, genomes, deployment, target):
        raise DeployError(f"{target} changed since deploy {deployment['id']} (it is no longer the champion "
                          f"{deployment['genome_hash'][:12]} plus the folder's own files); rolling back "
                          f"would lose those edits: move them aside first")
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
    deployments.rolled_back(db, deployment["id"])
    if deployment["proposal_id"] is not None:
        proposals.record(db, deployment["proposal_id"], "rollback", "deployed", "rolled_back",
                         f"{target} restored"
                         + (f" from {backup}" if backup else " (removed: nothing was there before)")
                         + f"; undone copy at {undone}")
    return deployments.deployment_row(db, deployment["id"])
