"""SplitInd (scan paper §5.1): NumPy references, exact scan counts and GM traffic of the simulated kernel."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels.split import (
    exclusive_flag_scan,
    gather_workers,
    index_dtype,
    simulate_flag_scan,
    simulate_split,
    split_ind,
)

HW = load_profile("ascend-910b4")
SIZES = st.sampled_from([0, 1, 2, 3, 31, 255, 8191, 8193, 16385, 40000])
FLAG_DTYPES = st.sampled_from([np.bool_, np.int8, np.uint8])
VALUE_DTYPES = st.sampled_from([np.float16, np.float32, np.int8, np.uint16, np.int32])


@settings(max_examples=40, deadline=None)
@given(n=SIZES, fdt=FLAG_DTYPES, vdt=VALUE_DTYPES, seed=st.integers(0, 2**16), density=st.sampled_from([0, 0.3, 1]))
def test_split_ind_equals_the_stable_argsort_of_the_flags(n, fdt, vdt, seed, density):
    rng = np.random.default_rng(seed)
    values = rng.integers(-100, 100, n).astype(vdt)
    if fdt is np.bool_:
        flags = rng.random(n) < density
    else:  # any non-zero value counts as true, including negative int8
        flags = np.where(rng.random(n) < density, rng.integers(1, 100, n), 0).astype(fdt)
        if fdt is np.int8:
            flags = np.where(flags != 0, -flags, 0).astype(np.int8)
    res = split_ind(values, flags)
    order = np.argsort(flags == 0, kind="stable")
    assert res.n_true == np.count_nonzero(flags)
    np.testing.assert_array_equal(res.indices, order)
    np.testing.assert_array_equal(res.values, values[order])
    assert res.indices.dtype == np.int32 and res.values.dtype == values.dtype


def test_split_ind_special_float_values_move_bit_for_bit():
    values = np.array([-0.0, np.nan, np.inf, -np.inf, 0.0, -np.nan], dtype=np.float16)
    flags = np.array([1, 0, 1, 0, 0, 1], dtype=np.uint8)
    res = split_ind(values, flags)
    assert res.values.view(np.uint16).tolist() == values[[0, 2, 5, 1, 3, 4]].view(np.uint16).tolist()


def test_split_ind_carries_given_indices():
    res = split_ind(np.array([5, 6, 7], np.int16), np.array([0, 1, 0], np.int8), indices=np.array([9, 8, 7]))
    assert res.indices.tolist() == [8, 9, 7] and res.values.tolist() == [6, 5, 7] and res.n_true == 1


def test_exclusive_scan_and_index_dtype():
    assert exclusive_flag_scan(np.array([1, 0, 3, 1], np.uint8)).tolist() == [0, 1, 1, 2]
    assert exclusive_flag_scan(np.zeros(0, np.int8)).dtype == np.int32
    assert index_dtype(2**31 - 1) is np.int32 and index_dtype(2**31) is np.int64


@pytest.mark.parametrize("bad", [
    (np.zeros((2, 2)), np.zeros(4, bool), "values"),
    (np.zeros(3), np.zeros(4, bool), "flags"),
    (np.zeros(3), np.zeros(3, np.float32), "flags"),
])
def test_split_ind_rejects_bad_arguments(bad):
    values, flags, name = bad
    with pytest.raises(ValueError, match=f"^{name}: "):
        split_ind(values, flags)


# ----- timing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 16384, 16385, 10**6 + 7])
def test_split_runs_one_int8_mcscan_and_the_gather_moves_each_element_once(n):
    sim = simulate_split(n, "fp16", HW, n_true=n // 3)
    tiles = math.ceil(n / 16384)
    assert sim.counters["scans"] == 1
    assert sim.counters["matmuls"] == tiles  # one A@U per s^2 tile of the int8 MCScan
    assert set(sim.phases) == {"launch", "scan", "sync", "gather"}
    # GM writes of the gather: values (2 B) and indices (4 B) of every element, in two runs per tile,
    # each run rounded up to the 32-byte MTE granularity.
    gather_tile = 8192
    elems = [min(gather_tile, n - i * gather_tile) for i in range(math.ceil(n / gather_tile))]
    frac = (n // 3) / n

    def r(b):
        return math.ceil(b / 32) * 32

    expected = sum(r(e * frac * b) + r(e * (1 - frac) * b) for e in elems for b in (2, 4))
    scan_only = simulate_flag_scan(n, HW)
    assert sim.counters["bytes_gm_write"] == pytest.approx(scan_only.counters["bytes_gm_write"] + expected)


def test_vector_variant_uses_no_cube_and_the_same_gather():
    a = simulate_split(10**6, "fp16", HW)
    b = simulate_split(10**6, "fp16", HW, variant="vector")
    assert b.counters.get("matmuls", 0) == 0 and b.counters["scans"] == 1
    assert a.phases["gather"] == pytest.approx(b.phases["gather"])


def test_predicate_split_reads_values_instead_of_flags():
    plain = simulate_split(10**5, "fp32", HW)
    pred = simulate_split(10**5, "fp32", HW, predicate=True)
    assert "predicate" in pred.phases and pred.time_s > plain.time_s
    # the predicate pass reads the fp32 values and writes int8 flags
    assert pred.counters["bytes_gm_read"] - plain.counters["bytes_gm_read"] >= 4 * 10**5


def test_gather_workers_follow_the_divisor_rule():
    assert gather_workers(1, HW) == 2
    assert gather_workers(64 * 16384, HW) == 32  # 64 tiles: largest divisor <= 20 is 16
    assert gather_workers(7 * 16384, HW) == 14


def test_simulate_split_rejects_bad_arguments():
    for kwargs, name in (({"n": -1}, "n"), ({"dtype": "fp8"}, "dtype"), ({"variant": "x"}, "variant"),
                         ({"n_true": 11}, "n_true")):
        args = {"n": 10, "dtype": "fp16"} | kwargs
        with pytest.raises(ValueError, match=f"^{name}: "):
            simulate_split(args.pop("n"), args.pop("dtype"), HW, **args)
    assert simulate_split(0, "fp16", HW).phases == {"launch": simulate_split(0, "fp16", HW).time_cycles}
