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


# ---- safety gates: cheap textual checks on what the mutator wrote ----------------------------------
TEXT_SUFFIXES = {".md", ".txt", ".json", ".py", ".sh", ".yaml", ".yml", ".js", ".ts", ".toml", ".csv", ".html"}
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
INLINE_CODE_RE = re.compile(r"(`+)(?:(?!\1).)+?\1")
PLACEHOLDER_RES = (
    ("{{var}} template variable", re.compile(r"\{\{\s*[^{}\n]{0,60}?\s*\}\}")),
    ("[PLACEHOLDER] label", re.compile(r"\[(?:PLACEHOLDER|TBD|TBA|INSERT[^\]\n]*|FILL[ _]IN[^\]\n]*|YOUR[ _][^\]\n]*)\]"
                                       r"(?![(\[:])")),
    ("<...> template hole", re.compile(r"<(?:\.\.\.|…|[A-Za-z][A-Za-z0-9]*(?:[ _-][A-Za-z0-9]+)+|placeholder)>",
                                       re.IGNORECASE)),
)
LEFTOVER_RE = re.compile(r"\b(TODO|FIXME|XXX):")


@dataclass(frozen=True)
class GateLimits:
    """Caps of the safety gates (config: critic.maxSkillLines, critic.maxSkillBytes, critic.maxGrowth)."""
    max_lines: int = 500            # SKILL.md lines (the Agent Skills guidance)
    max_bytes: int = 262_144        # every file of the skill together
    max_growth: float = 0.20        # total bytes may grow at most this fraction over the parent's


def _text_files(skill: Path) -> list[tuple[Path, str]]:
    found = []
    for rel in list_files(skill):
        if rel.suffix.lower() in TEXT_SUFFIXES or rel.name == "SKILL.md":
            found.append((rel, (skill / rel).read_text(encoding="utf-8", errors="replace")))
    return found


def _total_bytes(skill: Path) -> int:
    return sum((skill / rel).stat().st_size for rel in list_files(skill))


def check_non_empty(candidate: Path) -> Check:
    skill_md = candidate / "SKILL.md"
    if not skill_md.is_file() or not skill_md.read_text(encoding="utf-8", errors="replace").strip():
        return _fail("non-empty", "SKILL.md is missing or empty")
    return _ok("non-empty")


def check_size(candidate: Path, limits: GateLimits) -> Check:
    skill_md = candidate / "SKILL.md"
    lines = len(skill_md.read_text(encoding="utf-8", errors="replace").splitlines()) if skill_md.is_file() else 0
    total = _total_bytes(candidate)
    problems = []
    if lines > limits.max_lines:
        problems.append(f"SKILL.md has {lines} lines, over the {limits.max_lines}-line cap; move detail into "
                        f"references/")
    if total > limits.max_bytes:
        problems.append(f"the skill holds {total} bytes, over the {limits.max_bytes}-byte cap")
    return _fail("size", "; ".join(problems)) if problems else _ok("size", f"{lines} lines, {total} bytes")


def check_growth(candidate: Path, parent: Path, limits: GateLimits) -> Check:
    before, after = _total_bytes(parent), _total_bytes(candidate)
    cap = int(before * (1 + limits.max_growth))
    growth = (after - before) / before if before else 0.0
    if before and after > cap:
        return _fail("growth", f"the skill grew {growth:+.0%} ({before} -> {after} bytes), over the "
                               f"+{limits.max_growth:.0%} cap per change; make a smaller change")
    return _ok("growth", f"{growth:+.1%}")


def unclosed_fences(text: str) -> list[int]:
    """Lines (1-based) opening a code fence that is never closed (CommonMark: same char, at least as long)."""
    opened: tuple[str, int] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE_RE.match(line)
        if not match:
            continue
        fence, info = match.groups()
        if opened is None:
            if fence[0] == "`" and "`" in info:
                continue      # a backtick fence's info string may not contain backticks: not a fence
            opened = (fence, number)
        elif fence[0] == opened[0][0] and len(fence) >= len(opened[0]) and not info.strip():
            opened = None
    return [opened[1]] if opened else []


def check_fences(candidate: Path) -> Check:
    problems = [f"{rel.as_posix()}:{line} opens a code fence that is never closed"
                for rel, text in _text_files(candidate) if rel.suffix.lower() == ".md"
                for line in unclosed_fences(text)]
    return _fail("fences", "; ".join(problems)) if problems else _ok("fences")


def prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) of Markdown outside fenced code, with inline code spans blanked."""
    kept, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE_RE.match(line)
        if match and (fence is None or (match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence))):
            fence = match.group(1) if fence is None else None
            continue
        if fence is None:
            kept.append((number, INLINE_CODE_RE.sub("``", line)))
    return kept


def check_placeholders(candidate: Path) -> Check:
    found = []
    for rel, text in _text_files(candidate):
        if rel.suffix.lower() != ".md":
            continue
        for number, line in prose(text):
            for what, pattern in PLACEHOLDER_RES:
                match = pattern.search(line)
                if match:
                    found.append(f"{rel.as_posix()}:{number} has a {what} {match.group(0)!r}")
    return _fail("placeholders", "; ".join(found[:10])) if found else _ok("placeholders")


def check_leftovers(candidate: Path) -> Check:
    found = [f"{rel.as_posix()}:{number} has a leftover {match.group(0)!r} label"
             for rel, text in _text_files(candidate)
             for number, line in enumerate(text.splitlines(), start=1)
             for match in [LEFTOVER_RE.search(line)] if match]
    return _fail("leftovers", "; ".join(found[:10])) if found else _ok("leftovers")


def safety_gates(candidate: Path, parent: Path, limits: GateLimits = GateLimits()) -> list[Check]:
    return [check_non_empty(candidate), check_size(candidate, limits), check_growth(candidate, parent, limits),
            check_fences(candidate), check_placeholders(candidate), check_leftovers(candidate)]


def review(candidate: Path, parent: Path, *, skill_name: str, limits: GateLimits = GateLimits()) -> list[Check]:
    """Every guard's row; the candidate passes only if every verdict is 'pass'."""
    return [check_identical(candidate, parent), check_frontmatter(candidate, skill_name),
            check_references(candidate), check_data_files(candidate), *safety_gates(candidate, parent, limits)]


def passed(checks: list[Check]) -> bool:
    return all(check.verdict == "pass" for check in checks)
