"""Deterministic pre-evaluation guards (no LLM): a candidate that fails one is rejected unevaluated.

Each guard yields a `{gate, verdict, reason}` row stored on the attempt. The critic reads only the
candidate and its parent genome, never a suite.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from skills_ref.errors import ParseError
from skills_ref.parser import parse_frontmatter
from skills_ref.validator import validate_metadata

from eval.snapshot import hash_tree, list_files

LINK_RE = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
CODE_NAME_RE = re.compile(r"`([^`\s]+)`")
RESOURCE_SUFFIXES = {".md", ".json", ".py", ".sh", ".yaml", ".yml", ".txt", ".js", ".toml"}
RESOURCE_DIRS = ("scripts/", "references/", "assets/")


@dataclass(frozen=True)
class Check:
    gate: str
    verdict: str   # "pass" | "fail"
    reason: str

    def to_json(self) -> dict:
        return asdict(self)


def _ok(gate: str, reason: str = "") -> Check:
    return Check(gate, "pass", reason)


def _fail(gate: str, reason: str) -> Check:
    return Check(gate, "fail", reason)


def check_identical(candidate: Path, parent: Path) -> Check:
    if hash_tree(candidate) == hash_tree(parent):
        return _fail("changed", "identical to its parent: the mutator made no change")
    return _ok("changed")


def check_frontmatter(candidate: Path, expected_name: str) -> Check:
    skill_md = candidate / "SKILL.md"
    if not skill_md.is_file():
        return _fail("frontmatter", "SKILL.md is missing")
    try:
        metadata, body = parse_frontmatter(skill_md.read_text(encoding="utf-8"))
    except (ParseError, UnicodeDecodeError) as err:
        return _fail("frontmatter", f"SKILL.md frontmatter does not parse: {err}")
    problems = validate_metadata(metadata)
    description = str(metadata.get("description", ""))
    if "<" in description or ">" in description:
        problems.append("description may not contain '<' or '>'")
    if metadata.get("name") != expected_name:
        problems.append(f"name changed from {expected_name!r} to {metadata.get('name')!r}")
    if not body.strip():
        problems.append("SKILL.md body is empty")
    if problems:
        return _fail("frontmatter", "; ".join(problems))
    return _ok("frontmatter")


def _inside(root: Path, target: Path) -> bool:
    try:
        target.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def referenced_paths(text: str) -> tuple[list[str], list[str]]:
    """(markdown link targets, backticked names that look like skill resources) in one document."""
    links = []
    for match in LINK_RE.finditer(text):
        target = (match.group(1) or match.group(2) or "").split("#")[0]
        if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            links.append(target)
    names = [name for name in CODE_NAME_RE.findall(text)
             if name.startswith(RESOURCE_DIRS) or (Path(name).suffix in RESOURCE_SUFFIXES and "/" not in name
                                                   and not name.startswith(("-", "*", "$")))]
    return links, names


def check_references(candidate: Path) -> Check:
    broken: list[str] = []
    for rel in list_files(candidate):
        if rel.suffix != ".md":
            continue
        links, names = referenced_paths((candidate / rel).read_text(encoding="utf-8", errors="replace"))
        for target in links:
            resolved = (candidate / rel).parent / target
            if not _inside(candidate, resolved) or not resolved.exists():
                broken.append(f"{rel.as_posix()} links to {target} (not in the skill)")
        for name in names:
            if not (candidate / name).exists() and not ((candidate / rel).parent / name).exists():
                broken.append(f"{rel.as_posix()} names `{name}` (not in the skill)")
    if broken:
        return _fail("references", "; ".join(sorted(set(broken))))
    return _ok("references")


def check_data_files(candidate: Path) -> Check:
    problems = []
    for rel in list_files(candidate):
        if rel.suffix != ".json":
            continue
        try:
            data = json.loads((candidate / rel).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            problems.append(f"{rel.as_posix()} does not parse as JSON: {err}")
            continue
        if rel.name == "rules.json":
            rules = data.get("rules") if isinstance(data, dict) else data
            if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
                problems.append(f"{rel.as_posix()} must be a list of rule objects (or {{\"rules\": [...]}})")
    if problems:
        return _fail("data-files", "; ".join(problems))
    return _ok("data-files")


def review(candidate: Path, parent: Path, *, skill_name: str) -> list[Check]:
    """Every guard's row; the candidate passes only if every verdict is 'pass'."""
    return [check_identical(candidate, parent), check_frontmatter(candidate, skill_name),
            check_references(candidate), check_data_files(candidate)]


def passed(checks: list[Check]) -> bool:
    return all(check.verdict == "pass" for check in checks)
