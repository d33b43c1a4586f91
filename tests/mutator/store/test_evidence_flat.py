"""Staging and its tamper snapshots touch each staged file once and cheaply (issue 28): a stored file whose mode
something widened is stored anew (staging no longer re-walks stored files to chmod them); the snapshot walk names
exactly what pathlib's walk named; cell copies keep the grader's file modes; redaction reads only what may hold a
secret and still redacts what the text rule would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval.redact import REDACTED, redact, redact_tree
from eval.snapshot import copy_file, list_files
from mutator.round import tamper
from mutator.store.evidence import EvidenceStore, link


def test_a_stored_file_made_writable_is_stored_anew_read_only(tmp_path: Path) -> None:
    store, made = EvidenceStore(tmp_path), []
    first = store.diff("p", "g", lambda p, g: made.append(1) or "the diff\n")
    first.chmod(0o644)   # a mutator without a sandbox chmods a linked diff and leaves its bytes
    again = store.diff("p", "g", lambda p, g: made.append(1) or "the diff\n")
    link(again, tmp_path / "ws" / "history" / "round-1.diff")   # its folder is new: made by link
    shown = tmp_path / "ws" / "history" / "round-1.diff"
    assert len(made) == 2 and oct(shown.stat().st_mode & 0o777) == "0o444" and shown.read_text() == "the diff\n"


def test_the_snapshot_names_every_entry_but_the_allowed_and_pycache(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel in ("skill/SKILL.md", "result.json", "history/ledger.md", "evidence/skill/x.md", "a/__pycache__/m.pyc",
                "a/b/c.txt"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(rel)
    (ws / "outside").mkdir()
    (ws / "linked").symlink_to(ws / "outside")      # a symlinked folder: named by its target, not walked
    (ws / "outside" / "f").write_text("x")
    state = tamper._tree(ws, "W", allowed=tamper.MAY_WRITE)
    assert sorted(state) == ["W/a", "W/a/b", "W/a/b/c.txt", "W/evidence", "W/evidence/skill", "W/evidence/skill/x.md",
                             "W/history", "W/history/ledger.md", "W/linked", "W/outside", "W/outside/f"]
    assert state["W/linked"] == f"-> {ws / 'outside'}" and state["W/a"] == "<dir>"
    (ws / "evidence" / "skill" / "x.md").write_text("forged")   # a nested `skill` is not the editable skill/
    assert tamper.changed(state, tamper._tree(ws, "W", allowed=tamper.MAY_WRITE)) == ["W/evidence/skill/x.md"]


def test_list_files_skips_excluded_parts_symlinks_and_what_is_below_a_symlinked_folder(tmp_path: Path) -> None:
    for rel in ("SKILL.md", "scripts/run.py", "scripts/__pycache__/run.cpython-311.pyc", "x.pyc", "evals/e.json",
                "deep/node_modules/m.js", "deep/notes~", "deep/a.txt", "real/r.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    (tmp_path / "link.md").symlink_to(tmp_path / "SKILL.md")
    (tmp_path / "linkdir").symlink_to(tmp_path / "real")
    assert [p.as_posix() for p in list_files(tmp_path)] == ["SKILL.md", "deep/a.txt", "real/r.txt", "scripts/run.py"]


def test_copy_file_copies_bytes_and_sets_the_mode(tmp_path: Path) -> None:
    (tmp_path / "src").write_bytes(b"\x00\x01grader" * 1000)
    copy_file(tmp_path / "src", tmp_path / "dst", 0o755)
    copy_file(str(tmp_path / "src"), str(tmp_path / "plain"))
    assert (tmp_path / "dst").read_bytes() == (tmp_path / "src").read_bytes()
    assert oct((tmp_path / "dst").stat().st_mode & 0o777) == "0o755" and (tmp_path / "plain").stat().st_size == 8000


@pytest.mark.parametrize("text", [
    "key sk-ant-abcdefghij in the stream\n",
    "plain text, nothing secret\n",
    "a value: a-very-secret-value-123 here\n",
    "é" + "sk-" + "a" * 40 + "\n",        # a non-ASCII word character before the shape: the text rule keeps it
    "x sk-" + "b" * 40 + " y\n",
])
def test_redaction_rewrites_exactly_what_the_text_rule_changes(tmp_path: Path, text: str) -> None:
    env = {"MY_API_KEY": "a-very-secret-value-123"}
    (tmp_path / "cell" / "work").mkdir(parents=True)
    (tmp_path / "cell" / "work" / "out.txt").write_text(text, encoding="utf-8")
    (tmp_path / "cell" / "bin").write_bytes(b"\0sk-ant-abcdefghij")   # binary: left
    os.symlink(tmp_path / "cell" / "work" / "out.txt", tmp_path / "cell" / "alias")   # never followed
    changed = redact_tree(tmp_path / "cell", env)
    expected = redact(text, env)
    assert (tmp_path / "cell" / "work" / "out.txt").read_text(encoding="utf-8") == expected
    assert changed == ([tmp_path / "cell" / "work" / "out.txt"] if expected != text else [])
    assert (tmp_path / "cell" / "bin").read_bytes() == b"\0sk-ant-abcdefghij"
    assert (REDACTED in expected) == (text != expected)
