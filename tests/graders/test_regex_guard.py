"""Catastrophic regexes are refused at load; anything that slips through is stopped by the time cap."""

from __future__ import annotations

import re

import pytest

from eval.graders.regex_guard import (
    RegexRefused,
    RegexTimeout,
    catastrophic_shape,
    compile_checked,
    timed_search,
)


@pytest.mark.parametrize("pattern", [
    r"(a+)+$", r"(a*)*b", r"(\w+\s?)*$", r"((ab)*)+c", r"(a|a)*c", r"^(\w+)*$", r"(a+a)+b", r"(\d|[0-5]x)*y",
    r"(?:x+)+y", r"(a{1,40})+b",
])
def test_known_catastrophic_shapes_are_refused(pattern: str) -> None:
    assert catastrophic_shape(pattern)
    with pytest.raises(RegexRefused, match="exponentially"):
        compile_checked(pattern)


@pytest.mark.parametrize("pattern", [
    r"^\d{4}-\d{2}-\d{2}$", r"(yes|no)+", r"^(true|false)$", r"[a-z]+@[a-z]+\.com", r"(\d{4}-)+", r"(a++)+",
    r"(?>a+)+", r"[^,]+(,[^,]+)*$", r"(a|ab)*c", r"(?:foo|bar)+", r"^[A-Z]{3}-\d+$", r"(a{1,3}){1,3}",
])
def test_ordinary_patterns_load(pattern: str) -> None:
    assert catastrophic_shape(pattern) is None
    assert compile_checked(pattern).pattern == pattern


def test_the_time_cap_stops_a_catastrophic_match() -> None:
    # bypass the load-time refusal to prove the second layer: this search would otherwise run for hours
    with pytest.raises(RegexTimeout, match="ran past its 0.2 s cap"):
        timed_search(re.compile(r"(a+)+$"), "a" * 64 + "!", 0.2)


def test_the_cap_leaves_ordinary_matches_alone() -> None:
    assert timed_search(re.compile(r"\d+"), "abc 123", 0.5) is True
    assert timed_search(re.compile(r"\d+"), "abc", 0.5) is False
