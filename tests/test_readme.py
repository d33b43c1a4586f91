"""The README stays true: short, its two commands the ones CI uses (every flag is in the generated reference:
tests/mutator/cli/test_reference.py)."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"^    (pip install -e '\.\[test\]'.*pytest.*)$", readme, re.M)
    assert command, "README.md lost its test command"
    assert command.group(1) in (ROOT / ".ci" / "run").read_text()


def test_the_readme_stays_short_and_the_site_builds_from_it() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for section in ("intro", "commands", "tour"):     # the site includes these (docs/index.md, tutorials/tour.md)
        assert f"<!-- --8<-- [start:{section}] -->" in readme and f"<!-- --8<-- [end:{section}] -->" in readme
