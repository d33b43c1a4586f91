"""Skill telemetry aggregated per evaluation (mutator/store/skill_use.py): every file of the skill listed, read or
not; a script's cells counted once however often it ran; failures are non-zero exits, unknown exits are not."""

from __future__ import annotations

from eval.skill_use import SkillUse
from mutator.store.skill_use import cell_uses, tally, task_text

FILES = ["SKILL.md", "references/x.md", "scripts/fix.py"]


def use(read=("SKILL.md",), runs=(), loaded=True, tokens=10) -> SkillUse:
    return SkillUse(loaded, 1 if loaded else None, tuple(read), tuple(runs), tokens)


def test_files_never_read_and_scripts_failing_are_counted_per_cell() -> None:
    uses = [use(runs=[("scripts/fix.py", 1), ("scripts/fix.py", 0)]), use(runs=[("scripts/fix.py", 0)]),
            use(runs=[("scripts/fix.py", None)], tokens=20), use(read=(), loaded=False, tokens=0), None]
    found = tally(uses, FILES)
    assert (found.cells, found.loaded, found.read_tokens_est) == (4, 3, 10.0)
    assert found.lines() == ["SKILL.md read in 3 of 4 cells", "references/x.md read in 0 of 4 cells",
                             "scripts/fix.py run in 3 of 4, failed in 1"]
    assert found.summary().startswith("skill loaded in 3 of 4 cells; ~10 tokens per cell reading it (an estimate")


def test_task_text_says_not_loaded_and_what_ran() -> None:
    assert task_text(tally([use(read=(), loaded=False)] * 2)) == "NOT loaded (0/2)"
    assert task_text(tally([use(runs=[("scripts/fix.py", 2)]), use()])) == \
        "loaded 2/2; read SKILL.md 2; ran scripts/fix.py 1 (failed 1)"
    assert task_text(tally(cell_uses([{"skill_use": None}]))) == "—"
