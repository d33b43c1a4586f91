"""Expectation regexes run on RE2: linear-time matching, and patterns RE2 cannot take refused at load."""

from __future__ import annotations

import pytest

from eval.graders.regex_guard import MAX_TEXT, RegexRefused, compile_checked, search


@pytest.mark.parametrize("pattern, reason", [
    (r"(a)\1", "invalid escape sequence"),          # a backreference
    (r"(?=x)y", "invalid perl operator"),           # lookahead
    (r"(?<!x)y", "invalid perl operator"),          # lookbehind
    (r"(a++)+", "bad repetition operator"),         # possessive
    (r"(?>a+)+", "invalid perl operator"),          # atomic group
    (r"x{1001}", "invalid repetition size"),
    (r"(", "missing )"),
])
def test_patterns_re2_cannot_take_are_refused_with_its_reason(pattern: str, reason: str) -> None:
    with pytest.raises(RegexRefused, match="RE2 cannot take it") as err:
        compile_checked(pattern)
    assert reason in str(err.value) and "rewrite it without them" in str(err.value)


@pytest.mark.parametrize("pattern", [
    r"^\d{4}-\d{2}-\d{2}$", r"(yes|no)+", r"^(true|false)$", r"[a-z]+@[a-z]+\.com", r"(\d{4}-)+",
    r"[^,]+(,[^,]+)*$", r"(a|ab)*c", r"(?:foo|bar)+", r"^[A-Z]{3}-\d+$", r"(a{1,3}){1,3}", r"(?i)invoice",
])
def test_ordinary_patterns_load(pattern: str) -> None:
    assert compile_checked(pattern) is not None


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a*)*b", r"(\w+\s?)*$", r"(a|a)*c", r"^(\w+)*$"])
def test_patterns_that_backtrack_exponentially_elsewhere_match_in_linear_time(pattern: str) -> None:
    # With a backtracking engine each of these runs for hours on this text; RE2 answers at once.
    assert search(pattern, "a" * 5000 + "!") in (True, False)
    assert search(pattern, "a" * MAX_TEXT * 2) in (True, False)


def test_matches_and_misses() -> None:
    assert search(r"\d+", "abc 123") is True
    assert search(r"\d+", "abc") is False
    assert search(r"^INV-\d+$", "INV-0042") is True
    assert search(r"tail$", "x" * MAX_TEXT + "tail") is False   # only the first MAX_TEXT characters are seen
