"""What the loop decided, as it stored it: each round's incumbent and each attempt's verdict reason.

The loop writes `attempts.incumbent_after` (every attempt of a round carries the incumbent once that round was
integrated) and `attempts.reason` (the strategy's words for KEEP/REJECT, the loop's for the rest); this module
only reads them back. It never restates a strategy's rule: a strategy that changes its rule changes what is
stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# one rule, read by compare and queries as D.genome_composites
from mutator.store.backfill import genome_composites as genome_composites


def incumbents(rows: Sequence[dict]) -> dict[int, str | None]:
    """round -> the incumbent once that round was integrated; a round not integrated yet still has the last
    one."""
    stored: dict[int, str | None] = {}
    for r in rows:
        if r.get("incumbent_after") is not None:
            stored.setdefault(r["round"], r["incumbent_after"])
    out: dict[int, str | None] = {}
    current = None
    for rnd in sorted({r["round"] for r in rows}):
        current = stored.get(rnd, current)
        out[rnd] = current
    return out


def pending(a: dict) -> str:
    """The words for an attempt with no verdict yet (nothing is decided, so nothing is stored)."""
    if a.get("status") == "scored":
        return "scored: waiting for the round's other candidates before the verdict"
    return f"in progress ({a.get('status') or 'pending'})"


def annotate(targets: Iterable[dict]) -> None:
    """Set each attempt's `reason` to the stored one (targets were read with their `reason` column)."""
    for a in targets:
        if a.get("reason"):
            continue
        if a.get("verdict") is None:
            a["reason"] = pending(a)
        else:   # decided by a loop that stored no reason (an older version still writing this store)
            error = str(a.get("error") or "").splitlines()
            a["reason"] = f"{str(a['verdict']).lower()}: {error[0] if error else 'no reason recorded'}"
