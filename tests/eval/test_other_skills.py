"""--with-skills (eval/other_skills.py): which folders are skills, their digest in the contract only when set (old
evaluation keys unchanged), read-only installation in the cell, and the SDK agent offering every installed skill."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest

from eval.agent_call import stage_cell
from eval.agents.anthropic_agent import skills_block
from eval.cells import Contract, agent_key, evaluation_key
from eval.other_skills import OtherSkillsError, digest, find_skills
from eval.suite import load_suite
from tests.conftest import ROOT

BASE = dict(model="claude-haiku-4-5", replicates=2, max_turns=30, agent="fake@1", silence_ms=600000,
            heartbeat_ms=300000)


def skill(root: Path, name: str, description: str = "Does things.") -> Path:
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n")
    (folder / "scripts" / "run.py").write_text("print(1)\n")
    return folder


def test_the_contract_keys_other_skills_only_when_set():
    plain = Contract(**BASE)
    assert plain.to_json() == {**BASE, "protocol": plain.protocol, "salt": ""}   # the fields before --with-skills
    suite = load_suite(ROOT / "suites" / "clean-val")
    material = json.dumps({"genome": "g", "suite": suite.name, "suite_hash": suite.content_hash, **BASE,
                           "protocol": plain.protocol, "salt": ""}, sort_keys=True)
    assert evaluation_key("g", suite, plain) == hashlib.sha256(material.encode()).hexdigest()[:24]
    among = Contract(**BASE, with_skills="abc")
    assert evaluation_key("g", suite, among) != evaluation_key("g", suite, plain)
    assert agent_key("g", suite, among) != agent_key("g", suite, plain)
    assert Contract(**among.to_json()) == among and Contract(**plain.to_json()) == plain


def test_the_digest_changes_with_the_set_of_skills_and_their_content(tmp_path):
    a, b = skill(tmp_path, "alpha"), skill(tmp_path, "beta")
    assert digest(()) == ""
    one, both = digest((a,)), digest((a, b))
    assert len({one, both}) == 2 and digest((b, a)) == both
    (b / "scripts" / "run.py").write_text("print(2)\n")
    assert digest((a, b)) not in (one, both)


def test_find_skills_lists_skill_folders_and_refuses_bad_dirs(tmp_path):
    skill(tmp_path / "others", "beta"), skill(tmp_path / "others", "alpha")
    (tmp_path / "others" / "notes").mkdir()
    assert [p.name for p in find_skills(tmp_path / "others", "csv-clean")] == ["alpha", "beta"]
    with pytest.raises(OtherSkillsError, match=r"--with-skills .*others: alpha has the evolved skill's name"):
        find_skills(tmp_path / "others", "alpha")
    with pytest.raises(OtherSkillsError, match="not a folder"):
        find_skills(tmp_path / "missing", "csv-clean")
    with pytest.raises(OtherSkillsError, match="holds no skill"):
        find_skills(tmp_path / "others" / "notes", "csv-clean")


def test_a_cell_holds_every_skill_the_others_read_only_and_the_sdk_agent_offers_them_all(tmp_path, monkeypatch):
    others = (skill(tmp_path / "others", "poems", "Write poems."), skill(tmp_path / "others", "invoices"))
    (tmp_path / "fixtures").mkdir()
    work = stage_cell(tmp_path / "cell", fixtures=tmp_path / "fixtures", inputs=[],
                      skill_dir=ROOT / "suites" / "csv-clean", skill_name="csv-clean", others=others)
    installed = work / ".claude" / "skills"
    assert sorted(p.name for p in installed.iterdir()) == ["csv-clean", "invoices", "poems"]
    for name in ("poems", "invoices"):
        assert all(not f.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
                   for f in (installed / name).rglob("*") if f.is_file())
    assert (installed / "csv-clean" / "SKILL.md").stat().st_mode & stat.S_IWUSR   # the evolved copy stays the agent's
    monkeypatch.setenv("SM_SKILL_DIR", str(installed / "csv-clean"))
    block, names = skills_block(work)
    assert names == ["csv-clean", "invoices", "poems"]                               # the evolved skill first
    for name in names:
        assert f"<location>\n.claude/skills/{name}/SKILL.md\n</location>" in block
    assert "Write poems." in block
