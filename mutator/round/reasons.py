"""Why an attempt got a verdict the loop gives itself (SEED, CRITIC, FAILED, SCREENED), in the words stored
with it.

KEEP and REJECT reasons come from the strategy's `integrate` (strategies/reasons.py); these are the rest.
Pure: the attempt's fields in, one line out. The dashboard shows what is stored and never re-derives it.
"""

from __future__ import annotations

SEED = "seed: the baseline the first candidates are compared with"


def first_line(text: str | None, default: str = "") -> str:
    return (str(text or default).splitlines() or [""])[0]


def critic(checks: list[dict], error: str | None = None) -> str:
    """A critic rejection: the guards that failed, and the first one's reason."""
    failed = [c for c in checks if isinstance(c, dict) and c.get("verdict") == "fail"]
    if failed:
        names = ", ".join(f"'{c.get('gate')}'" for c in failed)
        return f"not evaluated: critic gate {names} failed — {failed[0].get('reason') or ''}".rstrip(" —")
    return "not evaluated: rejected by the critic" + (f" — {error}" if error else "")


def failed(error: str | None) -> str:
    return "failed: " + first_line(error, "no reason recorded")


def screened(error: str | None) -> str:
    """The kill-only train screen (mutator/round/waves.py) said why on the row's error."""
    return "screened out before val: " + first_line(error).removeprefix("screened out on ")


def for_fields(fields: dict) -> dict:
    """`fields` (an attempt update) plus its `reason` when it sets one of the loop's own verdicts."""
    verdict = fields.get("verdict")
    words = {"SEED": lambda: SEED, "FAILED": lambda: failed(fields.get("error")),
             "SCREENED": lambda: screened(fields.get("error"))}.get(verdict)
    return {**fields, "reason": words()} if words else fields


def overturned(error: str) -> str:
    return "rejected: " + error


CONFIRMED = "; the keep stands on fresh val replicates"
