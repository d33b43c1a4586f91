"""The critic on a skill set (eval/skill_set.py): the set changed, in one member only, nothing outside its
members, no member added or removed; then every guard of guards.review on each member against its parent's
copy (rows named `<member>: <gate>`), the `changed` row of an untouched member left out.
"""

from __future__ import annotations

from pathlib import Path

from eval.skill_set import SET_DIR, members, touched
from eval.snapshot import hash_tree, list_files
from mutator.critic.caps import GateLimits
from mutator.critic.guards import Check, review


def changed_paths(candidate: Path, parent: Path) -> list[str]:
    """The files added, removed or edited between two genomes (relative, posix)."""
    cand, par = set(list_files(candidate)), set(list_files(parent))
    return sorted(rel.as_posix() for rel in cand ^ par | {rel for rel in cand & par
                                                          if (candidate / rel).read_bytes()
                                                          != (parent / rel).read_bytes()})


def review_set(candidate: Path, parent: Path, *, limits: GateLimits = GateLimits()) -> list[Check]:
    """The rows of a candidate skill set against its parent set (see the module's docstring)."""
    names, parent_names = [m.name for m in members(candidate)], [m.name for m in members(parent)]
    if hash_tree(candidate) == hash_tree(parent):
        return [Check("changed", "fail", "identical to its parent: the mutator made no change")]
    paths = changed_paths(candidate, parent)
    outside = [p for p in paths if not (len(Path(p).parts) > 2 and Path(p).parts[0] == SET_DIR)]
    hit = touched(paths)
    rows = []
    if names != parent_names:
        rows.append(Check("set", "fail", f"the set's skills changed from {', '.join(parent_names)} to "
                                         f"{', '.join(names) or 'none'}; edit a skill, never add or remove "
                                         "one"))
    elif outside:
        rows.append(Check("set", "fail", f"files outside the set's skills: {', '.join(outside[:5])}; every "
                                         f"file belongs in {SET_DIR}/<skill>/"))
    elif len(hit) > 1:
        rows.append(Check("set", "fail", f"one change per candidate: it edits {len(hit)} skills "
                                         f"({', '.join(hit)}); change one of them"))
    else:
        rows.append(Check("set", "pass", f"changes {hit[0]}"))
    for name in sorted(set(names) & set(parent_names)):
        for check in review(candidate / SET_DIR / name, parent / SET_DIR / name, skill_name=name,
                            limits=limits):
            if check.gate == "changed" and name not in hit:
                continue
            rows.append(Check(f"{name}: {check.gate}", check.verdict, check.reason))
    return rows
