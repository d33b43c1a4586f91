"""A skill set as the seed: `--seed-from` a task bundling two skills seeds both, a dry run changes one of them
and records which; a one-skill store from before the skill-set column resumes with 0 new cells."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mutator.store.db import connect_readonly
from tests.conftest import run_cli
from tests.mutator.after.test_harbor_dataset import harbor_task

DRY = ("--suite", "clean-train", "--val", "clean-val", "--rounds", "1", "--replicates", "1")


def attempts(data_dir: Path) -> list[dict]:
    db = connect_readonly(data_dir / "mutator.db")
    return [dict(r) for r in db.query("select * from attempts order by round, sibling")]


def test_a_two_skill_seed_from_a_task_and_a_dry_run_that_changes_one_of_them(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    harbor_task(tasks, "pair", skills=("alpha", "beta"))
    harbor_task(tasks, "other")
    imported = run_cli("--import-harbor", str(tasks), "--out", str(tmp_path / "sb"), "--seed-from", "pair",
                       timeout=120)
    assert imported.returncode == 0, imported.stderr
    seed = tmp_path / "sb" / "seed" / "pair"
    done = run_cli(*DRY, "--skill-dir", str(seed), "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"skill pair from {seed}" in done.stdout + done.stderr
    seed_row, first = attempts(tmp_path / "data")
    assert seed_row["skills_touched"] is None and first["skills_touched"] == "alpha"
    assert first["critic"].startswith('[{"gate": "set", "reason": "changes alpha", "verdict": "pass"}')
    [workspace] = (tmp_path / "data" / "workspaces").glob("*/round-1-0")
    briefing = (workspace / "briefing.md").read_text()
    assert "Make ONE change to ONE of the skills of the skill set `pair` in ./skill/skills/ (`alpha`, `beta`" \
        in briefing
    changed = sorted(p.relative_to(workspace / "skill").as_posix() for p in (workspace / "skill").rglob("*")
                     if p.is_file() and not (seed / p.relative_to(workspace / "skill")).is_file()
                     or p.is_file() and (seed / p.relative_to(workspace / "skill")).read_bytes() != p.read_bytes())
    assert changed and all(path.startswith("skills/alpha/") for path in changed)


def test_a_one_skill_store_from_before_the_column_resumes_with_no_new_cell(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = run_cli(*DRY, "--data-dir", str(data))
    assert first.returncode == 0, first.stderr[-3000:]
    with sqlite3.connect(data / "mutator.db") as db:   # the store as the code before skill sets left it
        db.execute("alter table attempts drop column skills_touched")
        db.execute("delete from _sqlite_migrations where name = 'skills_touched'")
    again = run_cli(*DRY, "--data-dir", str(data))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 cells run by this command — nothing new: the run resumed complete" in again.stdout
    assert [r["skills_touched"] for r in attempts(data)] == [None, None]
