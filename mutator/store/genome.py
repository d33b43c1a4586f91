"""Content-addressed, immutable genome store: hash_tree(skill) == genome hash.

A genome is stored once under genomes/<hash>/ (files read-only) and committed to a bare git
repository (genomes.git) whose parent commit is the genome's parent, so `git log -p` shows the
evolution and a genome's diff vs its parent comes from git. Nothing here edits a stored genome.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import git
import sqlite_utils

from eval.snapshot import copy_tree, hash_tree, tree_size
from mutator.store.db import now, store_lock

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "skill-mutator", "GIT_AUTHOR_EMAIL": "mutator@localhost",
                "GIT_COMMITTER_NAME": "skill-mutator", "GIT_COMMITTER_EMAIL": "mutator@localhost"}


class GenomeStore:
    def __init__(self, data_dir: Path, db: sqlite_utils.Database) -> None:
        self.root = data_dir / "genomes"
        self.root.mkdir(parents=True, exist_ok=True)
        self.db = db
        git_dir = data_dir / "genomes.git"
        with store_lock(data_dir):  # a fresh store opened by two processes at once gets one repository
            self.repo = git.Repo(git_dir) if git_dir.exists() else git.Repo.init(git_dir, bare=True)

    def path(self, genome_hash: str) -> Path:
        return self.root / genome_hash

    def get(self, genome_hash: str) -> dict | None:
        rows = list(self.db["genomes"].rows_where("hash = ?", [genome_hash]))
        return rows[0] if rows else None

    def put(self, src: Path, *, parent_hash: str | None, skill_name: str, message: str = "") -> str:
        """Store src (if new) and return its hash; an existing genome keeps its first lineage."""
        genome_hash = hash_tree(src)
        target = self.path(genome_hash)
        if not target.exists():
            staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.root))
            shutil.rmtree(staging)
            copy_tree(src, staging)
            for file in staging.rglob("*"):
                if file.is_file():
                    file.chmod(0o444)
            os.replace(staging, target)  # atomic: a genome dir is complete or absent
        if self.get(genome_hash) is None:
            parent_commit = (self.get(parent_hash) or {}).get("git_commit") if parent_hash else None
            commit = self._commit(target, parent_commit, message or f"genome {genome_hash[:12]}")
            n_files, size = tree_size(target)
            self.db["genomes"].insert({
                "hash": genome_hash, "parent_hash": parent_hash, "skill_name": skill_name, "n_files": n_files,
                "size_bytes": size, "git_commit": commit, "created_at": now()})
        return genome_hash

    def _commit(self, tree_dir: Path, parent_commit: str | None, message: str) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**GIT_IDENTITY, "GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": str(tree_dir)}
            run = self.repo.git
            with run.custom_environment(**env):
                run.add("--all", "--force", "--", ".")
                tree = run.write_tree()
                args = [tree] + (["-p", parent_commit] if parent_commit else []) + ["-m", message]
                commit = run.commit_tree(*args)
        return commit.strip()

    def mark(self, ref: str, genome_hash: str) -> None:
        """Point branch `ref` (e.g. run-<id>) at a genome; HEAD follows the latest marked branch."""
        genome = self.get(genome_hash)
        if genome and genome["git_commit"]:
            self.repo.git.update_ref(f"refs/heads/{ref}", genome["git_commit"])
            self.repo.git.symbolic_ref("HEAD", f"refs/heads/{ref}")

    def diff(self, parent_hash: str | None, genome_hash: str) -> str:
        """Unified diff of a genome vs its parent (vs the empty tree for a seed)."""
        child = self.get(genome_hash)
        if child is None:
            return ""
        parent = self.get(parent_hash) if parent_hash else None
        base = parent["git_commit"] if parent else self.repo.git.hash_object("-t", "tree", "/dev/null")
        return self.repo.git.diff(base, child["git_commit"], "--no-color", "--no-ext-diff")

    def diff_stat(self, parent_hash: str | None, genome_hash: str) -> str:
        child, parent = self.get(genome_hash), self.get(parent_hash) if parent_hash else None
        if child is None or parent is None:
            return ""
        return self.repo.git.diff(parent["git_commit"], child["git_commit"], "--shortstat").strip()
