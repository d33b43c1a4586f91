"""Regexes from a suite's `expect` blocks: refuse catastrophic-backtracking shapes at load, cap run time.

Two layers, because a static check cannot catch every slow pattern: `check_pattern` refuses the known
shapes (a quantifier nested in an unbounded quantifier, overlapping alternatives under one) when the
suite loads; `timed_search` stops any match after a time cap. It never imports the rest of the project.
"""

from __future__ import annotations

import re
import signal
import threading
from re import _constants as C  # noqa: N812  (the parser's opcode names)
from re import _parser as sre_parse

MAX_TEXT = 100_000          # a regex sees at most this many characters of the agent's output
NESTING_LIMIT = 32          # an outer repeat allowing more than this many loops counts as unbounded
NON_ASCII = 128             # one marker for "some character outside ASCII"
EMPTY = -1                  # marker for "matches the empty string"
ALL = frozenset(range(NON_ASCII + 1))
REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT)
CATEGORY_ESCAPES = {C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_WORD: r"\w",
                    C.CATEGORY_NOT_WORD: r"\W", C.CATEGORY_SPACE: r"\s", C.CATEGORY_NOT_SPACE: r"\S"}


class RegexRefused(ValueError):
    """A pattern does not compile or has a catastrophic-backtracking shape; the message says how to fix it."""


class RegexTimeout(Exception):
    """A match ran past its time cap."""


def compile_checked(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` or raise `RegexRefused` naming the problem."""
    try:
        compiled = re.compile(pattern)
    except re.error as err:
        raise RegexRefused(f"regex {pattern!r} does not compile: {err}") from None
    problem = catastrophic_shape(pattern)
    if problem:
        raise RegexRefused(f"regex {pattern!r} is refused: {problem}")
    return compiled


def catastrophic_shape(pattern: str) -> str | None:
    """Why `pattern` can backtrack exponentially (a known shape), or None."""
    return _walk(sre_parse.parse(pattern), None)


def _walk(items, loop: frozenset[int] | None) -> str | None:
    """`loop` is the first-character set of the innermost unbounded loop body around `items`, or None.

    A variable quantifier inside an unbounded loop is ambiguous (exponential) when what it repeats can
    also start the loop's next pass: (a+)+, (\\w+\\s?)*. A delimiter that only starts the pass keeps
    it linear: [^,]+(,[^,]+)*.
    """
    for op, av in items:
        if op in REPEATS:
            lo, hi, sub = av
            if loop is not None and hi != lo and hi > 1 and _first(sub)[0] & loop:
                return ("a quantifier nested inside an unbounded quantifier, repeating what can also start "
                        "the outer repetition (like (a+)+ or (\\w+\\s?)*), backtracks exponentially; "
                        "quantify one level only, start each pass with a delimiter, or make it possessive (a++)")
            unbounded = hi == C.MAXREPEAT or hi > NESTING_LIMIT
            found = _walk(sub, _first(sub)[0] if unbounded else loop)
        elif op is C.SUBPATTERN:
            found = _walk(av[-1], loop)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            found = _walk(av[1], loop)
        elif op is C.ATOMIC_GROUP:
            found = _walk(av, None)      # an atomic group never backtracks into itself
        elif op is C.POSSESSIVE_REPEAT:
            found = _walk(av[2], None)
        elif op is C.BRANCH:
            branches = av[1]
            if loop is not None:
                # an alternative that can match nothing overlaps every other such alternative: (a|a)* parses
                # as a(?:|)*, two empty alternatives under one loop
                firsts = [first | ({EMPTY} if nullable else set()) for first, nullable in map(_first, branches)]
                for i, left in enumerate(firsts):
                    for right in firsts[i + 1:]:
                        if left & right:
                            return ("alternatives that can start with the same character (or both match "
                                    "nothing) under an unbounded quantifier, like (a|a)* or (\\d|[0-5]x)*, "
                                    "backtrack exponentially; make the alternatives start differently")
            found = next((p for p in (_walk(b, loop) for b in branches) if p), None)
        else:
            found = None
        if found:
            return found
    return None


def _first(items) -> tuple[frozenset[int], bool]:
    """(characters the sequence can start with, whether it can match the empty string)."""
    chars: set[int] = set()
    for op, av in items:
        first, nullable = _first_of(op, av)
        chars |= first
        if not nullable:
            return frozenset(chars), False
    return frozenset(chars), True


def _first_of(op, av) -> tuple[frozenset[int], bool]:
    if op is C.LITERAL:
        return frozenset({min(av, NON_ASCII)}), False
    if op is C.NOT_LITERAL:
        return ALL - {av}, False
    if op is C.ANY:
        return ALL, False
    if op is C.IN:
        return _class_chars(av), False
    if op is C.SUBPATTERN:
        return _first(av[-1])
    if op is C.ATOMIC_GROUP:
        return _first(av)
    if op in (*REPEATS, C.POSSESSIVE_REPEAT):
        first, nullable = _first(av[2])
        return first, nullable or av[0] == 0
    if op is C.BRANCH:
        parts = [_first(b) for b in av[1]]
        return frozenset().union(*(p[0] for p in parts)), any(p[1] for p in parts)
    if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
        return frozenset(), True
    return ALL, True   # back-references and anything unusual: assume the worst


def _class_chars(items) -> frozenset[int]:
    chars: set[int] = set()
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars.add(min(av, NON_ASCII))
        elif op is C.RANGE:
            lo, hi = av
            chars.update(range(min(lo, NON_ASCII), min(hi, NON_ASCII) + 1))
        elif op is C.CATEGORY and av in CATEGORY_ESCAPES:
            escape = re.compile(CATEGORY_ESCAPES[av])
            chars.update(c for c in range(NON_ASCII) if escape.match(chr(c)))
            chars.add(NON_ASCII)
        else:
            return ALL
    return ALL - chars if negate else frozenset(chars)


def timed_search(compiled: re.Pattern[str], text: str, timeout_s: float) -> bool:
    """Whether `compiled` finds a match in `text`; raises `RegexTimeout` past `timeout_s`.

    The cap uses SIGALRM, so it holds only on the main thread; elsewhere the caller's process-level
    timeout (the expectations grader runs as its own process) is the backstop.
    """
    text = text[:MAX_TEXT]
    if threading.current_thread() is not threading.main_thread() or timeout_s <= 0:
        return compiled.search(text) is not None

    def expire(signum, frame):
        raise RegexTimeout(f"regex {compiled.pattern!r} ran past its {timeout_s:g} s cap")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return compiled.search(text) is not None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
