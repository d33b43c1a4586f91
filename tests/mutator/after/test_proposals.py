"""Proposals: every status transition and refusal, the atomic deploy (interrupted half-way too) and a
byte-identical rollback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval.snapshot import hash_tree
from mutator.after import deploy as deploy_mod
from mutator.after import proposals
from mutator.after.deploy import DeployError, deploy, rollback
from mutator.after.proposals import ProposalError, accept, propose, reject

from .conftest import snapshot


def _propose(built, **kwargs):
    return propose(built["db"], built["genomes"], built["run_id"], target_dir=built["target"], **kwargs)


def test_propose_holds_diff_figures_gates_and_a_timestamped_decision(built):
    p, created = _propose(built)
    assert created and p["status"] == "proposed" and p["genome_hash"] == built["champion"]
    assert "+Always keep the header row." in p["diff"]
    detail = proposals.detail(built["db"], p["id"])
    assert detail["val"]["composite"] == 0.55 and detail["val"]["seed_composite"] == 0.40
    assert detail["gates"] == [{"gate": "changed", "verdict": "pass", "reason": ""}]
    assert detail["test"] is None
    assert [(d["action"], d["status_from"], d["status_to"]) for d in detail["decisions"]] == [
        ("propose", None, "proposed")]
    assert detail["decisions"][0]["at"] > 0


def test_an_open_proposal_is_not_duplicated_and_auto_never_piles_up(built):
    first, _ = _propose(built)
    again, created = _propose(built)
    assert not created and again["id"] == first["id"]
    reject(built["db"], first["id"], "not now")
    auto, created = _propose(built, auto=True)
    assert not created and auto["id"] == first["id"]           # a finishing run does not re-propose
    fresh, created = _propose(built)                            # an explicit --propose after a decision does
    assert created and fresh["id"] != first["id"] and fresh["status"] == "proposed"


def test_the_seed_as_champion_is_refused(built):
    built["db"].execute("update runs set incumbent_hash = seed_hash")
    built["db"].conn.commit()
    with pytest.raises(ProposalError, match="champion is its seed"):
        _propose(built)


def test_unknown_run_and_unknown_proposal_are_refused(built):
    with pytest.raises(ProposalError, match="no run"):
        propose(built["db"], built["genomes"], "run-ffffffffffff", target_dir=None)
    with pytest.raises(ProposalError, match="no proposal 99"):
        accept(built["db"], 99)


def test_reject_then_every_decision_is_refused_with_the_current_status(built):
    p, _ = _propose(built)
    assert reject(built["db"], p["id"], "too risky")["status"] == "rejected"
    for act in (lambda: accept(built["db"], p["id"]), lambda: reject(built["db"], p["id"]),
                lambda: deploy(built["db"], built["genomes"], p["id"], built["target"])):
        with pytest.raises(ProposalError, match=f"proposal {p['id']} is rejected"):
            act()
    steps = [(d["status_from"], d["status_to"], d["note"]) for d in proposals.decisions(built["db"], p["id"])]
    assert steps[-1] == ("proposed", "rejected", "too risky") and len(steps) == 2


def test_accept_deploys_atomically_and_keeps_the_previous_version(built):
    p, _ = _propose(built)
    before = snapshot(built["target"])
    row = deploy(built["db"], built["genomes"], p["id"], built["target"], note="ship it")
    # the champion's files, plus the folder's own file (never in the seed genome) with its bytes and mode
    assert {k: v[0] for k, v in snapshot(built["target"]).items()} == {
        **{k: v[0] for k, v in snapshot(built["genomes"].path(built["champion"])).items()},
        "notes.local": b"\x00\x01 not part of any genome\n"}
    assert snapshot(built["target"])["notes.local"] == before["notes.local"]
    assert Path(row["backup_dir"]).parent == built["target"].parent / ".skill-mutator-backups" / "csv-clean"
    assert snapshot(Path(row["backup_dir"])) == before      # the old folder itself, renamed, not copied
    assert proposals.get(built["db"], p["id"])["status"] == "deployed"
    steps = [(d["action"], d["status_from"], d["status_to"]) for d in proposals.decisions(built["db"], p["id"])]
    assert steps == [("propose", None, "proposed"), ("accept", "proposed", "accepted"), ("deploy", "accepted", "deployed")]
    assert proposals.decisions(built["db"], p["id"])[1]["note"] == "ship it"
    with pytest.raises(ProposalError, match="is deployed"):
        accept(built["db"], p["id"])
    with pytest.raises(ProposalError, match="is deployed"):
        reject(built["db"], p["id"])
    leftovers = [x.name for x in built["target"].parent.iterdir() if ".incoming-" in x.name]
    assert leftovers == []


def test_a_deploy_interrupted_between_write_and_rename_leaves_the_old_skill_intact(built):
    p, _ = _propose(built)
    before = snapshot(built["target"])

    def crash() -> None:
        raise OSError(28, "No space left on device")
    with pytest.raises(DeployError, match="No space left on device"):
        deploy(built["db"], built["genomes"], p["id"], built["target"], before_swap=crash)
    assert snapshot(built["target"]) == before
    assert [x.name for x in built["target"].parent.iterdir() if ".incoming-" in x.name] == []
    failed = proposals.detail(built["db"], p["id"])
    assert failed["status"] == "failed"
    assert "No space left on device" in failed["decisions"][-1]["note"]
    assert failed["deployments"][0]["status"] == "failed"
    with pytest.raises(DeployError, match="nothing deployed"):
        rollback(built["db"], built["genomes"], built["target"])
    deploy(built["db"], built["genomes"], p["id"], built["target"])     # a failed deploy can be retried
    assert proposals.get(built["db"], p["id"])["status"] == "deployed"
    assert [(d["status_from"], d["status_to"]) for d in proposals.decisions(built["db"], p["id"])][-2:] == [
        ("failed", "accepted"), ("accepted", "deployed")]


def test_the_exchange_fallback_undoes_itself_when_the_second_rename_fails(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "f").write_text("new")
    (b / "f").write_text("old")
    monkeypatch.setattr(deploy_mod.ctypes, "CDLL", lambda *args, **kw: object())  # no renameat2 here
    real = os.rename
    calls = []

    def flaky(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:
            raise OSError(5, "I/O error")
        return real(src, dst)
    monkeypatch.setattr(deploy_mod.os, "rename", flaky)
    with pytest.raises(OSError):
        deploy_mod._exchange(a, b)
    assert (b / "f").read_text() == "old" and (a / "f").read_text() == "new"


def test_rollback_restores_byte_identical_files_and_is_recorded(built):
    p, _ = _propose(built)
    before = snapshot(built["target"])
    deploy(built["db"], built["genomes"], p["id"], built["target"])
    assert snapshot(built["target"]) != before
    row = rollback(built["db"], built["genomes"], built["target"])
    assert snapshot(built["target"]) == before          # bytes and file modes, the non-genome file included
    assert row["status"] == "rolled_back"
    assert proposals.get(built["db"], p["id"])["status"] == "rolled_back"
    with pytest.raises(DeployError, match=r"is already rolled back: deploy \d+ \(proposal \d+\) was undone at "
                                          r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"):
        rollback(built["db"], built["genomes"], built["target"])


def test_rollback_refuses_when_the_folder_was_edited_after_the_deploy(built):
    p, _ = _propose(built)
    deploy(built["db"], built["genomes"], p["id"], built["target"])
    (built["target"] / "SKILL.md").write_text("hand edit\n")
    with pytest.raises(DeployError, match="changed since deploy"):
        rollback(built["db"], built["genomes"], built["target"])
    assert (built["target"] / "SKILL.md").read_text() == "hand edit\n"


def test_deploy_into_a_new_folder_then_rollback_removes_it(built):
    p, _ = _propose(built)
    (built["target"].parent / "elsewhere").mkdir()
    target = built["target"].parent / "elsewhere" / "csv-clean"
    row = deploy(built["db"], built["genomes"], p["id"], target)
    assert row["backup_dir"] is None and hash_tree(target) == built["champion"]
    rollback(built["db"], built["genomes"], target)
    assert not target.exists()


def test_two_deploys_roll_back_one_at_a_time(built):
    original = snapshot(built["target"])
    first, _ = _propose(built)
    deploy(built["db"], built["genomes"], first["id"], built["target"])
    after_first = snapshot(built["target"])
    second, _ = _propose(built)       # an explicit re-proposal of the same champion after a terminal decision
    deploy(built["db"], built["genomes"], second["id"], built["target"])
    rollback(built["db"], built["genomes"], built["target"])
    assert snapshot(built["target"]) == after_first
    rollback(built["db"], built["genomes"], built["target"])
    assert snapshot(built["target"]) == original


def _flag_in_a_test(built) -> int:
    """A finished test of the champion, after the proposal, that finds it better than the seed on the mean but flags
    task t (worse than the seed in each of 3 replicates: p 0.05, Holm over one task)."""
    from mutator.store.db import dumps, now
    from mutator.validity import harm
    report = {"splits": {"test": {"delta": {"mean": 0.01}}},
              "harm": {"seed": harm.harm({"t": [0.0] * 3}, {"t": [1.0] * 3}), "none": None}}
    return built["db"]["test_runs"].insert({"run_id": built["run_id"], "suite": "clean-test", "genome_hash":
                                            built["champion"], "status": "done", "composite": 0.5, "eval": 0.5,
                                            "report": dumps(report), "created_at": now()}).last_pk


def test_no_harm_holds_a_proposal_made_before_the_test_that_flags_its_champion(built):
    before, created = _propose(built, no_harm=True)
    assert created and before["status"] == "proposed"
    test_id = _flag_in_a_test(built)
    again, created = _propose(built)                             # without proposeNoHarm the open proposal stands
    assert not created and again["id"] == before["id"]
    with pytest.raises(ProposalError, match=f"is not proposed: proposeNoHarm: its latest test finds it worse than the "
                                            f"seed on t .*Proposal {before['id']} \\(proposed\\) was made before that "
                                            f"test \\(test run #{test_id}\\)"):
        _propose(built, no_harm=True)
    assert proposals.get(built["db"], before["id"])["status"] == "proposed"     # nothing decided for the user


def test_no_harm_refuses_to_accept_a_champion_its_test_flags(built):
    from mutator.cli.main import main
    p, _ = _propose(built)
    _flag_in_a_test(built)
    built["db"].conn.commit()
    before = snapshot(built["target"])
    code = main(["--accept", str(p["id"]), "--to", str(built["target"]), "--data-dir", str(built["data"]),
                 "--propose-no-harm"])
    assert code == 2
    assert snapshot(built["target"]) == before and proposals.get(built["db"], p["id"])["status"] == "proposed"
    # without proposeNoHarm the user's accept is theirs to make
    assert main(["--accept", str(p["id"]), "--to", str(built["target"]), "--data-dir", str(built["data"])]) == 0
    assert proposals.get(built["db"], p["id"])["status"] == "deployed"
