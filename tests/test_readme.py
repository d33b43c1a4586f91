"""The README stays true: every CLI flag is documented (in the docs reference), and the two commands are the ones
CI uses."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def test_every_flag_is_in_the_reference() -> None:
    import importlib.util
    spec = importlib.util.spec_from_file_location("run_cli_module", ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    reference = (ROOT / "docs" / "reference" / "cli.md").read_text()
    flags = {opt for action in module.parser()._actions for opt in action.option_strings if opt.startswith("--")}
    missing = sorted(flag for flag in flags - {"--help"} if f"`{flag}" not in reference)
    assert not missing, f"flags missing from docs/reference/cli.md: {missing}"


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
