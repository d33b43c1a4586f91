"""The site's hook (docs/hooks/lists.py): GitHub-style lists render as lists, nested where GitHub nests them, and
a page's `--8<-- "README.md:SECTION"` line becomes that section of the README."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("docs_lists_hook", ROOT / "docs" / "hooks" / "lists.py")
hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hook)

GITHUB = """Some text:
- one
  - one's child
  continued
- two

1. **First.** A step
   - its detail

   Its second paragraph.
2. Second

After the list.

```
- not a list
  kept as written
```
"""


def test_github_lists_render_as_github_renders_them() -> None:
    markdown = pytest.importorskip("markdown")      # the docs extra (.ci/run installs it)
    html = markdown.markdown(hook.lists_for_python_markdown(GITHUB), extensions=["fenced_code"])
    assert "<p>Some text:</p>\n<ul>" in html                                  # a list, not a paragraph
    assert "<p>one</p>\n<ul>\n<li>one's child\ncontinued</li>\n</ul>" in html   # nested, its line joined
    assert "<p><strong>First.</strong> A step</p>\n<ul>\n<li>its detail</li>" in html
    assert "<p>Its second paragraph.</p>\n</li>\n<li>\n<p>Second</p>" in html    # in step 1; step 2 its own
    assert "<p>After the list.</p>" in html
    assert "<code>- not a list\n  kept as written\n</code>" in html            # a fence is left alone
    assert markdown.markdown(GITHUB).count("<li>") < html.count("<li>")       # without the hook: fewer items


def test_a_page_gets_the_readme_section_it_names(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# R\n<!-- --8<-- [start:tour] -->\n1. Run it.\n<!-- --8<-- [end:tour] -->\n")
    assert hook.included('# Tour\n\n--8<-- "README.md:tour"\n', tmp_path) == "# Tour\n\n1. Run it.\n"
    with pytest.raises(ValueError, match="has no section 'gone'"):
        hook.included('--8<-- "README.md:gone"\n', tmp_path)
