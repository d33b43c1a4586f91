"""What the critic reads in a skill's files: a loaded tree, and the problems each textual guard finds.

Pure: every function takes file contents and returns Problems keyed without line numbers, so the
same problem is recognised in a parent and in a candidate that moved it. Never touches the store.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from eval.snapshot import list_files

# Suffixes always read as text; a file with another suffix is text when it holds no NUL byte and is UTF-8.
TEXT_SUFFIXES = {".md", ".txt", ".json", ".py", ".sh", ".yaml", ".yml", ".js", ".ts", ".toml", ".csv",
                 ".html"}
RESOURCE_DIRS = ("scripts", "references", "assets")
LINK_RE = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
# A relative path token: not inside a longer path or URL, ending where the path ends (a sentence's full
# stop is not part of it), and not a glob or template (`scripts/*.py`, `assets/<name>.png`).
PATH_TOKEN_RE = re.compile(r"(?<![\w./~:@$-])([A-Za-z0-9_][\w.-]*/[\w./-]*[\w-])(?!\.?[\w/*{}<>$%-])")
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
INLINE_CODE_RE = re.compile(r"(`+)(?:(?!\1).)+?\1")
PLACEHOLDER_RES = (
    ("{{var}} template variable", re.compile(r"\{\{\s*[^{}\n]{0,60}?\s*\}\}")),
    ("[PLACEHOLDER] label",
     re.compile(r"\[(?:PLACEHOLDER|TBD|TBA|INSERT[^\]\n]*|FILL[ _]IN[^\]\n]*|YOUR[ _][^\]\n]*)\]"
                                       r"(?![(\[:])")),
    ("<...> template hole",
     re.compile(r"<(?:\.\.\.|…|[A-Za-z][A-Za-z0-9]*(?:[ _-][A-Za-z0-9]+)+|placeholder)>",
                                       re.IGNORECASE)),
)
LEFTOVER_RE = re.compile(r"\b(TODO|FIXME|XXX):")
TOP = PurePosixPath(".")


def utf8_problem(path: Path) -> str | None:
    """Why a text file every tool reads as UTF-8 (SKILL.md) is not, naming it and the fix; None when it is."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        return f"{path}: not UTF-8 text (byte {err.start} is 0x{err.object[err.start]:02x}); save it as UTF-8"
    return None


@dataclass(frozen=True)
class Problem:
    key: tuple      # what the problem is, by file and content (never a line number, which an edit shifts)
    message: str    # what the row says, with the line number
    anchor: str = ""  # the line it is on: of two copies of a problem, the one on a line the parent has is old


class Tree:
    """A skill folder read once: every file's bytes, which of them are text, and the text."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = {rel: (root / rel).read_bytes() for rel in list_files(root)}

    @cached_property
    def texts(self) -> dict[Path, str]:
        found = {}
        for rel, data in self.files.items():
            if rel.suffix.lower() in TEXT_SUFFIXES or rel.name == "SKILL.md":
                found[rel] = data.decode("utf-8", errors="replace")
            elif b"\0" not in data[:8192]:
                try:
                    found[rel] = data.decode("utf-8")
                except UnicodeDecodeError:
                    pass  # binary: a font, an image, an office template
        return found

    def markdown(self) -> list[tuple[Path, str]]:
        return [(rel, text) for rel, text in self.texts.items() if rel.suffix.lower() == ".md"]

    @property
    def total_bytes(self) -> int:
        return sum(len(data) for data in self.files.values())

    @property
    def text_bytes(self) -> int:
        return sum(len(self.files[rel]) for rel in self.texts)

    @property
    def skill_md_lines(self) -> int:
        text = self.texts.get(Path("SKILL.md"))
        return len(text.splitlines()) if text is not None else 0

    def exists(self, rel: PurePosixPath) -> bool:
        """A file or folder inside the skill (paths that climb out of it never exist)."""
        parts: list[str] = []
        for part in rel.parts:
            if part == "..":
                if not parts:
                    return False
                parts.pop()
            elif part not in (".", ""):
                parts.append(part)
        return not parts or "/".join(parts) in self.entries

    @cached_property
    def links_out(self) -> dict[Path, Path]:
        """Symlinks whose target is outside the skill (relative path -> where they point): a skill is copied
        into cells and deployed as a folder, so such a link would hand an agent a file of this machine."""
        root = self.root.resolve()
        found = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    found[path.relative_to(self.root)] = target
        return found

    @cached_property
    def entries(self) -> set[str]:
        """Every file and every folder holding one, as POSIX paths relative to the root."""
        found = set()
        for rel in self.files:
            posix = PurePosixPath(rel.as_posix())
            found.add(str(posix))
            found.update(str(parent) for parent in posix.parents if str(parent) != ".")
        return found

    def folders(self, under: PurePosixPath = TOP) -> set[str]:
        """Names of the folders directly under a folder of the skill (the root by default)."""
        found = set()
        for rel in self.files:
            posix = PurePosixPath(rel.as_posix())
            if posix.is_relative_to(under) and len(posix.relative_to(under).parts) > 1:
                found.add(posix.relative_to(under).parts[0])
        return found


# ---- references -------------------------------------------------------------------------------------
def link_targets(text: str) -> list[str]:
    """Relative markdown link targets (no URLs, no bare anchors) of one document."""
    found = []
    for match in LINK_RE.finditer(text):
        target = (match.group(1) or match.group(2) or "").split("#")[0]
        if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target,
                                   re.IGNORECASE) and not target.startswith("/"):
            found.append(target)
    return found


def resource_paths(text: str, folders: set[str]) -> list[str]:
    """Paths into the skill's own folders named anywhere in a document: `scripts/…`, `references/…`,
    `assets/…`, or a path whose first folder is one the skill (or the document's folder) has. A bare
    file name (`fields.json`) is not one: it is as often a file the skill tells the agent to write."""
    found = []
    for match in PATH_TOKEN_RE.finditer(text):
        token = match.group(1)
        if token.split("/")[0] in RESOURCE_DIRS or token.split("/")[0] in folders:
            found.append(token)
    return found


def reference_problems(tree: Tree) -> list[Problem]:
    problems = []
    for rel, text in tree.markdown():
        here = PurePosixPath(rel.as_posix()).parent
        for target in link_targets(text):
            if not tree.exists(here / target):
                problems.append(Problem((rel.as_posix(), "link", target),
                                        f"{rel.as_posix()} links to {target} (not in the skill)"))
        for token in resource_paths(LINK_RE.sub(" ", text), tree.folders() | tree.folders(here)):
            # links: above
            if not tree.exists(PurePosixPath(token)) and not tree.exists(here / token):
                problems.append(Problem((rel.as_posix(), "path", token),
                                        f"{rel.as_posix()} names `{token}` (not in the skill)"))
    return problems


def data_file_problems(tree: Tree) -> list[Problem]:
    problems = []
    for rel, data in tree.files.items():
        if rel.suffix != ".json":
            continue
        try:
            parsed = json.loads(data.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            problems.append(Problem((rel.as_posix(), "json"),
                                    f"{rel.as_posix()} does not parse as JSON: {err}"))
            continue
        if rel.name == "rules.json":
            rules = parsed.get("rules") if isinstance(parsed, dict) else parsed
            if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
                problems.append(Problem((rel.as_posix(), "rules"), f"{rel.as_posix()} must be a list of rule "
                                                                   f"objects (or {{\"rules\": [...]}})"))
    return problems


# ---- fences, placeholders, leftovers -----------------------------------------------------------------
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


def fence_problems(tree: Tree) -> list[Problem]:
    problems = []
    for rel, text in tree.markdown():
        lines = text.splitlines()
        for number in unclosed_fences(text):
            problems.append(Problem((rel.as_posix(), "fence", lines[number - 1].strip()),
                                    f"{rel.as_posix()}:{number} opens a code fence that is never closed"))
    return problems


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


def placeholder_problems(tree: Tree) -> list[Problem]:
    problems = []
    for rel, text in tree.markdown():
        for number, line in prose(text):
            for what, pattern in PLACEHOLDER_RES:
                match = pattern.search(line)
                if match:
                    problems.append(Problem((rel.as_posix(), what, match.group(0)),
                                            f"{rel.as_posix()}:{number} has a {what} {match.group(0)!r}",
                                            line.strip()))
    return problems


def leftover_problems(tree: Tree) -> list[Problem]:
    return [Problem((rel.as_posix(), "leftover", line.strip()),
                    f"{rel.as_posix()}:{number} has a leftover {match.group(0)!r} label")
            for rel, text in tree.texts.items()
            for number, line in enumerate(text.splitlines(), start=1)
            for match in [LEFTOVER_RE.search(line)] if match]
