"""LSB radix sort by SplitInd (scan paper §5.3): NumPy's stable order for every key dtype and special value,
exact pass/scan counts and the timing structure."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels.radix_sort import (encode_keys, iota_tiles, radix_sort, simulate_iota,
                                            simulate_radix_sort)

HW = load_profile("ascend-910b4")
INT_DTYPES = [np.uint8, np.uint16, np.uint32, np.int8, np.int16, np.int32]
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504, -65504, 6e-8, -6e-8, 1.0, -1.0],
                   dtype=np.float16)


def descending_reference(keys):
    """NaNs first in input order, then np.argsort(-keys) (stable: ties in input order)."""
    wide = keys.astype(np.float64)
    nan = np.isnan(wide)
    rest = np.flatnonzero(~nan)
    return np.concatenate([np.flatnonzero(nan), rest[np.argsort(-wide[rest], kind="stable")]])


def keys_for(dtype, n, rng, few):
    if dtype in (np.float16, np.float32):  # float32: the keys of top-p on fp32 probabilities
        if few:
            return rng.choice(SPECIAL, n).astype(dtype)
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = (-3, 3) if few and info.min < 0 else (0, 5) if few else (info.min, info.max)
    return rng.integers(lo, hi, n, dtype=dtype, endpoint=True)


@settings(max_examples=50, deadline=None)
@given(dtype=st.sampled_from([*INT_DTYPES, np.float16, np.float32]), n=st.sampled_from([0, 1, 2, 3, 100, 8193, 20000]),
       seed=st.integers(0, 2**16), few=st.booleans(), descending=st.booleans())
def test_radix_sort_equals_numpy_stable_order(dtype, n, seed, few, descending):
    keys = keys_for(dtype, n, np.random.default_rng(seed), few)
    values, indices = radix_sort(keys, descending=descending)
    ref = descending_reference(keys) if descending else np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(indices, ref)
    assert values.dtype == keys.dtype and indices.dtype == np.int32
    assert values.view(np.uint8).tobytes() == keys[ref].view(np.uint8).tobytes()


def test_descending_is_not_the_reverse_of_ascending_with_ties():
    keys = np.array([2, 1, 2, 1], dtype=np.int16)
    _, asc = radix_sort(keys)
    _, desc = radix_sort(keys, descending=True)
    assert asc.tolist() == [1, 3, 0, 2] and desc.tolist() == [0, 2, 1, 3]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_signed_zeros_tie_and_nans_go_last_ascending_first_descending(dtype):
    keys = np.array([0.0, -0.0, np.nan, -1.0, -np.nan, 0.0], dtype=dtype)
    _, asc = radix_sort(keys)
    _, desc = radix_sort(keys, descending=True)
    assert asc.tolist() == [3, 0, 1, 5, 2, 4]
    assert desc.tolist() == [2, 4, 0, 1, 5, 3]


def test_encode_keys_is_order_preserving_for_all_fp16():
    allbits = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = allbits[~np.isnan(allbits)]
    enc = encode_keys(finite).astype(np.int64)
    order = np.argsort(finite.astype(np.float64), kind="stable")
    assert np.all(np.diff(enc[order]) >= 0)
    # equal keys (only +0.0 and -0.0) encode equal
    assert encode_keys(np.array([0.0, -0.0], np.float16)).tolist() == [0x8000, 0x8000]


def test_radix_sort_rejects_other_dtypes():
    with pytest.raises(ValueError, match="^keys: "):
        radix_sort(np.zeros(3, np.float64))
    with pytest.raises(ValueError, match="^keys: "):
        radix_sort(np.zeros((2, 2), np.int16))


# ----- timing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,bits", [("uint8", 8), ("int16", 16), ("fp16", 16), ("uint32", 32), ("fp32", 32)])
def test_one_scan_per_key_bit(dtype, bits):
    n = 100_000
    sim = simulate_radix_sort(n, dtype, HW)
    assert sim.counters["scans"] == bits
    assert sim.counters["matmuls"] == bits * -(-n // 16384)
    # per pass: after the bit extraction, MCScan's pad pass and its phase I/II SyncAll, after the scan and after
    # the gather (n is not a multiple of s^2, so the scan pads); signed and float keys add one after the
    # encode; one after the index initialisation (radix_sort.cpp 65)
    assert sim.counters["sync_all"] == 5 * bits + (0 if dtype.startswith("uint") else 1) + 1
    assert ("encode" in sim.phases) == (dtype != "uint8" and dtype != "uint32")


def test_passes_scale_the_sort_and_the_vector_variant_has_no_cube():
    n = 2**20
    t16 = simulate_radix_sort(n, "fp16", HW).time_s
    t8 = simulate_radix_sort(n, "fp16", HW, passes=8).time_s
    t4 = simulate_radix_sort(n, "fp16", HW, passes=4).time_s
    assert t16 > t8 > t4
    vec = simulate_radix_sort(n, "fp16", HW, variant="vector")
    assert vec.counters.get("matmuls", 0) == 0 and vec.counters["scans"] == 16


def test_every_pass_reads_the_indices_the_initialisation_wrote():
    # radix_sort.cpp 63-73: the indices are written once before the passes, the first pass reads them too
    n = 8192 * 40
    one = simulate_radix_sort(n, "uint16", HW, passes=1)  # uint16: no encode/decode
    two = simulate_radix_sort(n, "uint16", HW, passes=2)
    assert two.counters["bytes_gm_read"] == 2 * one.counters["bytes_gm_read"]
    written = one.counters["bytes_gm_write"]
    assert two.counters["bytes_gm_write"] - written == written - 4 * n  # the indices are written once
    keys_only = simulate_radix_sort(n, "uint16", HW, passes=1, with_indices=False)
    assert "iota" not in keys_only.phases and "iota" in one.phases


def test_iota_tiles_are_dealt_round_robin_to_the_launched_aivs():
    # 19,988,480 = 2440 tiles of 8192 on 2 x 20 AIVs; 8192 * 41 + 5: 42 tiles, 21 s^2 tiles -> d = 7, 14 AIVs
    assert iota_tiles(19_988_480, HW) == [61] * 40
    assert iota_tiles(8192 * 41 + 5, HW) == [3] * 14
    assert iota_tiles(8192 * 40 + 1, HW) == [3] * 13 + [2]  # 41 tiles on the same 14 AIVs


@pytest.mark.parametrize("n", [8192 * 41 + 5, 19_988_480])
def test_iota_writes_n_int32_with_two_vector_passes_per_tile(n):
    sim = simulate_iota(n, HW)
    tiles = -(-n // 8192)
    tail = 4 * (n - (tiles - 1) * 8192)
    written = 4 * 8192 * (tiles - 1) + -(-tail // 32) * 32  # the last tile's write in 32-byte MTE blocks
    assert sim.counters["bytes_gm_write"] == sim.counters["bytes_hbm_write"] == written
    assert sim.counters["vector_instructions"] == 2 * tiles  # Adds (ArithProgression) and DataCopy
    assert sim.counters["vector_repeats"] == 2 * tiles * 8192 * 4 // 256
    assert simulate_iota(n, HW, writeback=False).counters.get("bytes_hbm_write", 0) == 0
    assert set(sim.phases) == {"iota"}


def test_sort_time_is_fixed_part_plus_passes_times_one_pass():
    # t(p) = fixed + p * pass; fixed = launch, index initialisation, encode, decode and their two SyncAll
    n = 2**20
    t = {p: simulate_radix_sort(n, "fp16", HW, passes=p) for p in (1, 2, 3)}
    per_pass = t[2].time_cycles - t[1].time_cycles
    assert t[3].time_cycles - t[2].time_cycles == pytest.approx(per_pass, rel=1e-12)
    ph = t[1].phases
    fixed = ph["launch"] + ph["iota"] + ph["encode"] + ph["decode"] + 2 * HW.sync_all_cycles
    assert t[1].time_cycles - per_pass == pytest.approx(fixed, rel=1e-12)
    # 2**20 keys: the working set fits L2, the indices are not written back
    assert ph["iota"] == simulate_iota(n, HW, writeback=False).time_cycles


def test_simulate_radix_sort_rejects_bad_arguments():
    with pytest.raises(ValueError, match="^passes: "):
        simulate_radix_sort(10, "uint8", HW, passes=9)
    with pytest.raises(ValueError, match="^dtype: "):
        simulate_radix_sort(10, "float64", HW)
    with pytest.raises(ValueError, match="^variant: "):
        simulate_radix_sort(10, "fp16", HW, variant="cub")
    assert simulate_radix_sort(0, "fp16", HW).counters["scans"] == 0


@pytest.mark.parametrize("dtype, nans", [("fp16", True), ("int16", False), ("uint8", False)])
def test_the_descending_check_names_nans_only_for_float_keys(dtype, nans):
    from ascendbench.kernels.registry import get_spec

    spec = get_spec("sort")
    params = spec.params(n=100, dtype=dtype, descending=True)
    arrays = spec.generate(params, 0)
    check = spec.verify(arrays, spec.compute(arrays, params), params)
    assert check.passed and ("NaNs first" in check.reference) is nans
