"""The chi-square survival function used by the sampler tests, against closed forms."""

import math

import numpy as np
import pytest

from tests.kernels.chi_square import chi2_sf, goodness_of_fit


@pytest.mark.parametrize("x", [0.01, 0.5, 1.0, 3.841, 7.0, 10.828, 30.0, 80.0])
def test_one_and_two_degrees_of_freedom(x):
    assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9, abs=1e-300)
    assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-9)


def test_tabulated_critical_values():
    # chi-square table: upper 5% and 0.1% points
    assert chi2_sf(18.307, 10) == pytest.approx(0.05, rel=1e-3)
    assert chi2_sf(29.588, 10) == pytest.approx(0.001, rel=1e-3)
    assert chi2_sf(124.342, 100) == pytest.approx(0.05, rel=1e-3)


def test_goodness_of_fit_rejects_a_wrong_distribution():
    rng = np.random.default_rng(1)
    probs = np.array([0.5, 0.3, 0.2])
    counts = np.bincount(rng.choice(3, size=20_000, p=[0.48, 0.32, 0.2]), minlength=3)
    assert goodness_of_fit(counts, probs)[2] < 1e-3
    counts = np.bincount(rng.choice(3, size=20_000, p=probs), minlength=3)
    assert goodness_of_fit(counts, probs)[2] > 1e-3
