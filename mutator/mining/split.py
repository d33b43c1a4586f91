"""The seeded train/val/test split of mined tasks, by session: two requests of one session never land on
different sides (they share context, so one would leak the other's answer).

Sessions are shuffled by a seeded RNG (over their sorted hashes, so the order traces were read in does not
matter) and dealt to val, then test, until each holds its share of requests (20 % / 20 %), the rest to
train. With a frozen test split (the watch), only train and val are dealt (75 % / 25 % of what is left).
"""

from __future__ import annotations

import random
from collections import Counter

from eval.errors import SkillMutatorError

SHARES = {"val": 0.2, "test": 0.2}


class SplitError(SkillMutatorError, ValueError):
    """Too few sessions to split; the message says how many there are and how many are needed."""


def targets(n: int, with_test: bool) -> dict[str, int]:
    if not with_test:
        val = max(1, round(n * 0.25))
        return {"val": val, "test": 0, "train": n - val}
    val = max(1, round(n * SHARES["val"]))
    test = round(n * SHARES["test"])
    return {"val": val, "test": test, "train": n - val - test}


def split_sessions(task_sessions: list[str], *, seed: int, with_test: bool = True) -> dict[str, str]:
    """session hash -> split, for the sessions of `task_sessions` (one entry per task)."""
    sizes = Counter(task_sessions)
    if len(sizes) < 2:
        raise SplitError(f"the mined tasks come from {len(sizes)} session(s); a split that keeps sessions "
                         f"whole needs at least 2 (train and val): mine more traces or lower --since")
    order = sorted(sizes)
    random.Random(f"mine-traces:{seed}").shuffle(order)
    want = targets(len(task_sessions), with_test)
    have = Counter()
    side: dict[str, str] = {}
    for session in order:
        pick = next((s for s in ("val", "test") if have[s] < want[s]), "train")
        side[session] = pick
        have[pick] += sizes[session]
    if not have["train"]:   # big sessions can fill val and test: give train the last session dealt elsewhere
        donor = next(s for s in ("test", "val") if sum(1 for v in side.values() if v == s) > (s == "val"))
        moved = next(s for s in reversed(order) if side[s] == donor)
        side[moved] = "train"
    return side
