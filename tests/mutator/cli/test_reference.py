"""The generated reference (issue 51): docs/reference/cli.md, config.md and store.md hold every flag, subcommand,
config key and table, and are exactly what `python -m mutator.cli.reference` writes (a hand edit fails here)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mutator.cli import reference
from mutator.cli.flags import parser
from mutator.cli.parse import subparser
from mutator.cli.subcommands import SUBCOMMANDS
from mutator.config import KEYS, ROOT
from mutator.settings.meanings import MEANINGS
from mutator.store import schema

PAGES = ROOT / "docs" / "reference"


def test_the_pages_on_disk_are_what_the_generator_writes() -> None:
    stale = [str(path.relative_to(ROOT)) for path, text in reference.expected().items() if path.read_text() != text]
    assert stale == [], f"run `python -m mutator.cli.reference` and commit: {stale}"
    assert reference.main(["--check"]) == 0


def test_every_flag_and_subcommand_is_in_the_cli_reference() -> None:
    page = (PAGES / "cli.md").read_text()
    flags = {option for action in parser()._actions for option in action.option_strings} - {"-h", "--help"}
    for command in SUBCOMMANDS:
        flags |= {o for a in subparser(command)._actions for o in a.option_strings if o.startswith("--")}
        assert f"\n### {command.name}\n" in page, command.name
    missing = sorted(flag for flag in flags - {"--help"}
                     if f'<span id="flag-{flag[2:]}"></span>' not in page or f"`{flag}`" not in page)
    assert missing == []


def test_every_config_key_is_in_the_config_reference_with_its_meaning() -> None:
    page = (PAGES / "config.md").read_text()
    for key in KEYS:
        row = next((line for line in page.splitlines() if line.startswith(f"| `{key.path}` |")), None)
        assert row, f"{key.path} missing from docs/reference/config.md"
        assert key.env in row
        meaning = key.help if key.help is not None else MEANINGS.get(key.path)
        assert meaning, f"{key.path} has no meaning: give it a flag help or a line in mutator/settings/meanings.py"
    assert set(MEANINGS) <= {key.path for key in KEYS}, "meanings.py explains a key that is not declared"
    assert set(MEANINGS).isdisjoint({key.path for key in KEYS if key.help is not None}), "explained twice"


def test_every_table_and_migration_is_in_the_store_reference() -> None:
    page = (PAGES / "store.md").read_text()
    hand, generated = page.split(reference.BEGIN)
    for table, columns in schema.tables().items():
        assert f"### `{table}`" in generated and f"| `{table}`" in hand.replace(", `", "| `"), table
        assert all(f"`{name}`" in generated for name, _ in columns)
    assert all(f"`{name}`" in generated.split(reference.END)[1] for name in schema.migration_names())


def test_a_hand_edit_of_a_generated_block_is_caught(tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(PAGES, tmp_path / "docs" / "reference")
    page = tmp_path / "docs" / "reference" / "config.md"
    page.write_text(page.read_text().replace("| `rounds` | int | `6` |", "| `rounds` | int | `8` |"))
    stale = [path.name for path, text in reference.expected(tmp_path).items() if path.read_text() != text]
    assert stale == ["config.md"]
    shutil.copy(ROOT / "config.json", tmp_path / "config.json")
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    assert reference.main(["--check"]) == 1
    assert reference.main([]) == 0 and reference.main(["--check"]) == 0     # rewritten
    assert "| `rounds` | int | `6` |" in page.read_text()


def test_a_page_without_its_markers_is_refused(tmp_path: Path) -> None:
    shutil.copytree(PAGES, tmp_path / "docs" / "reference")
    page = tmp_path / "docs" / "reference" / "store.md"
    page.write_text(page.read_text().replace(reference.END, ""))
    try:
        reference.expected(tmp_path)
    except SystemExit as stop:
        assert "store.md lost its generated block" in str(stop)
    else:
        raise AssertionError("a page without its END marker was accepted")
