"""Per-evaluation trigger figures from the cells' skill-usage rows: trigger recall (share of trigger:true
cells that loaded the skill) and false-trigger rate (share of trigger:false cells that loaded it).

Reads only stored rows (cells.skill_use and the evaluation's no_trigger_tasks), so every figure re-derives
from the store. Cells with no skill-usage record are left out of both shares; a share with no cell is None.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from eval.skill_use import SkillUse
from eval.suite import Suite


def no_trigger_json(suite: Suite) -> str | None:
    """The suite's trigger:false task ids as stored on its evaluations (None when
    every task should trigger)."""
    ids = [t.id for t in suite.tasks if not t.trigger]
    return json.dumps(ids) if ids else None


def no_trigger_ids(evaluation: dict) -> frozenset[str]:
    return frozenset(json.loads(evaluation.get("no_trigger_tasks") or "[]"))


def loaded(cell: dict) -> bool | None:
    """Whether the cell's agent loaded the skill, from its skill_use JSON; None when it was not recorded."""
    raw = cell.get("skill_use")
    return SkillUse.from_json(raw).loaded if raw else None


def rates(cells: Iterable[dict], no_trigger: frozenset[str]) -> dict[str, float | None]:
    """{"trigger_recall", "false_trigger_rate"} over the cells with a skill-usage record."""
    should, should_not = [], []
    for cell in cells:
        if (was := loaded(cell)) is not None:
            (should_not if cell["task_id"] in no_trigger else should).append(was)
    return {"trigger_recall": sum(should) / len(should) if should else None,
            "false_trigger_rate": sum(should_not) / len(should_not) if should_not else None}


def stored_rates(db, evaluation_id: int | None) -> dict | None:
    """One evaluation's rates as the loop stored them ({recall, false_trigger_rate, no_trigger_tasks}); None
    when it has none (no telemetry, a store from before them, or no such evaluation). Never re-derived."""
    if not evaluation_id or "trigger_recall" not in db["evaluations"].columns_dict:
        return None
    found = list(db.query("select trigger_recall, false_trigger_rate, "
                          "no_trigger_tasks from evaluations where id = ?",
                          [evaluation_id]))
    if not found or (found[0]["trigger_recall"] is None and found[0]["false_trigger_rate"] is None):
        return None
    row = found[0]
    return {"recall": row["trigger_recall"], "false_trigger_rate": row["false_trigger_rate"],
            "no_trigger_tasks": json.loads(row["no_trigger_tasks"] or "[]")}

