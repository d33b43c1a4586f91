"""Genomes are stored once, immutable, and committed to git with their lineage."""

from __future__ import annotations

import subprocess
from pathlib import Path

from eval.snapshot import hash_tree
from mutator.store.db import connect
from mutator.store.genome import GenomeStore


def test_put_dedupes_commits_lineage_and_diffs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = GenomeStore(data, connect(data / "mutator.db"))
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("line one\n")
    seed = store.put(skill, parent_hash=None, skill_name="s")
    assert seed == hash_tree(skill) and store.put(skill, parent_hash=None, skill_name="s") == seed
    (skill / "SKILL.md").write_text("line one\nline two\n")
    child = store.put(skill, parent_hash=seed, skill_name="s", message="add line two")
    rows = {r["hash"]: r for r in store.db["genomes"].rows}
    assert set(rows) == {seed, child} and rows[child]["parent_hash"] == seed
    assert (store.path(seed) / "SKILL.md").read_text() == "line one\n"  # the parent stays as it was
    assert not (store.path(child) / "SKILL.md").stat().st_mode & 0o222  # stored read-only
    diff = store.diff(seed, child)
    assert "+line two" in diff and "-line one" not in diff
    store.mark("run-x", child)
    log = subprocess.run(["git", "-C", str(data / "genomes.git"), "log", "--format=%s", "run-x"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert log == ["add line two", f"genome {seed[:12]}"]
