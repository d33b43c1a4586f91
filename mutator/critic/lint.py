"""`run.py --lint SKILL_DIR [--against PARENT_DIR]`: the critic's rows for a skill, before any spend.

Alone, the Agent Skills spec (skills-ref) decides and the critic's other guards are shown as warnings;
against a parent, the full review a candidate gets in the loop. Either way it ends with the caps and the room
a change has under them (the text the mutator's briefing shows). Reads the two folders, nothing else.
"""

from __future__ import annotations

from pathlib import Path

from skills_ref import read_properties
from skills_ref.errors import SkillError

from mutator.critic import guards as critic
from mutator.critic.caps import caps_text, room
from mutator.critic.text import Tree, utf8_problem

MARK = {"pass": "ok  ", "warn": "warn", "fail": "FAIL"}


def lint_rows(skill: Path, against: Path | None, limits: critic.GateLimits) -> list[critic.Check]:
    if against is None:
        return critic.lint(skill, limits)
    try:
        name = read_properties(against).name
    except SkillError as err:
        raise ValueError(f"--against {against}: not a skill folder ({err})") from None
    return critic.review(skill, against, skill_name=name, limits=limits)


def lint_command(skill: Path, against: Path | None, limits: critic.GateLimits) -> tuple[int, str]:
    """(exit code, text): 0 when no row fails, 1 when one does, 2 when a folder is not there."""
    for flag, folder in (("--lint", skill), ("--against", against)):
        if folder is not None and not (folder / "SKILL.md").is_file():
            return 2, f"error: {flag} {folder}: no SKILL.md there; pass a skill folder"
        if folder is not None and (problem := utf8_problem(folder / "SKILL.md")):
            return 2, f"error: {flag} {problem}"
    try:
        rows = lint_rows(skill, against, limits)
    except ValueError as err:
        return 2, f"error: {err}"
    width = max(len(row.gate) for row in rows)
    lines = [f"{MARK[row.verdict]}  {row.gate:<{width}}  {row.reason}".rstrip() for row in rows]
    failed = [row.gate for row in rows if row.verdict == "fail"]
    what = f"{skill} against {against}" if against else f"{skill}"
    if failed:
        lines.append(f"\n{what}: {len(failed)} guard(s) fail: {', '.join(failed)}")
    else:
        warned = sum(row.verdict == "warn" for row in rows)
        kept = ("problems a candidate may keep but not add" if against is None else
                "problems the parent already has, kept within the allowance")
        lines.append(f"\n{what}: passes" + (f" ({warned} warning(s): {kept})" if warned else ""))
    parent = against or skill
    lines += [f"\nSize caps: the room a change of {parent} has", caps_text(room(Tree(parent), limits))]
    return (1 if failed else 0), "\n".join(lines)
