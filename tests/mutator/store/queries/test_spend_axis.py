"""The spend axis: each attempt's cumulative cells and USD within its run, never going down."""

from __future__ import annotations

import dataclasses

import pytest

from mutator.store.queries import attempts
from mutator.store.queries.spend_axis import SpendPoint, cumulative


def test_the_spend_grows_attempt_by_attempt(reader, run_id) -> None:
    points = cumulative(reader, run_id)
    assert [(p.round, p.sibling) for p in points] == [(r["round"], r["sibling"])
                                                      for r in attempts.light_rows(reader, run_id)]
    assert points[0].cells > 0
    assert all(a.cells <= b.cells and a.usd <= b.usd for a, b in zip(points, points[1:]))
    assert cumulative(reader, "run-ffffff") == []


def test_a_spend_point_is_a_frozen_record() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SpendPoint(0, 0, 1, 0.5).cells = 2
