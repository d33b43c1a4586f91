"""Other installed skills (--with-skills DIR): the skills a user has beside the one being evolved, installed
read-only in every cell so triggering and interference are measured as a user would meet them.

The set enters the evaluation contract as one digest (Contract.with_skills, only when set, so stores from
before resume with 0 cells). Never edits DIR; never lets another skill take the evolved skill's name.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from eval.errors import SkillMutatorError
from eval.snapshot import copy_tree, hash_tree


class OtherSkillsError(SkillMutatorError, ValueError):
    """--with-skills DIR cannot be used; the message names DIR (or the skill in it) and the fix."""


def find_skills(root: Path, evolved_name: str) -> tuple[Path, ...]:
    """The skill folders under `root` (each a folder with SKILL.md), by name; checked before any spend."""
    from skills_ref import read_properties
    if not root.is_dir():
        raise OtherSkillsError(f"--with-skills {root}: not a folder; pass a folder holding skill folders "
                               f"(each with a SKILL.md)")
    skills = tuple(sorted(p for p in root.iterdir() if p.is_dir() and (p / "SKILL.md").is_file()))
    if not skills:
        raise OtherSkillsError(f"--with-skills {root}: holds no skill (no <name>/SKILL.md under it); pass "
                               "the folder that holds the skill folders, e.g. ~/.claude/skills")
    for skill in skills:
        try:
            name = read_properties(skill).name
        except Exception as err:   # skills-ref raises its own parse/validation errors
            raise OtherSkillsError(f"--with-skills {root}: {skill / 'SKILL.md'} "
                                   f"cannot be read as a skill: {err}") \
                from None
        if evolved_name in (skill.name, name):
            raise OtherSkillsError(f"--with-skills {root}: {skill.name} has the evolved skill's name "
                                   f"{evolved_name!r}; remove it from {root} (the "
                                   "evolved skill is installed by the harness)")
    return skills


def digest(skills: tuple[Path, ...]) -> str:
    """What the cells' other skills are: sha256 over each folder's name and content hash ('' for none)."""
    if not skills:
        return ""
    material = "\n".join(f"{skill.name}:{hash_tree(skill)}" for skill in sorted(skills, key=lambda p: p.name))
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def install(skills: tuple[Path, ...], skills_root: Path) -> None:
    """Copy each skill to skills_root/<folder name>/ with its files read-only (its folders stay removable, so
    a cell dir is cleaned up like any other)."""
    for skill in skills:
        target = skills_root / skill.name
        copy_tree(skill, target)
        for folder, _, files in os.walk(target):
            for name in files:
                os.chmod(Path(folder, name), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
