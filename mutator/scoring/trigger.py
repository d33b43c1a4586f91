"""Triggering in the score (score.wTrigger): did the agent load the skill when its task
says it should, and only then.

A cell's hit is 1 when its loading matched its task's `trigger` (loaded on a trigger:true task, not loaded on
a trigger:false near-miss), else 0. With wTrigger > 0 a trigger:false cell scores its hit in place of its
grader's score (a near-miss request is the skill's business only in that it is left alone), and each task's
composite gains the term −wTrigger·(1 − its cells' hit share), paired per task by the gate like cost and
steps. With wTrigger 0 (the default) neither applies. A cell with no telemetry (`loaded` None) has no hit: it
scores its grade and adds no term.
Pure: never touches the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Cell(Protocol):
    score: float
    ok: bool
    loaded: bool | None
    trigger: bool


def hit(cell: Cell) -> float | None:
    """1.0 when the cell's loading matched its task's trigger, 0.0 when not, None when it was not recorded."""
    return None if cell.loaded is None else float(cell.loaded == cell.trigger)


def cell_score(cell: Cell, w_trigger: float) -> float:
    """The score a cell counts with: its grade, or its hit for a trigger:false task when wTrigger > 0."""
    if w_trigger > 0 and not cell.trigger and cell.ok and cell.loaded is not None:
        return float(not cell.loaded)
    return cell.score


def term(cells: Sequence[Cell], w_trigger: float) -> float:
    """−wTrigger·(1 − hit share) over the cells with telemetry; 0 with wTrigger 0 or no telemetry."""
    hits = [h for c in cells if (h := hit(c)) is not None]
    if w_trigger <= 0 or not hits:
        return 0.0
    return -w_trigger * (1.0 - sum(hits) / len(hits))
