"""Regexes from a suite's `expect` blocks, run by RE2 (google-re2): matching takes time linear in the
text, so no pattern can hang a grader and none needs a time cap. A pattern RE2 cannot take
(backreferences, lookaround, possessive or atomic groups, huge repeats) is refused when the suite loads,
with RE2's reason. It never imports the rest of the project.
"""

from __future__ import annotations

from functools import lru_cache

import re2

MAX_TEXT = 100_000          # a regex sees at most this many characters of the agent's output
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported once, in RegexRefused, not on stderr too


class RegexRefused(ValueError):
    """A pattern RE2 cannot compile; the message says why and how to rewrite it."""


@lru_cache(maxsize=1024)
def compile_checked(pattern: str):
    """The RE2 pattern, or `RegexRefused` naming the problem."""
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as err:
        raw = err.args and isinstance(err.args[0], bytes)
        reason = err.args[0].decode("utf-8", "replace") if raw else str(err)
        raise RegexRefused(f"regex {pattern!r} is refused: RE2 cannot take it ({reason}); RE2 matches in "
                           f"linear time and so has no backreferences, lookaround, possessive or atomic "
                           f"groups: rewrite it without them") from None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in the first MAX_TEXT characters of `text`."""
    return compile_checked(pattern).search(text[:MAX_TEXT]) is not None
