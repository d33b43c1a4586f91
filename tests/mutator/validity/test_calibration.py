"""The beta-binomial fit of SkillsBench's trials (mutator/validity/calibration.py) reproduces the data."""

import math

import pytest

from mutator.validity import calibration as cal


@pytest.mark.parametrize("condition", [None, "No Skills", "With Skills"])
def test_fit_reproduces_the_passcount_histogram(condition):
    f = cal.fit(condition)
    observed = cal.histogram(condition)
    assert sum(observed.values()) == f.cells == (3132 if condition is None else 1566)
    expected = {k: f.pmf(k) * f.cells for k in observed}
    # a 3-parameter-free check: chi-square over the 4 bins, 2 params fitted → 1 df; 6.6 is p 0.01
    chi2 = sum((observed[k] - expected[k]) ** 2 / expected[k] for k in observed)
    assert chi2 < 6.6, (observed, expected)
    for k in observed:
        assert abs(observed[k] - expected[k]) / f.cells < 0.015


def test_parameters_near_the_reference_note():
    # ../shared/reference/noise-calibration.md: all rows Beta(0.245, 0.304), No Skills Beta(0.195, 0.334),
    # With Skills Beta(0.322, 0.293), E[p(1-p)] 0.088
    for condition, (a, b) in [(None, (0.245, 0.304)), ("No Skills", (0.195, 0.334)),
                              ("With Skills", (0.322, 0.293))]:
        f = cal.fit(condition)
        assert f.alpha == pytest.approx(a, abs=0.005) and f.beta == pytest.approx(b, abs=0.005)
    assert cal.fit().trial_var == pytest.approx(0.088, abs=0.001)
    assert cal.fit().trial_sd == pytest.approx(0.30, abs=0.01)


def test_fitted_trial_variance_matches_the_datas_own():
    for condition in (None, "No Skills"):
        assert cal.fit(condition).trial_var == pytest.approx(cal.empirical_trial_var(condition), abs=0.002)


def test_pass_fail_sigma_is_a_paired_task_delta_at_r_replicates():
    v = cal.fit().trial_var
    assert cal.pass_fail_sigma(3) == pytest.approx(math.sqrt(2 * v / 3))
    assert cal.pass_fail_sigma(3) == pytest.approx(0.24, abs=0.005)   # the "~0.24 at 3 replicates"
    assert cal.pass_fail_sigma(1, cal.preset("tau")) == pytest.approx(
        math.sqrt(2 * 0.84 * 0.53 / (1.37 * 2.37)))
    with pytest.raises(ValueError, match="replicates 0"):
        cal.pass_fail_sigma(0)


def test_fit_is_cached_and_bad_names_are_named():
    assert cal.fit("No Skills") is cal.fit("No Skills")
    assert cal.preset("skillsbench") is cal.fit("No Skills")
    with pytest.raises(ValueError, match="'Some Skills'"):
        cal.fit("Some Skills")
    with pytest.raises(ValueError, match="'nope'"):
        cal.preset("nope")
