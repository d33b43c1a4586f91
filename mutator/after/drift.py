"""Drift bands of a health check: its score (0-100) vs the previous check of the same fingerprint.

Pure functions only (no store, no process): the band, its one-line summary, the dashboard status and
the fingerprint of a check's suites + contract. The bands are guidance for a reader, not a test.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

UNCHANGED = 0.1      # points: within this, the score is "unchanged"
SLIGHT = 3.0         # a drop smaller than this is "slightly down"
REGRESSION = 10.0    # a drop of at least this is "REGRESSED"; between SLIGHT and this, "declined"

BANDS = ("baseline", "unchanged", "improved", "slightly down", "declined", "REGRESSED")
STATUS = {"baseline": "healthy", "unchanged": "healthy", "improved": "healthy", "slightly down": "drifting",
          "declined": "drifting", "REGRESSED": "regressed"}


@dataclass(frozen=True)
class Band:
    name: str
    delta: float | None
    text: str


def band(score: float, previous: float | None) -> Band:
    """Name the move from `previous` to `score` (both on 0-100; previous None = the first check)."""
    if previous is None:
        return Band("baseline", None, f"First health check: {score:.1f}/100. Later checks of the same suites "
                                      f"and contract compare against it.")
    delta = round(score - previous, 6)  # 6 places: 85.0 - 84.9 must read as 0.1, not 0.10000000000000853
    moved = f"{score:.1f}/100 ({'↑' if delta > 0 else '↓'} {abs(delta):.1f} vs {previous:.1f}/100 last time)"
    if abs(delta) <= UNCHANGED:
        return Band("unchanged", delta, f"Health check unchanged: {score:.1f}/100 (last time "
                                        f"{previous:.1f}).")
    if delta > 0:
        return Band("improved", delta, f"Health check improved: {moved}.")
    if -delta < SLIGHT:
        return Band("slightly down", delta, f"Health check slightly down: {moved}. A small drift; often just "
                                            f"model variance.")
    if -delta < REGRESSION:
        return Band("declined", delta, f"Health check declined: {moved}. Worth finding which task moved "
                                       f"(tasks are listed worst first).")
    return Band("REGRESSED", delta, f"Health check REGRESSED: {moved}. Something material changed; open the "
                                    f"per-task breakdown.")


def status(band_name: str | None) -> str:
    """healthy / drifting / regressed for the dashboard; no_data when no check produced a score."""
    return STATUS.get(band_name or "", "no_data")


def fingerprint(suites: list[tuple[str, str]], contract: dict) -> str:
    """Same suites (name + content hash, any order) and same contract (salt aside) = same fingerprint."""
    material = {"suites": sorted([list(s) for s in suites]),
                "contract": {k: v for k, v in sorted(contract.items()) if k != "salt"}}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


def task_scores(cells: list[tuple[str, float]]) -> dict[str, float]:
    """Per-task mean of finished cells' scores, on 0-100 (a failed cell counts as scored 0)."""
    sums: dict[str, list[float]] = {}
    for task, score in cells:
        sums.setdefault(task, []).append(score)
    return {task: 100.0 * sum(v) / len(v) for task, v in sums.items()}


def overall(tasks: dict[str, float]) -> float | None:
    """Every task weighs the same; None when nothing was scored (never a fake-healthy number)."""
    return sum(tasks.values()) / len(tasks) if tasks else None


def breakdown(now: dict[str, float], before: dict[str, float] | None) -> list[dict]:
    """Tasks worst first (lowest score, then biggest drop), with the previous score and delta when known."""
    before = before or {}
    out = [{"task": t, "score": s, "previous": before.get(t),
            "delta": None if t not in before else round(s - before[t], 6)} for t, s in now.items()]
    return sorted(out, key=lambda r: (r["score"], r["delta"] if r["delta"] is not None else 0.0, r["task"]))
