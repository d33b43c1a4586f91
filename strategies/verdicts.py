"""The round's vocabulary: an attempt's verdict and status, and a run's status, one StrEnum each.

They are `str`s, so the store's columns, the JSON the dashboard reads and every comparison keep today's
strings ('KEEP', 'kept', 'finished'); code names a member instead of spelling the string. Strategies decide
KEEP/REJECT; the loop and the store use the rest. Adding a member is adding its line here (the store refuses
any other string).
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """What was decided about an attempt (attempts.verdict)."""
    SEED = "SEED"            # round 0: the seed, the first incumbent
    KEEP = "KEEP"            # passed the gate (and the strategy kept it)
    REJECT = "REJECT"        # failed the gate, or a sibling / pool rule left it out
    CRITIC = "CRITIC"        # a critic guard refused it before any evaluation
    SCREENED = "SCREENED"    # the kill-only train screen found a decisive loss
    FAILED = "FAILED"        # no verdict could rest on it (mutator error, unhealthy evaluation)


class AttemptStatus(StrEnum):
    """Where an attempt is (attempts.status)."""
    SEED = "seed"
    PENDING = "pending"                  # made, not yet evaluated
    SCORED = "scored"                    # evaluated on val, its round not yet integrated
    KEPT = "kept"
    REJECTED = "rejected"
    CRITIC_REJECTED = "critic_rejected"
    SCREENED = "screened"
    FAILED = "failed"

    @classmethod
    def decided(cls, verdict: Verdict | str) -> AttemptStatus:
        """The status an integrated verdict leaves the attempt in."""
        return {Verdict.KEEP: cls.KEPT, Verdict.REJECT: cls.REJECTED, Verdict.SEED: cls.SEED,
                Verdict.CRITIC: cls.CRITIC_REJECTED, Verdict.SCREENED: cls.SCREENED,
                Verdict.FAILED: cls.FAILED}[Verdict(verdict)]


class RunStatus(StrEnum):
    """Where a run is (runs.status; test runs and health checks use the same words)."""
    RUNNING = "running"
    FINISHED = "finished"
    STOPPED = "stopped"      # a budget, Ctrl-C or a full disk: the same command resumes
    FAILED = "failed"
    # shown, never stored: a running record whose writer stopped beating (store/liveness)
    STALE = "stale"


# a candidate's outcomes
FINAL = (Verdict.KEEP, Verdict.REJECT, Verdict.SCREENED, Verdict.CRITIC, Verdict.FAILED)
