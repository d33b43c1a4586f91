"""The run's shared history (mutator/briefing/evidence.py): under bwrap a workspace's history/ and
evidence/attempts/ are one shared folder per run bound read-only, not a link per earlier file.

Proof by a wrapper mutator that lists every file it sees (path and sha256) on its stderr, which the harness keeps
in the workspace, then runs the fake mutator: the same dry run under bwrap with the history shared and with it linked (as before) shows the
mutator the same tree in every round and every meta-skill call, while the bwrap run's workspaces hold no file per
earlier round and its mutator cannot write into the bound history.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlite_utils

from eval.suite import load_suite
from mutator.briefing import evidence as evidence_module
from mutator.briefing.evidence import Evidence, render_ledger
from mutator.config import load_settings
from mutator.round.loop import Loop
from mutator.round.progress import Progress
from mutator.round.session import Agents, Suites
from mutator.server import mutator_view
from mutator.store.evidence import EvidenceStore
from mutator.store.genome import GenomeStore
from sandbox.bwrap import BwrapLauncher
from strategies import make_strategy
from tests.conftest import ROOT
from tests.sandbox.conftest import needs_bwrap

WRAPPER = """import hashlib, os, subprocess, sys
OWN = {"agent.stdout", "agent.stderr", "stream.jsonl", "result.json"}   # the harness's logs and the call's outputs
for folder, dirs, files in os.walk("."):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(folder, name)[2:]
        if path not in OWN:
            with open(path, "rb") as f:
                print("SEEN", path, oct(os.stat(path).st_mode & 0o777), hashlib.sha256(f.read()).hexdigest(),
                      file=sys.stderr)
    if folder == ".":
        continue
    print("SEEN", folder[2:] + "/", file=sys.stderr)
if os.environ.get("PROBE_HISTORY_WRITE"):   # the bwrap run only: without a sandbox the write would go through
    try:
        open("history/written-by-the-mutator", "w").close()
        print("WROTE history", file=sys.stderr)
    except OSError as err:
        print("REFUSED history", err.errno, file=sys.stderr)
sys.exit(subprocess.call([sys.executable, sys.argv[1]]))
"""


class LinkingBwrap(BwrapLauncher):
    """bwrap as before the shared history: every earlier round's file linked into the workspace."""
    binds_folders = False


def run(tmp_path: Path, monkeypatch, launcher, strategy: str, opts: dict, rounds: int) -> Path:
    data = tmp_path / "data"   # one path for both runs: the cells' trajectories name it
    shutil.rmtree(data, ignore_errors=True)
    if launcher.binds_folders:
        monkeypatch.setenv("PROBE_HISTORY_WRITE", "1")
        monkeypatch.setenv("SM_PASS_ENV", "PROBE_HISTORY_WRITE")   # agents get an allow-listed environment
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER)
    settings = load_settings({"data_dir": data, "rounds": rounds, "replicates": 1, "strategy": strategy,
                              "strategy_opts": opts, "meta_skill_every": 3})
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"))
    agents = Agents(build_argv=(sys.executable, str(ROOT / "fakes" / "fake_agent.py")), build_id="fake",
                    mutator_id="wrapped",
                    mutator_argv=(sys.executable, str(wrapper), str(ROOT / "fakes" / "fake_mutator.py")))
    Loop(settings, suites, agents, launcher, make_strategy(strategy, opts),
         progress=Progress(open(os.devnull, "w"))).execute()
    return data


def seen(data: Path) -> dict[str, list[str]]:
    """workspace name -> what its mutator listed (the history write probe left out)."""
    return {ws.name: [line for line in (ws / "agent.stderr").read_text().splitlines() if line.startswith("SEEN ")]
            for ws in sorted((data / "workspaces").glob("*/*"))}


@needs_bwrap
@pytest.mark.parametrize("strategy, opts, rounds", [("greedy", {}, 8), ("branching", {"width": 2}, 2)])
def test_the_mutator_sees_the_same_tree_shared_or_linked_and_workspaces_stay_flat(tmp_path: Path, monkeypatch,
                                                                                     strategy, opts, rounds) -> None:
    a = seen(run(tmp_path, monkeypatch, LinkingBwrap(), strategy, opts, rounds))
    shared = run(tmp_path, monkeypatch, BwrapLauncher(), strategy, opts, rounds)
    b = seen(shared)
    assert list(a) == list(b) and len(a) >= rounds   # every mutation and the meta-skill calls
    assert any(name.startswith("meta-") for name in a) or rounds < 3   # a meta-skill call every 3 rounds
    last = a[f"round-{rounds}-0"]
    assert any(line.startswith(f"SEEN history/round-{rounds - 1}") for line in last)   # earlier rounds were shown
    assert any(line.startswith("SEEN evidence/attempts/round-") for line in last)
    for name in a:
        assert a[name] == b[name], name
    # the shared run's workspaces hold no earlier round's file: history/ and evidence/attempts/ are empty folders
    for ws in sorted((shared / "workspaces").glob("*/*")):
        assert list((ws / "history").iterdir()) == [], ws.name
        assert not (ws / "evidence" / "attempts").exists() or list((ws / "evidence" / "attempts").iterdir()) == []
        assert "REFUSED history 30" in (ws / "agent.stderr").read_text()   # EROFS: bound read-only
    # the dashboard lists what such a workspace was shown: its own files, and the earlier rounds' from the store
    db = sqlite_utils.Database(shared / "mutator.db")
    last_id = db.execute("select id from attempts where round = ? and sibling = 0", [rounds]).fetchone()[0]
    files, source = mutator_view.shown(SimpleNamespace(data_dir=shared), db, mutator_view.attempt_of(db, last_id))
    assert source == "workspace and evidence store"
    listed = {line.split()[1] for line in b[f"round-{rounds}-0"]} - {"history/ledger.md"}   # the ledger: not kept
    assert {rel for rel in files if rel.startswith(("history/", "evidence/"))} == \
        {rel for rel in listed if rel.startswith(("history/", "evidence/")) and not rel.endswith("/")}


@needs_bwrap
def test_a_new_session_rebuilds_the_shared_history_and_a_round_adds_only_what_is_new(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    data = run(tmp_path, monkeypatch, BwrapLauncher(), "greedy", {}, 3)
    db = sqlite_utils.Database(data / "mutator.db")
    run_id = db.execute("select id from runs").fetchone()[0]
    shared = EvidenceStore(data).shared(run_id)
    before = {p.relative_to(shared.root): p.read_bytes() for p in shared.root.rglob("*") if p.is_file()}
    assert {"history/ledger.md", "history/round-1.diff", "history/round-3.diff"} <= {str(p) for p in before}
    (shared.history / "round-2.diff").unlink()                    # what a crash or a re-done attempt leaves behind
    (shared.history / "round-9.diff").write_text("a stale diff\n")
    known: dict = {}
    evidence = Evidence(db=db, genomes=GenomeStore(data, db), store=EvidenceStore(data), run_id=run_id,
                        train=load_suite(ROOT / "suites" / "clean-train"), train_composite=lambda evaluation_id: 0.5,
                        solve_dir=None, known=known)
    made: list[tuple[str, str]] = []
    real_link = evidence_module.link
    monkeypatch.setattr(evidence_module, "link", lambda stored, target: made.append(str(target)) or
                        real_link(stored, target))
    binds = evidence.stage(tmp_path / "ws", db.execute("select incumbent_hash from runs").fetchone()[0], True)
    assert binds == {tmp_path / "ws" / "history": shared.history,
                     tmp_path / "ws" / "evidence" / "attempts": shared.attempts}
    after = {p.relative_to(shared.root): p.read_bytes() for p in shared.root.rglob("*") if p.is_file()}
    assert {k: v for k, v in after.items() if k.name != "ledger.md"} == \
        {k: v for k, v in before.items() if k.name != "ledger.md"}   # rebuilt: round-2 back, round-9 gone
    made.clear()
    evidence.stage(tmp_path / "ws2", db.execute("select incumbent_hash from runs").fetchone()[0], True)
    assert [m for m in made if str(shared.root) in m] == []   # the next round: nothing new, nothing linked
    assert list((tmp_path / "ws2" / "history").iterdir()) == []
    # the ledger, its blocks made once per session, is the ledger of every attempt as the store now has it
    train = evidence.train_evaluations()
    assert evidence.ledger(train) == render_ledger(evidence.ledger_rows(train))
    db["attempts"].update(db.execute("select id from attempts where round = 2").fetchone()[0], {"verdict": "REJECT"})
    assert evidence.ledger(train) == render_ledger(evidence.ledger_rows(train))   # overturned since: made anew
    assert "## Attempt 2 — REJECT" in evidence.ledger(train)
