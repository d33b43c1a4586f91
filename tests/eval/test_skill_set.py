"""A genome holding several skills (skills/<name>/): installed member by member; a one-skill genome as before."""

from __future__ import annotations

import shutil
from pathlib import Path

from eval.agent_call import stage_cell
from eval.skill_set import installed_at, is_skill_set, members, touched
from eval.snapshot import hash_tree
from tests.conftest import ROOT

SEED = ROOT / "suites" / "csv-clean"


def skill_set(root: Path) -> Path:
    shutil.copytree(SEED, root / "skills" / "csv-clean")
    (root / "skills" / "notes").mkdir()
    (root / "skills" / "notes" / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\n\nNotes.\n")
    return root


def test_a_set_installs_each_skill_and_a_single_skill_stays_where_it_was(tmp_path: Path) -> None:
    pair = skill_set(tmp_path / "pair")
    assert is_skill_set(pair) and [m.name for m in members(pair)] == ["csv-clean", "notes"]
    assert not is_skill_set(SEED) and members(SEED) == []
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    work = stage_cell(tmp_path / "cell-set", fixtures=fixtures, inputs=(), skill_dir=pair, skill_name="pair")
    assert sorted(p.name for p in (work / ".claude" / "skills").iterdir()) == ["csv-clean", "notes"]
    assert hash_tree(work / ".claude" / "skills" / "csv-clean") == hash_tree(SEED)
    assert installed_at(work, pair, "pair") == work / ".claude" / "skills"
    one = stage_cell(tmp_path / "cell-one", fixtures=fixtures, inputs=(), skill_dir=SEED, skill_name="csv-clean")
    assert hash_tree(one / ".claude" / "skills" / "csv-clean") == hash_tree(SEED)
    assert installed_at(one, SEED, "csv-clean") == one / ".claude" / "skills" / "csv-clean"


def test_touched_names_the_members_a_change_falls_in() -> None:
    assert touched(["skills/notes/SKILL.md", "skills/notes/ref/a.md"]) == ["notes"]
    assert touched(["skills/b/x", "skills/a/y", "README.md"]) == ["a", "b"]
    assert touched(["SKILL.md", "rules.json"]) == []
