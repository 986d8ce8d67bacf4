"""Weighted sampling (scan paper B.3): the exact inverse-transform rule, its statistics, invalid weights, more
than 2^24 categories, and the simulated kernel (scans, SplitInd per sample, the baseline's 2^24 limit)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.kernels import ParamError
from ascendbench.kernels.sampling import (
    MULTINOMIAL_MAX_CATEGORIES,
    DistributionError,
    inverse_transform,
    weighted_sample,
)
from tests.kernels.chi_square import ALPHA, goodness_of_fit


def reference(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Straightforward transcription: C = float64 running sum, the first i with C[i] > u * C[-1]."""
    out = []
    for ui in u:
        total = 0.0
        cdf = []
        for w in weights:
            total += float(w)
            cdf.append(total)
        target = ui * cdf[-1]
        out.append(next(i for i, c in enumerate(cdf) if c > target))
    return np.array(out, dtype=np.int64)


weights_strategy = st.lists(st.sampled_from([0.0, 0.0, 1.0, 0.5, 3.0, 1e-4, 6e-8, 65504.0, 2.0**-20]),
                            min_size=1, max_size=60).filter(lambda w: sum(w) > 0)


@settings(max_examples=40, deadline=None)
@given(weights_strategy, st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_rule_matches_the_reference_and_never_returns_zero_weight(w, seed, chunk):
    weights = np.array(w, dtype=np.float16)
    u = np.random.default_rng(seed).random(50)
    got = inverse_transform(weights, u, chunk=chunk)
    np.testing.assert_array_equal(got, reference(weights, u))
    assert (weights[got] > 0).all()


def test_edge_uniforms_and_zero_runs():
    weights = np.array([0, 0, 2, 0, 0, 1, 0, 0], dtype=np.float16)
    u = np.array([0.0, np.nextafter(2 / 3, 0), 2 / 3, np.nextafter(1.0, 0)])
    got = inverse_transform(weights, u, chunk=3)
    np.testing.assert_array_equal(got, [2, 2, 5, 5])
    # a weight too small to move a float32 running sum still moves the float64 one
    weights = np.array([1.0, 6e-8, 0.0], dtype=np.float32)
    assert inverse_transform(weights, np.array([np.nextafter(1.0, 0)]))[0] == 1


def test_seeded_generator_and_shape():
    w = np.array([1, 2, 3], dtype=np.float16)
    a = weighted_sample(w, 1000, seed=7)
    b = weighted_sample(w, 1000, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.int32 and a.shape == (1000,)  # CUB offset type: int32 while n <= 2**31 - 1
    assert weighted_sample(w, 0).shape == (0,)


@pytest.mark.parametrize("seed", [11, 12])
def test_chi_square_against_the_weights(seed):
    rng = np.random.default_rng(seed)
    weights = (rng.random(40) * 10).astype(np.float16)
    weights[[3, 17, 25]] = 0
    draws = weighted_sample(weights, 200_000, seed=seed)
    counts = np.bincount(draws, minlength=weights.size)
    probs = weights.astype(np.float64) / weights.astype(np.float64).sum()
    stat, dof, pvalue = goodness_of_fit(counts, probs)
    assert pvalue > ALPHA, (stat, dof, pvalue)
    assert counts[[3, 17, 25]].sum() == 0


def test_more_than_2_to_the_24_categories_without_a_float32_cdf():
    """S-18: 2^24 + 4 categories. Only the last few beyond 2^24 carry weight, plus one at the front; a float32
    running sum of unit weights would stop at 2^24, the chunked float64 CDF does not."""
    n = MULTINOMIAL_MAX_CATEGORIES + 4
    weights = np.zeros(n, dtype=np.float16)
    weights[0] = 1
    weights[n - 3] = 1
    weights[n - 1] = 2
    draws = weighted_sample(weights, 40_000, seed=3)
    counts = {i: int((draws == i).sum()) for i in (0, n - 3, n - 1)}
    assert sum(counts.values()) == draws.size
    _stat, _dof, pvalue = goodness_of_fit(np.array(list(counts.values())), np.array([0.25, 0.25, 0.5]))
    assert pvalue > ALPHA, counts


def test_uniform_weights_beyond_2_to_the_24_reach_the_tail():
    n = MULTINOMIAL_MAX_CATEGORIES + 2**20
    weights = np.ones(n, dtype=np.float16)
    draws = weighted_sample(weights, 100_000, seed=5)
    # 32 equal bins of 2^19 categories + the tail bins: uniform over n
    counts = np.bincount(draws >> 19, minlength=n >> 19)
    _stat, _dof, pvalue = goodness_of_fit(counts, np.full(n >> 19, 1 / (n >> 19)))
    assert pvalue > ALPHA and counts[-2:].sum() > 0


@pytest.mark.parametrize("values, message", [
    ([1, -1, 2], "weights: element 1 is negative (-1.0)"),
    ([1, np.nan, 2], "weights: element 1 is NaN"),
    ([1, 2, np.inf], "weights: element 2 is infinite"),
    ([0, 0, 0], "weights: the total weight is zero"),
    ([], "weights: the total weight is zero (no categories)"),
])
def test_invalid_weights_are_a_clear_error(values, message):
    with pytest.raises(DistributionError) as info:
        weighted_sample(np.array(values, dtype=np.float16), 3)
    assert message in str(info.value)


def test_wrong_arguments():
    with pytest.raises(ParamError, match="--samples: must be a non-negative integer"):
        weighted_sample(np.ones(3, np.float16), -1)
    with pytest.raises(ParamError, match="--weights: must be a 1-D array"):
        weighted_sample(np.ones((2, 3), np.float16))
    with pytest.raises(ParamError, match="--weights: dtype must be float16 or float32, got int64"):
        weighted_sample(np.ones(3, np.int64))
