"""A mkdocs hook: the site renders a page as GitHub renders it. It puts in the README's sections a page names
(`--8<-- "README.md:tour"`, between the README's `<!-- --8<-- [start:tour] -->` and `[end:tour]` marks), and
it turns GitHub's lists into Python-Markdown's: a list right under a paragraph line gets the blank line
Python-Markdown needs, and sub-items and continuations indented by 2 or 3 spaces get twice that (4 per level).
The pages stay plain GitHub markdown; only what mkdocs renders is adjusted."""

from __future__ import annotations

import re
from pathlib import Path

ITEM = re.compile(r"^(?:[-*+]|\d+\.) ")
FENCE = re.compile(r"^\s*(```|~~~)")
SNIPPET = re.compile(r'^--8<-- "([^":]+):([\w-]+)"$', re.M)


def included(markdown: str, root: Path) -> str:
    """`markdown` with each `--8<-- "FILE:SECTION"` line replaced by that section of FILE (under root)."""
    def section(match: re.Match) -> str:
        text = (root / match.group(1)).read_text(encoding="utf-8")
        start, end = f"<!-- --8<-- [start:{match.group(2)}] -->", f"<!-- --8<-- [end:{match.group(2)}] -->"
        if start not in text or end not in text:
            raise ValueError(f"{match.group(0)}: {match.group(1)} has no section {match.group(2)!r}")
        return text.split(start, 1)[1].split(end, 1)[0].strip("\n")
    return SNIPPET.sub(section, markdown)


def still_in_list(lines: list[str], index: int) -> bool:
    """After a blank line: the list goes on when the next text is indented or another item."""
    following = next((line for line in lines[index + 1:] if line.strip()), "")
    return following.startswith(" ") or bool(ITEM.match(following))


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def lists_for_python_markdown(markdown: str) -> str:
    lines = markdown.split("\n")
    out: list[str] = []
    in_list = in_fence = False
    for index, line in enumerate(lines):
        if FENCE.match(line) and not in_list:
            in_fence = not in_fence
            out.append(line)
            continue
        if in_fence:
            out.append(line)
            continue
        if not line.strip():
            in_list = in_list and still_in_list(lines, index)
        elif ITEM.match(line) or in_list and ITEM.match(line.lstrip(" ")):
            above = lines[index - 1] if index else ""
            text = above.lstrip(" ")
            if text.strip() and not ITEM.match(text) and not text.startswith(("|", "<")):
                out.append("")                       # a paragraph line above: Python-Markdown needs a gap
            in_list = True
        if in_list and line.startswith(" ") and line.strip():
            line = " " * (indent_of(line) * 2) + line.lstrip(" ")   # 2 (or 3) spaces a level -> 4 (or 6)
        elif in_list and line.strip() and not ITEM.match(line) and out and not out[-1].strip():
            in_list = False                          # text at the margin after a gap: the list is over
        out.append(line)
    return "\n".join(out)


def on_page_markdown(markdown: str, config, **_: object) -> str:
    return lists_for_python_markdown(included(markdown, Path(config["config_file_path"]).parent))
