"""A key is declared once in a record's field; a section's keys are listed where the section stands and keep
their own flat names; records are built from values keyed by flat name."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mutator.settings.keys import Record, build, key, keys_of, positive, section


@dataclass(frozen=True, kw_only=True)
class Inner(Record):
    tasks: int = key("inner.tasks", positive, "an integer >= 1", 6, attr="inner_tasks")
    z: float = key("inner.z", default=2.0)


@dataclass(frozen=True, kw_only=True)
class Outer:
    first: str = key("first", help="the first", group="g")
    inner: Inner = section()
    last: bool = key("last", default=False)
    extra: int = 0


def test_a_sections_keys_are_listed_where_it_stands_with_their_flat_names() -> None:
    found = keys_of(Outer)
    assert [(k.attr, k.path, k.section, k.name, k.kind) for k in found] == [
        ("first", "first", "", "first", str), ("inner_tasks", "inner.tasks", "inner", "tasks", int),
        ("z", "inner.z", "inner", "z", float), ("last", "last", "", "last", bool)]
    assert found[1].env == "SKILL_MUTATOR_INNER_TASKS" and found[1].option == "--inner-tasks"
    assert found[1].check(1) and not found[1].check(0) and found[1].default == 6


def test_build_makes_the_sections_from_flat_names() -> None:
    made = build(Outer, {"first": "a", "inner_tasks": 3, "z": 1.5, "last": True}, extra=7)
    assert made == Outer(first="a", inner=Inner(tasks=3, z=1.5), last=True, extra=7)


def test_a_section_is_not_a_truth_value() -> None:
    with pytest.raises(TypeError, match="Inner is a record of settings"):
        bool(Inner(tasks=1, z=1.0))
