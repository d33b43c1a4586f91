"""Skill telemetry aggregated per evaluation: of its cells, how many loaded the skill, and per file of the
skill how many read it and how many ran it (and how many of those runs failed). Derived from `cells.skill_use`
(eval/skill_use.py), never stored twice; tokens spent reading the skill are an estimate and say so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import sqlite_utils

from eval.skill_use import SkillUse


@dataclass(frozen=True)
class FileUse:
    path: str
    read: int        # cells that read it
    run: int         # cells that ran it
    failed: int      # cells where a run of it exited non-zero


@dataclass(frozen=True)
class SkillUseTally:
    # cells with telemetry (a bare cell, or one stored before telemetry, has none)
    cells: int
    loaded: int
    read_tokens_est: float       # mean per cell with telemetry: an estimate from the reads' result sizes
    files: tuple[FileUse, ...]

    def lines(self) -> list[str]:
        """One sentence per file, e.g. "references/x.md read in 0 of 64 cells"."""
        said = []
        for f in self.files:
            text = f"{f.path} read in {f.read} of {self.cells} cells"
            if f.run:
                text = f"{f.path} run in {f.run} of {self.cells}, failed in {f.failed}" + \
                    (f" (read in {f.read})" if f.read else "")
            said.append(text)
        return said

    def summary(self) -> str:
        return (f"skill loaded in {self.loaded} of {self.cells} cells; ~{self.read_tokens_est:.0f} tokens "
                "per cell reading it (an estimate from the size of what those reads returned)")

    def to_json(self) -> dict:
        return {**asdict(self), "files": [asdict(f) for f in self.files]}


def tally(uses: Iterable[SkillUse | None], skill_files: Sequence[str] = ()) -> SkillUseTally:
    """Aggregate cells' SkillUse (None: no telemetry, not counted); every file of the skill is listed, read or
    not, so a file never read shows as 0."""
    known = [u for u in uses if u is not None]
    read: dict[str, int] = dict.fromkeys(skill_files, 0)
    run: dict[str, int] = {}
    failed: dict[str, int] = {}
    for use in known:
        for path in use.files_read:
            read[path] = read.get(path, 0) + 1
        for path in {p for p, _ in use.scripts_run}:
            run[path] = run.get(path, 0) + 1
        for path in {p for p, code in use.scripts_run if code not in (0, None)}:
            failed[path] = failed.get(path, 0) + 1
    paths = sorted(set(read) | set(run))
    return SkillUseTally(
        cells=len(known), loaded=sum(u.loaded for u in known),
        read_tokens_est=sum(u.read_tokens_est for u in known) / len(known) if known else 0.0,
        files=tuple(FileUse(p, read.get(p, 0), run.get(p, 0), failed.get(p, 0)) for p in paths))


def cell_uses(rows: Iterable[dict]) -> list[SkillUse | None]:
    return [SkillUse.from_json(r["skill_use"]) if r.get("skill_use") else None for r in rows]


def evaluation_tally(db: sqlite_utils.Database, evaluation_ids: Sequence[int],
                     skill_files: Sequence[str] = ()) -> SkillUseTally:
    """The tally of these evaluations' cells (a group's members, or one evaluation)."""
    marks = ", ".join("?" * len(evaluation_ids))
    rows = db.query(f"select skill_use from cells where evaluation_id in ({marks})", list(evaluation_ids)) \
        if evaluation_ids else []
    return tally(cell_uses(rows), skill_files)


def task_text(found: SkillUseTally) -> str:
    """One task's skill use in a table cell: "loaded 4/4; read SKILL.md 4, rules.json 4; ran scripts/fix.py 4
    (failed 1)"; "—" when its cells have no telemetry."""
    if not found.cells:
        return "—"
    if not found.loaded:
        return f"NOT loaded (0/{found.cells})"
    parts = [f"loaded {found.loaded}/{found.cells}"]
    read = [f"{f.path} {f.read}" for f in found.files if f.read]
    ran = [f"{f.path} {f.run}" + (f" (failed {f.failed})" if f.failed else "") for f in found.files if f.run]
    if read:
        parts.append("read " + ", ".join(read))
    if ran:
        parts.append("ran " + ", ".join(ran))
    return "; ".join(parts)


def skill_files(root: Path) -> list[str]:
    """The skill folder's files, relative and sorted: the rows of a tally, read or not."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file()) if root.is_dir() else []
