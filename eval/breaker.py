"""The circuit breaker: cells failing one after another on the infrastructure stop the run, not the cells.

One Breaker lives as long as a command (every evaluation it makes, the solve phase's too). It counts the
cell tries that ended infra_error in a row (any cell the agent finished, however it scored, resets the
count; a grader_error says nothing about the model API and leaves it be). Once `limit` are in a row it opens:
no further cell starts or is retried, the cells in flight finish and are stored, and `BreakerOpen` (exit 8)
stops the command, naming the cause in the last failure's words. The same command resumes once the cause is
fixed. While it is closed, an infra_error cell is tried again in place (infraRetries); so an outage costs at
most `limit - 1 + concurrency` cell tries before the stop, never every retry of every cell.
Never imports mutator/.
"""

from __future__ import annotations

from dataclasses import dataclass

from eval.errors import EXIT_INCOMPLETE, Stop

DEFAULT_LIMIT = 3


class BreakerOpen(Stop, RuntimeError):
    """`limit` cell tries in a row failed on the infrastructure (the model API, the network, the harness):
    the run stops with nothing lost (exit 8); the same command resumes once the cause is fixed."""
    exit_code = EXIT_INCOMPLETE


def api_cause(error: str) -> tuple[str, str]:
    """(what went wrong, what to do) in the user's words, read from an infra_error cell's error or a failed
    API request's message."""
    text = error.lower()
    if any(word in text for word in ("connection refused", "econnrefused", "connect call failed",
                                     "cannot connect", "connection error", "apiconnectionerror",
                                     "name or service not known", "unreachable")):
        return ("the model API cannot be reached (connection refused or no route)",
                "check that the API server is up and ANTHROPIC_BASE_URL (if set) names it, and your network "
                "or proxy settings")
    if "529" in text or "overloaded" in text:
        return ("the model API is overloaded (529 overloaded_error)",
                "wait until it answers again (https://status.anthropic.com for the public API)")
    if "429" in text or "rate_limit" in text or "ratelimit" in text:
        return ("the model API refuses for rate limits (429 rate_limit_error)",
                "wait for the limit to reset, or lower --concurrency")
    if "401" in text or "authentication" in text or "invalid x-api-key" in text:
        return ("the model API refused the key (401 authentication_error)",
                "export a valid ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)")
    if "403" in text or "permission" in text:
        return ("the model API refused the key for this request (403 permission_error)",
                "use a key whose organisation may call this model")
    if "timeout" in text or "timed out" in text:
        return ("the model API did not answer in time (timeout)",
                "check the API's status and your network")
    if any(code in text for code in ("500", "502", "503", "504", "api_error", "internalservererror")):
        return ("the model API answered with server errors (5xx)",
                "wait until it answers again")
    return ("the infrastructure failed the cells (the model API, the network or the harness)",
            "read the cells' errors (the dashboard's cell grid, or agent.stderr in each cell folder)")


@dataclass
class Breaker:
    """Counts infra_error cell tries in a row across every evaluation of one command; see the module doc."""
    limit: int = DEFAULT_LIMIT
    in_a_row: int = 0
    last_error: str = ""
    opened: str = ""            # "" while closed; once open, the stop's message

    @property
    def open(self) -> bool:
        return bool(self.opened)

    def record(self, status: str, error: str = "") -> None:
        """One cell try's outcome: infra_error counts, a finished agent resets, a grader_error is neutral."""
        if status == "grader_error":
            return
        if status != "infra_error":
            self.in_a_row, self.last_error = 0, ""
            return
        self.in_a_row += 1
        self.last_error = error or self.last_error
        if self.in_a_row >= self.limit and not self.opened:
            cause, fix = api_cause(self.last_error)
            said = self.last_error.strip().splitlines()[0][:300] if self.last_error.strip() else "(nothing)"
            self.opened = (f"{self.in_a_row} cell tries in a row failed on the infrastructure, not the skill "
                           f"(breaker.infraFailures {self.limit}): {cause}. The last one said: {said}. "
                           f"Fix: {fix}; then re-run the same command: finished cells are kept and the "
                           f"failed ones run again (nothing is lost)")

    def stop(self) -> BreakerOpen:
        return BreakerOpen(self.opened)
