"""A genome is one skill (a folder with SKILL.md) or a skill set: a folder without a SKILL.md of its own whose
`skills/` holds skill folders (SkillsBench tasks bundle 1-6 skills, installed together where the task's
Dockerfile COPYs its `skills`).

A one-skill genome is exactly what it always was (same tree, same hash, same place in a cell), so stores from
before resume with 0 new cells. A set is installed member by member (`.claude/skills/<member>/`), checked
member by member by the critic, and an attempt records which member(s) its change touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from eval.snapshot import copy_tree

SET_DIR = "skills"


def members(genome: Path) -> list[Path]:
    """The skill folders of a set (sorted by name); [] for a one-skill genome or a folder holding neither."""
    genome = Path(genome)
    if (genome / "SKILL.md").is_file() or not (genome / SET_DIR).is_dir():
        return []
    return sorted(p for p in (genome / SET_DIR).iterdir() if p.is_dir() and (p / "SKILL.md").is_file())


def is_skill_set(genome: Path) -> bool:
    return bool(members(genome))


def install_genome(genome: Path, skills_root: Path, name: str) -> None:
    """A genome into a cell's skills folder: a skill at <root>/<name>/, a set's members at
    <root>/<member>/."""
    parts = members(genome)
    if not parts:
        copy_tree(genome, skills_root / name)
    for member in parts:
        copy_tree(member, skills_root / member.name)


def installed_at(work: Path, genome: Path, name: str) -> Path:
    """SM_SKILL_DIR of a cell: the skill's folder, or for a set the folder holding its members."""
    root = work / ".claude" / "skills"
    return root if is_skill_set(genome) else root / name


def touched(paths: Iterable[str]) -> list[str]:
    """The set members a change's paths (relative to the genome, e.g. skills/pdf/SKILL.md) fall in, sorted;
    [] for a one-skill genome's paths."""
    names = {parts[1] for parts in (Path(p).parts for p in paths) if len(parts) > 2 and parts[0] == SET_DIR}
    return sorted(names)
