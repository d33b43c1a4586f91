"""Drift bands on constructed scores, the fingerprint, and the per-task breakdown."""

from __future__ import annotations

import pytest

from mutator.after import drift


@pytest.mark.parametrize(("score", "previous", "name", "status"), [
    (85.4, None, "baseline", "healthy"),
    (85.4, 85.4, "unchanged", "healthy"),
    (85.5, 85.4, "unchanged", "healthy"),       # exactly 0.1 up
    (85.3, 85.4, "unchanged", "healthy"),       # exactly 0.1 down
    (85.6, 85.4, "improved", "healthy"),
    (92.0, 85.0, "improved", "healthy"),
    (85.2, 85.4, "slightly down", "drifting"),
    (82.01, 85.0, "slightly down", "drifting"),  # 2.99 down
    (82.0, 85.0, "declined", "drifting"),        # exactly 3 down
    (75.01, 85.0, "declined", "drifting"),       # 9.99 down
    (75.0, 85.0, "REGRESSED", "regressed"),      # exactly 10 down
    (0.0, 100.0, "REGRESSED", "regressed"),
])
def test_bands(score, previous, name, status):
    band = drift.band(score, previous)
    assert band.name == name
    assert drift.status(band.name) == status
    assert f"{score:.1f}/100" in band.text
    if previous is None:
        assert band.delta is None and "First health check" in band.text
    else:
        assert band.delta == pytest.approx(score - previous)


def test_band_texts_say_the_direction_and_the_previous_score():
    assert "↑ 7.0 vs 85.0/100" in drift.band(92.0, 85.0).text
    assert drift.band(70.0, 85.0).text.startswith("Health check REGRESSED: 70.0/100 (↓ 15.0 vs 85.0/100")


def test_no_score_is_no_data():
    assert drift.status(None) == "no_data"
    assert drift.overall({}) is None


def test_fingerprint_ignores_suite_order_and_the_salt_but_not_the_contract():
    contract = {"model": "m", "replicates": 2, "salt": "check-1"}
    a = drift.fingerprint([("val", "h1"), ("test", "h2")], contract)
    assert a == drift.fingerprint([("test", "h2"), ("val", "h1")], {**contract, "salt": "check-9"})
    assert a != drift.fingerprint([("val", "h1")], contract)
    assert a != drift.fingerprint([("val", "h1"), ("test", "h2")], {**contract, "replicates": 3})
    assert a != drift.fingerprint([("val", "CHANGED"), ("test", "h2")], contract)


def test_task_scores_overall_and_worst_first_breakdown():
    tasks = drift.task_scores([("s/a", 1.0), ("s/a", 0.5), ("s/b", 0.2), ("s/c", 0.2)])
    assert tasks == {"s/a": 75.0, "s/b": pytest.approx(20.0), "s/c": pytest.approx(20.0)}
    assert drift.overall(tasks) == pytest.approx(115 / 3)
    rows = drift.breakdown(tasks, {"s/b": 20.0, "s/c": 60.0})
    assert [r["task"] for r in rows] == ["s/c", "s/b", "s/a"]   # tie on score: the bigger drop first
    assert rows[0]["delta"] == pytest.approx(-40.0) and rows[2]["previous"] is None
