"""The staged-evidence store: each diff and rollout is made once and linked into every workspace; a stored file
something wrote is stored anew; the reader lists what a workspace was shown; tamper and redaction still see writes."""

from __future__ import annotations

import os
from pathlib import Path

from eval.redact import REDACTED, redact_tree
from mutator.round import tamper
from mutator.store.evidence import EvidenceStore, link, staged, untouched, workspace_dir


def test_a_diff_is_made_once_and_every_workspace_links_the_same_file(tmp_path: Path) -> None:
    store, made = EvidenceStore(tmp_path), []

    def make(parent: str, genome: str) -> str:
        made.append((parent, genome))
        return f"--- {parent}\n+++ {genome}\n"
    for round_no in (1, 2, 3):
        link(store.diff("p" * 64, "g" * 64, make), tmp_path / f"round-{round_no}" / "history" / "round-1.diff")
    assert made == [("p" * 64, "g" * 64)]
    shown = [tmp_path / f"round-{r}" / "history" / "round-1.diff" for r in (1, 2, 3)]
    assert {p.read_text() for p in shown} == {f"--- {'p' * 64}\n+++ {'g' * 64}\n"}
    assert len({p.stat().st_ino for p in shown}) == 1 and shown[0].stat().st_nlink == 4   # three links + the store
    assert all(untouched(p) for p in shown) and oct(shown[0].stat().st_mode & 0o777) == "0o444"


def test_a_stored_file_something_wrote_is_stored_anew_and_tamper_names_the_write(tmp_path: Path) -> None:
    store, made = EvidenceStore(tmp_path), []
    workspace = tmp_path / "ws"
    (workspace / "skill").mkdir(parents=True)
    link(store.diff("p", "g", lambda p, g: made.append(1) or "the diff\n"), workspace / "history" / "round-1.diff")
    before = tamper.snapshot(workspace, tmp_path / "none")
    written = workspace / "history" / "round-1.diff"
    written.chmod(0o644)   # as a mutator without a sandbox could (it may run as root)
    written.write_text("a forged diff\n")
    assert not untouched(written)
    assert tamper.changed(before, tamper.snapshot(workspace, tmp_path / "none")) == [str(written)]
    link(store.diff("p", "g", lambda p, g: made.append(1) or "the diff\n"), tmp_path / "next" / "round-1.diff")
    assert len(made) == 2 and (tmp_path / "next" / "round-1.diff").read_text() == "the diff\n"


def test_a_regraded_rollout_is_a_new_stored_file(tmp_path: Path) -> None:
    store, cell = EvidenceStore(tmp_path / "data"), tmp_path / "cell"
    cell.mkdir()
    (cell / "trajectory.md").write_text("score 0.5\n")
    first = store.rollout(7, "t1__r0", cell / "trajectory.md")
    assert store.rollout(7, "t1__r0", cell / "trajectory.md") == first
    (cell / "trajectory.md").write_text("score 1.0\n")
    os.utime(cell / "trajectory.md", ns=(1, 1))   # a re-grade rewrites it: a new mtime
    second = store.rollout(7, "t1__r0", cell / "trajectory.md")
    assert second != first and second.read_text() == "score 1.0\n" and first.read_text() == "score 0.5\n"
    assert store.rollout(7, "t2__r0", cell / "missing.md") is None


def test_the_reader_lists_only_what_the_workspace_was_shown(tmp_path: Path) -> None:
    root = workspace_dir(tmp_path, "run-1", "round-2-0")
    for rel in ("skill/SKILL.md", "briefing.md", "result.json", "history/ledger.md", "evidence/current/t1__r0.md",
                "tasks/t1.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    found = staged(tmp_path, "run-1", "round-2-0")
    assert list(found) == ["evidence/current/t1__r0.md", "history/ledger.md", "tasks/t1.md"]
    assert found["history/ledger.md"].read_text() == "history/ledger.md"
    assert staged(tmp_path, "run-1", "round-9-0") == {}


def test_redaction_skips_untouched_stored_files_and_redacts_what_was_written(tmp_path: Path) -> None:
    store, workspace = EvidenceStore(tmp_path), tmp_path / "ws"
    key = "sk-ant-" + "a" * 20
    link(store.diff("p", "g", lambda p, g: "kept\n"), workspace / "history" / "round-1.diff")
    link(store.diff("p", "h", lambda p, g: "kept\n"), workspace / "history" / "round-2.diff")
    (workspace / "result.json").write_text(f'{{"summary": "{key}"}}')
    forged = workspace / "history" / "round-2.diff"
    forged.chmod(0o644)
    forged.write_text(f"written {key}\n")
    assert len(redact_tree(workspace, skip=untouched)) == 2
    assert REDACTED in (workspace / "result.json").read_text() and forged.read_text() == f"written {REDACTED}\n"
