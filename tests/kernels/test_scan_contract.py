"""Contract every scan kernel must pass: result vs NumPy, counters vs the paper's work formulas, buffers."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels import SCAN_KERNELS, ParamError, ScanParams, expected_matmuls
from ascendbench.kernels.scan_numerics import reference
from ascendbench.sim import BufferCapacityError

HW = load_profile("ascend-910b4")
SCANS = [k for k in SCAN_KERNELS if k != "memcpy"]


def _supports(kernel: str, dtype: str) -> bool:
    return not (dtype == "int8" and "ul1" in kernel)


def _data(n: int, dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, n, dtype=np.int8)
    return rng.random(n, dtype=np.float32).astype(np.float16)


def _sizes(s):
    L = s * s
    return [0, 1, s - 1, L, L + 1, 3 * L - 5, 20 * L + 37, 41 * L + 1]


CASES = [
    (k, dtype, s, exclusive)
    for k in SCANS
    for dtype in ("fp16", "int8")
    for s in ((16, 128) if k != "vec-cumsum" else (128,))
    for exclusive in (False, True)
    if _supports(k, dtype)
]


@pytest.mark.parametrize("kernel, dtype, s, exclusive", CASES)
def test_result_matches_numpy(kernel, dtype, s, exclusive):
    params = ScanParams(s=s, dtype=dtype, exclusive=exclusive)
    for n in _sizes(s):
        x = _data(n, dtype, seed=n)
        y = SCAN_KERNELS[kernel].compute(x, params)
        assert y.dtype == (np.int32 if dtype == "int8" else np.float32)
        assert y.shape == (n,)
        verdict = SCAN_KERNELS[kernel].verify(x, y, params)
        assert verdict.passed, (n, verdict)


@pytest.mark.parametrize("kernel", SCANS)
def test_integer_valued_fp16_input_is_exact(kernel):
    # small integers: every partial sum is exact in fp16 (for C1) and fp32, so the scan must be exact
    rng = np.random.default_rng(1)
    n = 5 * 16384 + 77
    x = rng.integers(0, 3, n).astype(np.float16)
    for exclusive in (False, True):
        y = SCAN_KERNELS[kernel].compute(x, ScanParams(exclusive=exclusive))
        np.testing.assert_array_equal(y, reference(x, exclusive, "fp16").astype(np.float32))


@pytest.mark.parametrize("kernel", [k for k in SCANS if _supports(k, "int8")])
def test_int8_scan_wraps_like_int32_accumulation(kernel):
    n = 20 * 16384 + 3
    x = np.full(n, 127, dtype=np.int8)
    params = ScanParams(dtype="int8")
    y = SCAN_KERNELS[kernel].compute(x, params)
    np.testing.assert_array_equal(y, (np.arange(1, n + 1, dtype=np.int64) * 127).astype(np.int32))
    # wrap-around: 127 * 17e6 passes 2^31 - 1; int64 sums folded to int32 are what int32 accumulators give
    big = np.full(17_000_000 // 16 * 16 + 5, 127, dtype=np.int8)
    yb = SCAN_KERNELS[kernel].compute(big, params)
    assert int(yb[-1]) == ((127 * big.size + 2**31) % 2**32) - 2**31
    assert SCAN_KERNELS[kernel].verify(big, yb, params).passed


@pytest.mark.parametrize("kernel", SCANS)
def test_wrong_result_is_detected(kernel):
    x = _data(5 * 16384 + 11, "fp16", seed=3)
    params = ScanParams()
    y = SCAN_KERNELS[kernel].compute(x, params)
    y[len(y) // 3] += 1.0  # one element off by one input step
    assert not SCAN_KERNELS[kernel].verify(x, y, params).passed
    y = SCAN_KERNELS[kernel].compute(x, params)
    assert not SCAN_KERNELS[kernel].verify(x, y[:-1], params).passed


def test_fp16_output_rounds_and_overflow_fails_verification():
    x = _data(4000, "fp16")
    params = ScanParams(out_dtype="fp16")
    y = SCAN_KERNELS["mcscan"].compute(x, params)
    assert y.dtype == np.float16 and SCAN_KERNELS["mcscan"].verify(x, y, params).passed
    big = np.ones(70000, dtype=np.float16)  # the sum passes the fp16 maximum 65504
    with np.errstate(over="ignore"):
        yb = SCAN_KERNELS["mcscan"].compute(big, params)
    assert np.isinf(yb[-1]) and not SCAN_KERNELS["mcscan"].verify(big, yb, params).passed


@pytest.mark.parametrize("out_dtype", ["fp32", "fp16"])
def test_a_vector_cumsum_carries_nan_and_inf_as_numpy_does(out_dtype):
    # no cube: NaN and inf propagate as in a sequential cumsum, so the output equals the reference and passes
    # (with fp16 output, the tolerance's |reference| term was NaN there and failed it)
    params = ScanParams(out_dtype=out_dtype)
    for x in (np.array([1, np.nan, 1], np.float16), np.array([1, np.inf, 2, -np.inf, 3], np.float16)):
        with np.errstate(invalid="ignore"):
            y = SCAN_KERNELS["vec-cumsum"].compute(x, params)
            ref = np.cumsum(x.astype(np.float64))
        assert np.array_equal(y.astype(np.float64), ref, equal_nan=True)
        verdict = SCAN_KERNELS["vec-cumsum"].verify(x, y, params)
        assert verdict.passed and verdict.max_abs_error == 0.0, verdict


@settings(max_examples=60, deadline=None)
@given(
    kernel=st.sampled_from(SCANS),
    n=st.integers(0, 70_000),
    s=st.sampled_from([16, 32, 64, 128]),
    exclusive=st.booleans(),
    dtype=st.sampled_from(["fp16", "int8"]),
    blocks=st.one_of(st.none(), st.integers(1, 45)),
    chunk=st.one_of(st.none(), st.sampled_from([0, 256, 5000, 1 << 15])),
    seed=st.integers(0, 2**16),
)
def test_random_problems_match_numpy(kernel, n, s, exclusive, dtype, blocks, chunk, seed):
    if not _supports(kernel, dtype):
        return
    params = ScanParams(s=s, exclusive=exclusive, dtype=dtype, blocks=blocks, chunk=chunk)
    x = _data(n, dtype, seed)
    y = SCAN_KERNELS[kernel].compute(x, params)
    assert SCAN_KERNELS[kernel].verify(x, y, params).passed


@pytest.mark.parametrize("kernel", ["scanu", "scanul1", "mcscan", "mcscan-ul1"])
@pytest.mark.parametrize("s", [16, 32, 64, 128])
def test_matmul_counts_match_claim_s_w1(kernel, s):
    for n in (1, s * s - 1, s * s, s * s + 1, 20 * s * s * 45 + 3, 10**7 + 1):
        params = ScanParams(s=s)
        counters = SCAN_KERNELS[kernel].simulate(n, params, HW).counters
        assert counters["matmuls"] == expected_matmuls(kernel, n, s), n
        fractals = (s // 16) ** 3
        assert counters["cube_fractals"] == counters["matmuls"] * fractals


def test_vector_work_of_scanu_and_scanul1():
    # Per tile both copy the tile into the output buffer in UB (DataCopy, instructions of at most 255 repeats);
    # ScanU then adds the carry row by row (one Adds of s fp32 per row, kernel_complete_rows.h:153-157),
    # ScanUL1 once per tile (one Adds over s^2 fp32): O(n/s) against O(n/s^2) scalar reads.
    n, s = 20 * 128 * 128, 128
    tiles = n // (s * s)
    copy = math.ceil(s * s * 4 / 256 / 255)
    scanu = SCAN_KERNELS["scanu"].simulate(n, ScanParams(s=s), HW).counters
    scanul1 = SCAN_KERNELS["scanul1"].simulate(n, ScanParams(s=s), HW).counters
    assert scanu["vector_instructions"] == tiles * (copy + s)
    assert scanul1["vector_instructions"] == tiles * (copy + copy)
    assert scanu["vector_scalar_syncs"] == n // s and scanul1["vector_scalar_syncs"] == tiles
    # one handshake per tile (kernel_scan_single_core.h:74-76, kernel_row_scan.h:107-112): AIV0 waits for the
    # AIC's flag of every tile, the AIC for AIV0's before every tile but the first
    assert scanu["cross_core_flags"] == scanul1["cross_core_flags"] == 2 * tiles - 1


def test_gm_traffic_of_mcscan_matches_kernel_organisation():
    # Phase I reads the input twice (cube and AIV) and writes fp32 row scans; phase II reads them and writes
    # the output in place: 3 reads + 2 writes per element (kernel_scan_multi_core.h:119-151). Besides: U_s
    # loaded once per core, each AIV writes its partial sum (a 32-byte piece) and reads the 40 sums.
    s, n = 128, 20 * 128 * 128 * 50
    c = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(s=s, chunk=0), HW).counters
    sums_read = 40 * 40 * 4
    assert c["bytes_gm_read"] == n * (2 + 2 + 4) + 20 * s * s * 2 + sums_read
    assert c["bytes_gm_write"] == n * (4 + 4) + 40 * 32


def test_l2_splitting_keeps_rewritten_data_in_l2():
    s, n = 128, 20 * 128 * 128 * 305
    off = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(s=s, chunk=0), HW, l2="clean")
    on = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(s=s), HW, l2="clean")
    # Split: the input comes from HBM once, phase I's second read and all of phase II hit L2, and every output
    # byte is written back to HBM once, or is still dirty in L2 at the end.
    c = on.counters
    assert c["bytes_hbm_read"] == pytest.approx(2 * n, rel=0.01)
    assert c["bytes_l2_hit"] == pytest.approx(6 * n, rel=0.01)
    dirty_end = on.l2_end.dirty_bytes() / on.l2_end.scale
    assert c["bytes_hbm_write"] + dirty_end == pytest.approx(4 * n, rel=0.02)
    # Unsplit, 600 MB of phase I traffic pass through a 96 MiB L2: phase II reads its row scans from HBM and
    # every row scan is written back before it is read again.
    d = off.counters
    assert d["bytes_hbm_read"] > 5 * n and d["bytes_hbm_write"] > 4.5 * n
    assert off.time_s > on.time_s


def test_a_flushed_l2_costs_the_write_back_of_its_dirty_lines():
    # the papers' L2 flush leaves L2 full of dirty lines: the kernel's first allocations write them back
    n = 20 * 128 * 128 * 40
    clean = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(), HW, l2="clean")
    flushed = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(), HW, l2="flushed")
    extra = flushed.counters["bytes_hbm_write"] - clean.counters["bytes_hbm_write"]
    assert extra == pytest.approx(min(6 * n, HW.l2_bytes), rel=0.02)  # what the kernel allocates in L2
    assert flushed.time_s > clean.time_s


@pytest.mark.parametrize("kernel", list(SCAN_KERNELS))
def test_buffers_fit_the_shipped_hardware(kernel):
    for s in (16, 32, 64, 128):
        for dtype in ("fp16", "int8"):
            if _supports(kernel, dtype):
                SCAN_KERNELS[kernel].check(10**6, ScanParams(s=s, dtype=dtype), HW)


def test_tile_that_does_not_fit_names_the_buffer():
    small = HW.replace(l0a_bytes=16384)
    with pytest.raises(BufferCapacityError, match=r"L0A: .* needs \d+ bytes .* 16384 bytes available"):
        SCAN_KERNELS["mcscan"].check(10**6, ScanParams(s=128), small)
    SCAN_KERNELS["mcscan"].check(10**6, ScanParams(s=64), small)


@pytest.mark.parametrize(
    "params, param",
    [
        (ScanParams(s=48), "s"),
        (ScanParams(blocks=0), "blocks"),
        (ScanParams(chunk=-1), "chunk"),
        (ScanParams(dtype="bf16"), "dtype"),
        (ScanParams(dtype="int8", out_dtype="fp16"), "out-dtype"),
    ],
)
def test_bad_parameters_name_the_parameter(params, param):
    with pytest.raises(ParamError) as info:
        SCAN_KERNELS["mcscan"].check(1000, params, HW)
    assert info.value.param == param and str(info.value).startswith(f"--{param}:")


def test_ul1_variants_refuse_int8_with_a_reason():
    with pytest.raises(ParamError, match="fp16 only"):
        SCAN_KERNELS["mcscan-ul1"].check(1000, ScanParams(dtype="int8"), HW)


@pytest.mark.parametrize("kernel", ["mcscan", "mcscan-ul1"])
def test_more_blocks_than_cores_are_refused_fewer_are_slower(kernel):
    # SyncAll needs every block resident: a launch with more blocks than cores hangs on the chip
    n = 20 * 128 * 128 * 40
    with pytest.raises(ParamError, match=r"blocks: must be at most 20 \(the AI cores of ascend-910b4\)"):
        SCAN_KERNELS[kernel].check(n, ScanParams(blocks=21), HW)
    base = SCAN_KERNELS[kernel].simulate(n, ScanParams(), HW)
    few = SCAN_KERNELS[kernel].simulate(n, ScanParams(blocks=5), HW)
    assert few.counters["matmuls"] == base.counters["matmuls"]
    assert few.time_s > base.time_s  # 5 of 20 cores


@pytest.mark.parametrize("s", [16, 32, 64, 128])
def test_multi_core_carry_steps_are_the_codes(s):
    """Phase II carry steps (one Adds, then one GetValue behind a V->S sync). MCScan: tiles of
    min(s/2, ceil(8192/s)) rows of s, every row of a tile even in a partial last one (kernel_complete_rows.h:
    49-50, 153-157; rows s/2 from kernel_scan_multi_core.h:114-115). MCScanUL1: one step per s^2 tile
    (kernel_complete_blocks.h:173-178: tile_len = block_scan_len = s^2, kernel_scan_multi_cube.h:115-116)."""
    rows = min(s // 2, -(-8192 // s))
    for n in (40 * s * s, 40 * s * s + 5, 10**7 + 1):
        mc = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(s=s, chunk=0), HW).counters
        ul1 = SCAN_KERNELS["mcscan-ul1"].simulate(n, ScanParams(s=s, chunk=0), HW).counters
        assert mc["vector_scalar_syncs"] == -(-n // (s * rows)) * rows
        assert ul1["vector_scalar_syncs"] == -(-n // (s * s))


CHIP_UNITS = {f"core{c}.{u}" for c in range(HW.ai_cores) for u in ("aic", "aiv0", "aiv1")}


@pytest.mark.parametrize("kernel", ["mcscan-ul1", "mcscan"])
def test_waves_run_on_the_chips_aivs_and_the_fast_path_matches_an_exact_run(kernel):
    """The simulator never invents units: 40 blocks on 20 cores (refused by check, since SyncAll would hang;
    simulated here below it) put block b on core b % 20 and its AIVs on that core's two AIVs, the later block
    after the earlier one, so no faster than 20. 42 tiles per block are past the exact limit (40), so the fast
    path extrapolates; 84 run exactly (a steady-state check of the instances would cost over half of that:
    sim.result.simulate_scaled); force_exact simulates all."""
    n = 1680 * 128 * 128
    runs = {}
    for blocks in (20, 40):
        fast = SCAN_KERNELS[kernel]._simulate(n, ScanParams(blocks=blocks, chunk=0), HW)
        exact = SCAN_KERNELS[kernel]._simulate(n, ScanParams(blocks=blocks, chunk=0), HW, force_exact=True)
        assert fast.extrapolated == (blocks == 40) and not exact.extrapolated
        assert fast.time_cycles == pytest.approx(exact.time_cycles, rel=0.01)
        assert {u for u, _ in exact.busy} == CHIP_UNITS  # 40 AIVs, as the chip has
        assert exact.counters["matmuls"] == expected_matmuls(kernel, n, 128)
        runs[blocks] = exact.time_cycles
    assert 0.999 <= runs[40] / runs[20] <= 1.05


def test_two_waves_of_l2_chunks_are_not_faster_than_one():
    """Issue 27 item 7: n = 5e7 in chunks of 2^20 (64 tiles each). 20 blocks: 16 cores scan 4 tiles; 32
    blocks: cores 0-11 scan blocks c and c + 20, 2 tiles each. Phase I was 652 us with 20 blocks and 464 us
    with 32: the second wave's AIVs were simulated as 24 AIVs more than the chip has. (check refuses 32 and 40
    blocks now; the simulator below it is tested.)"""
    runs = {b: SCAN_KERNELS["mcscan-ul1"]._simulate(50_000_000, ScanParams(blocks=b, chunk=1 << 20), HW,
                                                    force_exact=True) for b in (20, 32, 40)}
    for run in runs.values():
        assert {u for u, _ in run.busy} <= CHIP_UNITS
    assert runs[32].time_cycles == runs[40].time_cycles  # same tiles per core: 2 per block, 4 on cores 0-11
    assert runs[32].phases["phase I"] >= runs[20].phases["phase I"]
    assert runs[32].time_cycles >= runs[20].time_cycles


@pytest.mark.parametrize("tiles", [1, 3])
def test_vec_cumsum_runs_cumsum_in_passes_of_16_rows(tiles):
    """AscendC CumSum with the minimum temporary buffer scans a 128 x 128 tile in 8 passes of 16 rows, each
    with 127 barrier-separated Adds (asc-devkit cumsum_common_impl.h CumSumImpl): 1016 barriers per tile."""
    run = SCAN_KERNELS["vec-cumsum"].simulate(tiles * 128 * 128, ScanParams(), HW)
    assert run.counters["vector_barriers"] == tiles * 8 * 127
    assert run.counters["vector_scalar_syncs"] == tiles * 128  # one carry step per row of 128


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["last", "middle"])
def test_a_non_finite_input_is_named_also_when_it_is_an_exclusive_scans_last(exclusive, bad, where):
    # an exclusive scan's last input is in none of its outputs: its reference stays finite, and a NaN the
    # cube spread over the last row was explained as an overflow past the float32 range (issue 26 item 12)
    x = np.ones(1000, np.float16)
    x[-1 if where == "last" else 500] = bad
    params = ScanParams(exclusive=exclusive)
    failed = 0
    for kernel in ("mcscan", "scanu", "scanul1", "mcscan-ul1"):
        with np.errstate(invalid="ignore", over="ignore"):
            y = SCAN_KERNELS[kernel].compute(x, params)
        verdict = SCAN_KERNELS[kernel].verify(x, y, params)
        if not verdict.passed:
            failed += 1
            assert "(the input holds NaN or inf: the cube multiplies them by the zeros of U_s" in verdict.tolerance
            assert "overflows" not in verdict.tolerance, (kernel, verdict.tolerance)
    assert failed == 4  # every matrix scan spreads it over a row (or a tile) of the output
