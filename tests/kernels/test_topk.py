"""Top-k by value bisection on SplitInd (scan paper §5.4): the first k of NumPy's stable order, k = 0 ... n."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels.topk import simulate_topk, topk, topk_bisection

HW = load_profile("ascend-910b4")


def reference(x, k, largest):
    if largest:  # stable descending, NaNs first (the largest, as torch.topk)
        wide = x.astype(np.float64)
        nan = np.isnan(wide)
        rest = np.flatnonzero(~nan)
        order = np.concatenate([np.flatnonzero(nan), rest[np.argsort(-wide[rest], kind="stable")]])
    else:
        order = np.argsort(x, kind="stable")
    return order[:k]


@settings(max_examples=50, deadline=None)
@given(dtype=st.sampled_from([np.float16, np.int8, np.uint16, np.int32]), n=st.sampled_from([1, 2, 5, 100, 9000]),
       seed=st.integers(0, 2**16), kfrac=st.sampled_from([0.0, 0.01, 0.5, 1.0]), largest=st.booleans(),
       few=st.booleans())
def test_topk_is_the_first_k_of_the_stable_order(dtype, n, seed, kfrac, largest, few):
    rng = np.random.default_rng(seed)
    if dtype == np.float16:
        x = rng.standard_normal(n).astype(np.float16)
        if few:
            x = rng.choice(np.array([np.nan, 0.0, -0.0, np.inf, 1.0], np.float16), n)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(0, 3, n).astype(dtype) if few else rng.integers(info.min, info.max, n, dtype=dtype)
    k = round(kfrac * n)
    values, indices = topk(x, k, largest)
    ref = reference(x, k, largest)
    np.testing.assert_array_equal(indices, ref)
    assert values.view(np.uint8).tobytes() == x[ref].view(np.uint8).tobytes()


def test_topk_of_nothing_and_everything():
    x = np.array([3, 1, 3, 2], np.int16)
    assert topk(x, 0)[1].tolist() == []
    assert topk(x, 4)[1].tolist() == [0, 2, 3, 1]
    assert topk(x, 2, largest=False)[1].tolist() == [1, 3]
    assert topk(np.zeros(0, np.float16), 0)[0].shape == (0,)


def test_bisection_rounds_are_bounded_by_the_key_width():
    x = np.random.default_rng(1).standard_normal(50_000).astype(np.float16)
    picked, sizes = topk_bisection(x, 2048)
    assert picked.shape == (2048,) and len(sizes) <= 17
    assert sizes[0] == 50_000 and all(a >= b for a, b in itertools.pairwise(sizes))


@pytest.mark.parametrize("k", [-1, 6, 2.0])
def test_topk_rejects_k_out_of_range(k):
    with pytest.raises(ValueError, match="^k: "):
        topk(np.zeros(5, np.float16), k)


def test_simulated_rounds_follow_the_active_sizes():
    sim = simulate_topk(10**6, 2048, "fp16", HW, active_sizes=[10**6, 5 * 10**5, 1000])
    assert sim.counters["rounds"] == 3
    # three predicate SplitInds plus the 16 passes of the final sort of k
    assert sim.counters["scans"] == 3 + 16
    default = simulate_topk(10**6, 2048, "fp16", HW)
    assert default.counters["rounds"] == 16


def test_vector_baseline_uses_no_cube():
    sim = simulate_topk(10**6, 2048, "fp16", HW, variant="vector")
    assert sim.counters.get("matmuls", 0) == 0 and sim.time_s > 0
    big = simulate_topk(10**6, 10**5, "fp16", HW, variant="vector")
    assert "merge" in big.phases and big.time_s > sim.time_s
