"""Without --skill-dir on suites other than the demo's, a run refuses to start and names the flag; every start
line names the skill and its folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli


def own_suites(tmp_path: Path) -> tuple[Path, Path]:
    train, val = tmp_path / "my-train", tmp_path / "my-val"
    shutil.copytree(ROOT / "suites" / "clean-train", train)
    shutil.copytree(ROOT / "suites" / "clean-val", val)
    for folder in (train, val):   # a suite's frontmatter name is its folder's
        md = folder / "suite.md"
        md.write_text(md.read_text().replace("name: clean-", "name: my-", 1))
    return train, val


@pytest.mark.parametrize("mode", [(), ("--plan",), ("--aa", "2")], ids=["evolve", "plan", "aa"])
def test_no_skill_dir_on_your_suites_refuses(tmp_path: Path, mode: tuple[str, ...]) -> None:
    train, val = own_suites(tmp_path)
    data = tmp_path / "data"
    done = run_cli(*mode, "--suite", str(train), "--val", str(val), "--rounds", "1", "--replicates", "1",
                   "--data-dir", str(data), timeout=120)
    assert done.returncode == 2, done.stderr
    assert ("error: no --skill-dir given: the demo skill suites/csv-clean would be evolved on your suites "
            "my-train/my-val; pass --skill-dir PATH/TO/YOUR/SKILL") in done.stderr
    assert not (data / "mutator.db").exists()


def test_with_skill_dir_it_runs_and_the_start_line_names_the_skill(tmp_path: Path) -> None:
    train, val = own_suites(tmp_path)
    skill = ROOT / "suites" / "csv-clean"
    done = run_cli("--suite", str(train), "--val", str(val), "--skill-dir", str(skill), "--rounds", "0",
                   "--replicates", "1", "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert f"skill csv-clean from {skill}" in done.stderr
    again = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "0", "--replicates", "1",
                    "--data-dir", str(tmp_path / "demo"))   # the demo's own suites need no flag
    assert again.returncode == 0, again.stderr
    assert "New run run-" in again.stderr and "skill csv-clean from " in again.stderr
