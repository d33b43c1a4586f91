"""bench/sequential.py's SPRT column: Wald's expected sample size against its closed form and against
simulated SPRTs."""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np
import pytest

from tests.conftest import ROOT


def load():
    sys.path.insert(0, str(ROOT / "bench"))    # bench/sequential.py imports bench/gate.py as `gate`
    spec = importlib.util.spec_from_file_location("sequential_bench", ROOT / "bench" / "sequential.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wald_expected_sample_size_is_the_closed_form():
    bench = load()
    # α 0.05, power 0.8, θ 1, σ 1: A = log 16, B = log(0.2/0.95), drift ½
    a, b = math.log(16), math.log(0.2 / 0.95)
    n0, n1 = bench.wald_asn(0.05, 0.8, 1.0)
    assert n0 == pytest.approx((0.05 * a + 0.95 * b) / -0.5, rel=1e-12) == pytest.approx(2.683216, abs=1e-6)
    assert n1 == pytest.approx((0.8 * a + 0.2 * b) / 0.5, rel=1e-12) == pytest.approx(3.812884, abs=1e-6)
    # σ scales it by σ²; the sign of the effect does not matter; cells: effect k/√(nR) per paired cell
    assert bench.wald_asn(0.05, 0.8, 2.0, sigma=2.0) == pytest.approx((n0, n1))
    assert bench.wald_asn(0.05, 0.8, -1.0) == pytest.approx((n0, n1))
    assert bench.sprt_cells(8, 4, -3.0, 0.05, 0.8) == pytest.approx(n1 * 32 / 9)
    with pytest.raises(ValueError):
        bench.wald_asn(0.2, 0.1, 1.0)


def test_a_simulated_sprt_takes_walds_expected_sample_size():
    # small steps (θ = 0.1σ) keep the overshoot Wald's form ignores small: simulated means 0-10% above it
    bench = load()
    alpha, power, theta = 0.159, 0.8, 0.1
    lo, hi = math.log((1 - power) / (1 - alpha)), math.log(power / alpha)
    rng = np.random.default_rng(1)
    for mu, expected in zip((0.0, theta), bench.wald_asn(alpha, power, theta)):
        x = rng.normal(mu, 1.0, size=(4000, 3000))
        llr = np.cumsum(theta * (x - theta / 2), axis=1)
        out = (llr <= lo) | (llr >= hi)
        assert out.any(axis=1).all()
        steps = out.argmax(axis=1) + 1
        assert expected * 0.99 <= steps.mean() <= expected * 1.10
