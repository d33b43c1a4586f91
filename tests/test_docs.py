"""The docs site stays whole (issue 51): every relative link of README.md and docs/ reaches a page (and its
anchor), every page is in mkdocs.yml's nav, the exit codes the code raises are in the table, and CI builds the
site strictly before the tests."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from tests.conftest import ROOT

DOCS = ROOT / "docs"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
SNIPPET = re.compile(r'^--8<-- "([^":]+):([\w-]+)"$', re.M)
UNLISTED = ("benchmarks/results/",)     # pages a bench writes; linked from its page, not listed one by one


def slug(heading: str) -> str:
    """Python-Markdown's toc slug (what mkdocs makes a heading's anchor)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def expanded(page: Path) -> str:
    """A page's text with its snippets (`--8<-- "README.md:tour"`) put in, as mkdocs renders it."""
    def section(match: re.Match) -> str:
        source = (ROOT / match.group(1)).read_text()
        start, end = f"<!-- --8<-- [start:{match.group(2)}] -->", f"<!-- --8<-- [end:{match.group(2)}] -->"
        assert start in source and end in source, f"{page}: snippet {match.group(0)} has no section"
        return source.split(start, 1)[1].split(end, 1)[0]
    return SNIPPET.sub(section, page.read_text())


def anchors(text: str) -> set[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return ({slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+?)\s*$", text, re.M)}
            | set(re.findall(r'id="([^"]+)"', text)))


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def broken_links(page: Path, text: str) -> list[str]:
    broken = []
    for match in LINK.finditer(re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z]+:", target):
            continue                                    # http:, https:, mailto:
        path, _, fragment = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(target)
        elif fragment and goal.suffix == ".md" and fragment not in anchors(expanded(goal)):
            broken.append(target)
    return broken


def test_every_relative_link_reaches_a_page_and_its_anchor() -> None:
    found = {str(page.relative_to(ROOT)): broken_links(page, expanded(page)) for page in [ROOT / "README.md",
                                                                                           *pages()]}
    assert {page: links for page, links in found.items() if links} == {}


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n\n## Its part\n")
    page = tmp_path / "b.md"
    text = "[ok](a.md) [ok](a.md#its-part) [gone](c.md) [no anchor](a.md#nowhere) [web](https://x.y/z)\n"
    assert broken_links(page, text) == ["c.md", "a.md#nowhere"]


def test_every_page_is_in_the_nav() -> None:
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M))
    on_disk = {str(page.relative_to(DOCS)) for page in pages()}
    assert listed - on_disk == set(), "mkdocs.yml lists pages that do not exist"
    assert sorted(p for p in on_disk - listed if not p.startswith(UNLISTED)) == [], "add them to mkdocs.yml nav"


def test_every_exit_code_the_code_raises_is_in_the_tables() -> None:
    import eval.errors as errors
    codes = {cls.exit_code for cls in vars(errors).values()
             if isinstance(cls, type) and issubclass(cls, errors.SkillMutatorError)}
    codes |= {0, 1, 5, 6, 130}                        # done, lint, --check's two, interrupted (mutator/cli/main.py)
    for page in (DOCS / "reference" / "exit-codes.md", ROOT / "README.md"):
        rows = set(re.findall(r"^\| (\d+) \|", page.read_text(), re.M))
        assert {str(code) for code in codes} <= rows, page.name


def test_ci_builds_the_site_strictly_before_the_tests() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    build = ci.index("mkdocs build --strict")
    assert build < ci.index("python -m pytest") and "pip install -q -e '.[docs]'" in ci[:build]
