"""--accept into a live skill folder: the folder's own files (a user's evals/, notes) survive, the champion's
deletions apply, a folder of another skill is refused, and a rollback restores exactly the pre-accept folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mutator.after import proposals
from mutator.after.deploy import DeployError, deploy, rollback
from mutator.after.proposals import propose
from mutator.store.db import connect
from tests.conftest import run_py

from .conftest import ROOT, SEED, snapshot


def _champion_deleting_examples(built) -> str:
    """A champion of the same run that deletes the seed's examples.md and edits SKILL.md."""
    changed = built["data"].parent / "deleting"
    shutil.copytree(SEED, changed)
    (changed / "examples.md").unlink()
    (changed / "SKILL.md").write_text((SEED / "SKILL.md").read_text() + "\nNever quote numbers.\n")
    champion = built["genomes"].put(changed, parent_hash=built["seed"], skill_name="csv-clean")
    db = built["db"]
    db.execute("update runs set incumbent_hash = ?", [champion])
    db.execute("update attempts set genome_hash = ? where round = 1", [champion])
    db.conn.commit()
    return champion


@pytest.fixture
def live(built) -> dict:
    """The deployed seed with a user's evals/ (a nested file, an executable) and notes beside the skill's files."""
    target = built["target"]
    (target / "evals" / "files").mkdir(parents=True)
    (target / "evals" / "evals.json").write_text('{"skill_name": "csv-clean", "evals": []}\n')
    (target / "evals" / "files" / "in.csv").write_bytes(b"a,b\n1,2\n")
    (target / "evals" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (target / "evals" / "run.sh").chmod(0o755)
    return built


def test_accept_keeps_the_users_files_and_applies_the_champions_deletions(live):
    champion = _champion_deleting_examples(live)
    p, _ = propose(live["db"], live["genomes"], live["run_id"], target_dir=live["target"])
    before = snapshot(live["target"])
    assert "examples.md" in before and "evals/evals.json" in before
    row = deploy(live["db"], live["genomes"], p["id"], live["target"])
    after = snapshot(live["target"])
    genome = snapshot(live["genomes"].path(champion))
    own = ("evals/evals.json", "evals/files/in.csv", "evals/run.sh", "notes.local")
    assert set(after) == set(genome) | set(own)
    assert "examples.md" not in after                      # the seed file the champion deleted is gone
    assert all(after[rel][0] == genome[rel][0] for rel in genome)
    assert all(after[rel] == before[rel] for rel in own)   # bytes and modes (the 0o755 script, 0o600 notes)
    assert row["merge"].kept == own and row["merge"].replaced == () and row["merge"].shadowed == ()
    note = proposals.decisions(live["db"], p["id"])[-1]["note"]
    assert "kept 4 file(s) of the folder's own (not in the seed genome): evals/evals.json" in note
    assert snapshot(Path(row["backup_dir"])) == before
    rollback(live["db"], live["genomes"], live["target"])
    assert snapshot(live["target"]) == before             # exactly the pre-accept folder, deleted file included


def test_an_edited_seed_file_and_a_same_path_file_give_way_to_the_champion_and_are_said(live):
    target = live["target"]
    (target / "rules.json").write_text("{}\n")          # a seed file edited in place
    p, _ = propose(live["db"], live["genomes"], live["run_id"], target_dir=target)
    row = deploy(live["db"], live["genomes"], p["id"], target)
    assert (target / "rules.json").read_bytes() == (SEED / "rules.json").read_bytes()
    assert row["merge"].replaced == ("rules.json",)
    assert "1 seed file(s) edited in the folder were replaced" in proposals.decisions(live["db"], p["id"])[-1]["note"]
    assert (Path(row["backup_dir"]) / "rules.json").read_text() == "{}\n"


def test_rollback_refuses_when_a_kept_file_was_edited_after_the_deploy(live):
    p, _ = propose(live["db"], live["genomes"], live["run_id"], target_dir=live["target"])
    deploy(live["db"], live["genomes"], p["id"], live["target"])
    (live["target"] / "__pycache__").mkdir()
    (live["target"] / "__pycache__" / "x.pyc").write_bytes(b"cache")     # a tool's cache is not an edit
    edited = live["target"] / "evals" / "evals.json"
    edited.write_text('{"evals": ["new work"]}\n')
    with pytest.raises(DeployError, match="changed since deploy"):
        rollback(live["db"], live["genomes"], live["target"])
    assert edited.read_text() == '{"evals": ["new work"]}\n'
    edited.write_text('{"skill_name": "csv-clean", "evals": []}\n')
    assert rollback(live["db"], live["genomes"], live["target"])["status"] == "rolled_back"


@pytest.mark.parametrize("where", ["folder", "skill_md"])
def test_a_folder_of_another_skill_is_refused_unless_forced(built, where):
    p, _ = propose(built["db"], built["genomes"], built["run_id"], target_dir=built["target"])
    if where == "folder":
        target = built["target"].parent / "brand-guidelines"
        shutil.copytree(built["target"], target)
        names = "the folder is named 'brand-guidelines'"
    else:
        target = built["target"].parent / "other" / "csv-clean"
        target.mkdir(parents=True)
        (target / "SKILL.md").write_text("---\nname: brand-guidelines\ndescription: x\n---\nbody\n")
        names = "its SKILL.md names the skill 'brand-guidelines'"
    before = snapshot(target)
    with pytest.raises(DeployError) as refused:
        deploy(built["db"], built["genomes"], p["id"], target)
    assert str(refused.value) == (f"refusing to deploy the skill 'csv-clean' into {target}: {names}, not 'csv-clean'. "
                                  f"Pass --to the skill's own folder (named csv-clean), or add --force to deploy there anyway (the "
                                  f"folder's current version is kept for --rollback)")
    assert snapshot(target) == before
    assert proposals.get(built["db"], p["id"])["status"] == "proposed"      # nothing was decided
    assert not list(built["db"]["deployments"].rows)
    deploy(built["db"], built["genomes"], p["id"], target, force=True)
    assert proposals.get(built["db"], p["id"])["status"] == "deployed"


def test_a_rolled_back_proposal_can_be_accepted_again(built):
    p, _ = propose(built["db"], built["genomes"], built["run_id"], target_dir=built["target"])
    deploy(built["db"], built["genomes"], p["id"], built["target"])
    rollback(built["db"], built["genomes"], built["target"])
    row = deploy(built["db"], built["genomes"], p["id"], built["target"])
    assert row["status"] == "deployed"
    assert [(d["action"], d["status_from"], d["status_to"]) for d in proposals.decisions(built["db"], p["id"])][-3:] == [
        ("rollback", "deployed", "rolled_back"), ("accept", "rolled_back", "accepted"), ("deploy", "accepted", "deployed")]


def test_cli_refuses_a_foreign_folder_with_exit_2_and_propose_aims_at_the_runs_own_folder(built, tmp_path):
    run_skill = tmp_path / "projects" / "csv-clean"
    shutil.copytree(SEED, run_skill)
    built["db"].execute("update runs set skill_dir = ?", [str(run_skill)])
    built["db"].conn.commit()
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    proposed = run_py("--propose", built["run_id"], "--data-dir", str(built["data"]), cwd=elsewhere)
    assert proposed.returncode == 0, proposed.stderr
    accept_line = next(line for line in proposed.stdout.splitlines() if "accept:" in line)
    assert accept_line.strip().startswith(f"accept: python {ROOT / 'run.py'} --accept 1 --to {run_skill} --data-dir "
                                          f"{built['data']}")
    foreign = tmp_path / "projects" / "brand-guidelines"
    shutil.copytree(SEED, foreign)
    refused = run_py("--accept", "1", "--to", str(foreign), "--data-dir", str(built["data"]), cwd=elsewhere)
    assert refused.returncode == 2
    assert (f"refusing to deploy the skill 'csv-clean' into {foreign}: the folder is named 'brand-guidelines'"
            in refused.stderr and "add --force" in refused.stderr)
    forced = run_py("--accept", "1", "--to", str(foreign), "--force", "--data-dir", str(built["data"]), cwd=elsewhere)
    assert forced.returncode == 0, forced.stderr
    assert f"(undo: python {ROOT / 'run.py'} --rollback {foreign} --data-dir {built['data']})" in forced.stdout
    again = run_py("--rollback", str(foreign), "--data-dir", str(built["data"]), cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    twice = run_py("--rollback", str(foreign), "--data-dir", str(built["data"]), cwd=elsewhere)
    assert twice.returncode == 2 and "is already rolled back: deploy 1 (proposal 1) was undone at" in twice.stderr


def test_a_store_written_before_run_skill_dir_gains_the_column_empty(tmp_path):
    """A store of main 05d97d1 (positional migrations 1..13) gets `runs.skill_dir` by the named migration
    run_skill_dir; its runs keep NULL there, so --propose aims at SKILL_DIR (or --to) for them."""
    import sqlite3
    import tarfile
    with tarfile.open(ROOT / "tests" / "mutator" / "store" / "fixtures" / "store-05d97d1.tgz") as tar:
        tar.extractall(tmp_path, filter="data")
    store = tmp_path / "data" / "mutator.db"
    with sqlite3.connect(store) as conn:
        assert "skill_dir" not in [r[1] for r in conn.execute("pragma table_info(runs)")]
    db = connect(store)
    assert "skill_dir" in db["runs"].columns_dict
    assert {r["skill_dir"] for r in db["runs"].rows} == {None}
    assert "run_skill_dir" in [r["name"] for r in db["_sqlite_migrations"].rows]


def test_a_deploy_made_before_own_files_were_kept_still_rolls_back(built):
    """Old code left the folder as the bare genome (its own files only in the backup): that still counts as
    what the deploy wrote, and the rollback brings the own files back."""
    p, _ = propose(built["db"], built["genomes"], built["run_id"], target_dir=built["target"])
    before = snapshot(built["target"])
    deploy(built["db"], built["genomes"], p["id"], built["target"])
    (built["target"] / "notes.local").unlink()             # what the old deploy wrote: the champion alone
    rollback(built["db"], built["genomes"], built["target"])
    assert snapshot(built["target"]) == before
