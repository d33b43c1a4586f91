"""Deterministic pre-evaluation guards (no LLM): a candidate that fails one is rejected unevaluated.

Every guard is a ratchet: it judges the change, not the parent. It fails a candidate only for a problem
its parent does not already have (a new broken link, a new unclosed fence, a size cap newly crossed). A
parent already over a size cap may grow within the growth allowance: that row says `warn` and passes. Each
guard yields a `{gate, verdict, reason}` row stored on the attempt. The critic reads only the candidate and
its parent genome, never a suite.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from skills_ref.errors import ParseError
from skills_ref.parser import parse_frontmatter
from skills_ref.validator import validate_metadata

from eval.snapshot import hash_tree
from mutator.critic.caps import GateLimits, growth_allowance, limits_from, line_allowance
from mutator.critic.text import (
    Problem,
    Tree,
    data_file_problems,
    fence_problems,
    leftover_problems,
    placeholder_problems,
    reference_problems,
    unclosed_fences,
)

__all__ = ["Check", "GateLimits", "limits_from", "review", "safety_gates", "passed", "lint",
           "unclosed_fences"]
SHOWN = 10   # problems spelled out in one row


@dataclass(frozen=True)
class Check:
    gate: str
    verdict: str   # "pass" | "warn" (passes, with a reason to read) | "fail" (rejects the candidate)
    reason: str

    def to_json(self) -> dict:
        return asdict(self)


def _ok(gate: str, reason: str = "") -> Check:
    return Check(gate, "pass", reason)


def _fail(gate: str, reason: str) -> Check:
    return Check(gate, "fail", reason)


def fresh(found: list[Problem], inherited: list[Problem]) -> list[Problem]:
    """The problems of `found` beyond those in `inherited`, as a multiset: two copies of a hole the parent
    has once is one new hole, and the new one is the copy on a line the parent does not have."""
    by_line = Counter((problem.key, problem.anchor) for problem in inherited)
    allowance = Counter(problem.key for problem in inherited)
    unmatched = []
    for problem in found:
        if by_line[(problem.key, problem.anchor)] > 0:
            by_line[(problem.key, problem.anchor)] -= 1
            allowance[problem.key] -= 1
        else:
            unmatched.append(problem)
    new = []
    for problem in unmatched:
        if allowance[problem.key] > 0:
            allowance[problem.key] -= 1
        else:
            new.append(problem)
    return new


def ratchet(gate: str, found: list[Problem], inherited: list[Problem] | None, ok: str = "") -> Check:
    """Fail for the problems the parent lacks; with no parent (a lint of one skill) every problem counts."""
    new = found if inherited is None else fresh(found, inherited)
    if new:
        more = f" (and {len(new) - SHOWN} more)" if len(new) > SHOWN else ""
        return _fail(gate, "; ".join(problem.message for problem in new[:SHOWN]) + more)
    kept = len(found) - len(new)
    return _ok(gate, f"{kept} problem(s) the parent already has, none new: "
                     + "; ".join(p.message for p in found[:3]) if kept else ok)


# ---- the guards -------------------------------------------------------------------------------------
def check_links(tree: Tree) -> Check:
    """A symlink that leaves the skill fails, whatever the parent had: it is never part of a skill."""
    if tree.links_out:
        named = "; ".join(f"{rel.as_posix()} -> {target}" for rel, target in tree.links_out.items())
        return _fail("links", f"symlink(s) leaving the skill: {named}; copy the file into the skill folder "
                              "or remove the link")
    return _ok("links", "no symlink leaves the skill")


def check_identical(candidate: Tree, parent: Tree) -> Check:
    if hash_tree(candidate.root) == hash_tree(parent.root):
        return _fail("changed", "identical to its parent: the mutator made no change")
    return _ok("changed")


def frontmatter_problems(tree: Tree, expected_name: str | None) -> list[Problem]:
    text = tree.texts.get(Path("SKILL.md"))
    if text is None:
        return [Problem(("missing",), "SKILL.md is missing")]
    try:
        metadata, body = parse_frontmatter(text)
    except ParseError as err:
        return [Problem(("parse",), f"SKILL.md frontmatter does not parse: {err}")]
    # A spec message carries counts ("1068 chars"); the key drops them so an edit elsewhere is not new.
    problems = [Problem(("spec", re.sub(r"\d+", "#", message)), message)
                for message in validate_metadata(metadata)]
    description = str(metadata.get("description", ""))
    if "<" in description or ">" in description:
        problems.append(Problem(("angle",), "description may not contain '<' or '>'"))
    if expected_name is not None and metadata.get("name") != expected_name:
        problems.append(Problem(("name", str(metadata.get("name"))),
                                f"name changed from {expected_name!r} to {metadata.get('name')!r}"))
    if not body.strip():
        problems.append(Problem(("body",), "SKILL.md body is empty"))
    return problems


def check_frontmatter(candidate: Tree, parent: Tree | None, expected_name: str | None) -> Check:
    return ratchet("frontmatter", frontmatter_problems(candidate, expected_name),
                   None if parent is None else frontmatter_problems(parent, expected_name))


def check_non_empty(candidate: Tree, parent: Tree | None) -> Check:
    def problems(tree: Tree) -> list[Problem]:
        text = tree.texts.get(Path("SKILL.md"), "")
        return [] if text.strip() else [Problem(("empty",), "SKILL.md is missing or empty")]
    return ratchet("non-empty", problems(candidate), None if parent is None else problems(parent))


def _size_clause(label: str, now: int, before: int | None, cap: int, unit: str, allowance: int,
                 fix: str = "") -> tuple[str, str]:
    """(verdict, why) of one cap: a cap newly crossed fails; a parent already over it may grow within the
    allowance (warn: a problem the parent already has), not past it (fail);
    ("pass", "") when under the cap."""
    if now <= cap:
        return "pass", ""
    if before is None or before <= cap:
        return "fail", f"{label.format(now)}, over the {cap}-{unit} cap{fix}"
    what = "SKILL.md lines" if unit == "line" else "bytes of text"
    if now <= before:
        return "pass", f"{what}: parent already over the cap ({before} > {cap}); not grown"
    if now - before > allowance:
        return "fail", (f"{label.format(now)}, up from {before} while already over the {cap}-{unit} cap: "
                        f"more than this change's allowance of {allowance} {unit}s{fix}")
    return "warn", (f"{what}: parent already over the cap ({before} > {cap}); grew by {now - before} within "
                    f"the allowance of {allowance}")


def check_size(candidate: Tree, parent: Tree | None, limits: GateLimits) -> Check:
    """SKILL.md lines and the skill's bytes of text against their caps, judged as a change of the parent."""
    lines, text = candidate.skill_md_lines, candidate.text_bytes
    clauses = [
        _size_clause("SKILL.md has {} lines", lines, parent.skill_md_lines if parent else None,
                     limits.max_lines, "line", line_allowance(parent, limits) if parent else 0,
                     "; move detail into references/"),
        _size_clause("the skill holds {} bytes of text", text, parent.text_bytes if parent else None,
                     limits.max_bytes, "byte", growth_allowance(parent, limits) if parent else 0)]
    verdicts = {verdict for verdict, _ in clauses}
    if "fail" in verdicts:
        return _fail("size", "; ".join(why for verdict, why in clauses if verdict == "fail"))
    binary = candidate.total_bytes - text
    detail = f"{lines} lines, {text} bytes of text" + (f" (+{binary} bytes of binary files, not counted)"
                                                         if binary else "")
    reason = "; ".join([detail, *(why for _, why in clauses if why)])
    return Check("size", "warn" if "warn" in verdicts else "pass", reason)


def check_growth(candidate: Tree, parent: Tree, limits: GateLimits) -> Check:
    before, after = parent.total_bytes, candidate.total_bytes
    allowance = growth_allowance(parent, limits)
    grown = after - before
    if grown > allowance:
        return _fail("growth", f"the skill grew by {grown} bytes ({before} -> {after}), over this change's "
                               f"allowance of {allowance} bytes (max({limits.max_growth:.0%} of the parent's "
                               f"{parent.text_bytes} text bytes, "
                               f"{limits.min_growth_bytes})); make a smaller change")
    return _ok("growth", f"{grown:+d} bytes of an allowance of {allowance}")


def safety_gates(candidate: Path | Tree, parent: Path | Tree,
                 limits: GateLimits = GateLimits()) -> list[Check]:
    cand, par = _tree(candidate), _tree(parent)
    return [check_non_empty(cand, par), check_size(cand, par, limits), check_growth(cand, par, limits),
            ratchet("fences", fence_problems(cand), fence_problems(par)),
            ratchet("placeholders", placeholder_problems(cand), placeholder_problems(par)),
            ratchet("leftovers", leftover_problems(cand), leftover_problems(par))]


def review(candidate: Path, parent: Path, *, skill_name: str,
           limits: GateLimits = GateLimits()) -> list[Check]:
    """Every guard's row; the candidate passes unless a verdict is 'fail' ('warn' passes)."""
    cand, par = Tree(candidate), Tree(parent)
    return [check_identical(cand, par), check_frontmatter(cand, par, skill_name), check_links(cand),
            ratchet("references", reference_problems(cand), reference_problems(par)),
            ratchet("data-files", data_file_problems(cand), data_file_problems(par)),
            *safety_gates(cand, par, limits)]


def lint(skill: Path, limits: GateLimits = GateLimits()) -> list[Check]:
    """One skill alone: the Agent Skills spec via skills-ref decides (fail); the critic's textual guards
    are shown as warnings, since a candidate made from this skill is judged only on what it adds."""
    from skills_ref.validator import validate
    problems = validate(skill)
    rows = [Check("spec", "fail", "; ".join(problems)) if problems else _ok("spec", "skills-ref: valid")]
    tree = Tree(skill)
    # a fail alone too: a link out of the skill is no problem a candidate may keep
    rows.append(check_links(tree))
    # the spec's own problems are the row above
    extra = [problem for problem in frontmatter_problems(tree, None) if problem.key[0] != "spec"]
    for check in (ratchet("frontmatter", extra, None), check_non_empty(tree, None),
                  check_size(tree, None, limits), ratchet("references", reference_problems(tree), None),
                  ratchet("data-files", data_file_problems(tree), None),
                  ratchet("fences", fence_problems(tree), None),
                  ratchet("placeholders", placeholder_problems(tree), None),
                  ratchet("leftovers", leftover_problems(tree), None)):
        rows.append(check if check.verdict == "pass" else Check(check.gate, "warn", check.reason))
    return rows


def _tree(skill: Path | Tree) -> Tree:
    return skill if isinstance(skill, Tree) else Tree(skill)


def passed(checks: list[Check]) -> bool:
    return all(check.verdict != "fail" for check in checks)
