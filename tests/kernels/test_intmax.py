"""Beyond INT_MAX: offset types, streaming partitions (results equal to the unpartitioned path at every kind of
partition edge), generated streams, and the timing models at 2**31 - 1 ... 2**40 with counters against closed
forms."""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels import SCAN_KERNELS, ScanParams
from ascendbench.kernels.partition import (
    PARTITION_LIMIT,
    GeneratedSource,
    chunk_plan,
    index_bytes,
    offset_type,
    partitions,
)
from ascendbench.kernels.radix_sort import radix_sort, simulate_radix_sort
from ascendbench.kernels.scan import auto_chunk, expected_matmuls, l2_chunk_tiles
from ascendbench.kernels.scan_numerics import ScanVerifier, compute, reference, stream_pieces
from ascendbench.kernels.split import (
    compress,
    compress_partitioned,
    simulate_compress,
    simulate_flag_scan,
    simulate_split,
    split_ind,
    split_ind_partitioned,
)
from ascendbench.kernels.topk import simulate_topk

HW = load_profile("ascend-910b4")
SIZES = [2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**40]


# ----- offset types and chunk plans ------------------------------------------------------------------------
def test_offset_type_follows_cubs_rule():
    assert offset_type(2**31 - 1) == "int32" and offset_type(2**31) == "int64"
    assert index_bytes(2**31 - 1) == 4 and index_bytes(2**32 + 1) == 8
    assert PARTITION_LIMIT == 2**31 - 1


@given(total=st.integers(0, 10**6), limit=st.integers(1, 5000), align=st.integers(1, 300))
@settings(max_examples=50, deadline=None)
def test_chunk_plan_covers_the_items_once(total, limit, align):
    plan = chunk_plan(total, limit, align)
    spans = list(plan)
    assert len(spans) == plan.count == (math.ceil(total / plan.size) if total else 0)
    assert plan.size % align == 0 and (plan.size <= limit or plan.size == align)
    assert sum(b - a for a, b in spans) == total
    assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))
    assert all(b - a == plan.size for a, b in spans[:-1]) and (not spans or spans[-1][1] - spans[-1][0] == plan.last)


def test_partitions_of_huge_n_are_python_ints():
    p = partitions(2**40)
    assert p.count == math.ceil(2**40 / (2**31 - 1)) and p.bounds(p.count - 1)[1] == 2**40
    assert partitions(2**32 + 1).count == 3
    with pytest.raises(ValueError, match="limit"):
        partitions(10, 2**31)


def test_l2_chunks_never_exceed_the_partition_limit():
    # chunking off: one chunk of the whole input below the limit, capped at the limit above it
    p = ScanParams(chunk=0)
    assert l2_chunk_tiles(2**20, p, HW, 16384) == 64
    assert l2_chunk_tiles(2**33, p, HW, 16384) == (2**31 - 1) // 16384
    assert l2_chunk_tiles(10**6, ScanParams(), HW, 256, limit=1000) == 3


@pytest.mark.parametrize("dtype", ["int8", "fp16"])
def test_generated_streams_are_reproducible_slice_by_slice(dtype):
    n = 2**22 + 5000  # crosses a generation block
    src = GeneratedSource(n, dtype, "random", seed=3)
    whole = src.read(0, n)
    for lo, hi in [(0, 10), (2**22 - 7, 2**22 + 9), (n - 3, n), (12345, 2**22 + 1)]:
        np.testing.assert_array_equal(src.read(lo, hi), whole[lo:hi])
    assert GeneratedSource(10, dtype, "constant").read(3, 6).tolist() == [1, 1, 1]
    counting = GeneratedSource(300, "int8", "counting").read(250, 260)
    assert counting.tolist() == [(i % 256) - 256 if i % 256 > 127 else i % 256 for i in range(250, 260)]


def test_tiny_partitions_generate_each_random_block_once_and_scan_the_same_values():
    # one item per partition: the block holding it was regenerated for every item (quadratic in n)
    p = ScanParams(s=S, dtype="int8")
    one = GeneratedSource(3000, "int8", "random", seed=5)
    y1 = compute("scanu", one, p, hw=HW, limit=1)
    assert one.blocks_generated == 1
    whole = GeneratedSource(3000, "int8", "random", seed=5)
    np.testing.assert_array_equal(y1, compute("scanu", whole, p, hw=HW))
    assert whole.blocks_generated == 1
    n = 2 * 2**22 + 1000  # three blocks, 8390 partitions
    src = GeneratedSource(n, "fp16", "random", seed=7)
    ys = compute("mcscan-ul1", src, ScanParams(s=S), hw=HW, limit=1000)
    assert src.blocks_generated == 3
    np.testing.assert_array_equal(ys, compute("mcscan-ul1", GeneratedSource(n, "fp16", "random", seed=7),
                                              ScanParams(s=S), hw=HW))
    # the values are those of block b seeded by (seed, b), as before the block was kept
    block1 = np.random.default_rng([7, 1]).random(2**22, dtype=np.float32).astype(np.float16)
    np.testing.assert_array_equal(GeneratedSource(n, "fp16", "random", seed=7).read(2**22 - 3, 2**22 + 4),
                                  np.concatenate([src.read(2**22 - 3, 2**22), block1[:4]]))


# ----- streaming scans equal the unpartitioned path ----------------------------------------------------------
S = 16
L = S * S
CHUNK = 5 * L  # L2 chunks of 5 tiles for the multi-core scans
N = 23 * L + 7  # a padded last tile
# partition edges: inside a tile, at tile edges, inside an L2 chunk (at a tile edge and inside a tile), one item
LIMITS = {"inside a tile": 2 * L + 5, "at a tile edge": 3 * L, "inside an L2 chunk": CHUNK + 2 * L,
          "inside a chunk and a tile": CHUNK + L // 2 + 1, "one item": 1}
CASES = [(k, d, e) for k in ("mcscan", "mcscan-ul1", "scanu", "scanul1", "vec-cumsum", "memcpy")
         for d in ("fp16", "int8") for e in (False, True) if not (d == "int8" and "ul1" in k)]


def _data(dtype, n=N, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, n).astype(np.int8)
    return (rng.random(n) - 0.25).astype(np.float16)


@pytest.mark.parametrize("kernel, dtype, exclusive", CASES)
@pytest.mark.parametrize("batch_tiles", [1, 3])
def test_partitioned_scan_equals_the_unpartitioned_one_at_every_edge(kernel, dtype, exclusive, batch_tiles):
    x = _data(dtype)
    p = ScanParams(s=S, chunk=CHUNK, exclusive=exclusive, dtype=dtype)
    whole = compute(kernel, x, p, hw=HW, batch_tiles=batch_tiles)
    for name, limit in LIMITS.items():
        if limit == 1 and batch_tiles == 3:
            continue
        part = compute(kernel, x, p, hw=HW, limit=limit, batch_tiles=batch_tiles)
        np.testing.assert_array_equal(part, whole, err_msg=name)
    assert SCAN_KERNELS[kernel].verify(x, whole, p, HW).passed
    if dtype == "int8" and kernel != "memcpy":  # exact: equal to NumPy at any batch size
        np.testing.assert_array_equal(whole, reference(x, exclusive, "int8").astype(np.int32))


@pytest.mark.parametrize("kernel", ["mcscan", "scanu"])
def test_streaming_verifier_fed_piece_by_piece_catches_an_error_in_a_late_partition(kernel):
    x = _data("int8")
    p = ScanParams(s=S, chunk=CHUNK, dtype="int8", exclusive=True)
    check = ScanVerifier(kernel, N, p, HW)
    for lo, xb, yb in stream_pieces(kernel, x, p, HW, limit=LIMITS["inside a tile"], batch_tiles=2):
        if lo <= N - 100 < lo + yb.shape[0]:
            yb = yb.copy()
            yb[N - 100 - lo] += 1
        check.feed(xb, yb)
    v = check.result()
    assert not v.passed and v.max_abs_error == 1


def test_int8_scans_wrap_past_2_to_31_like_int32_across_partitions():
    # closed forms: a scan of ones is i + 1; a scan of 127s passes 2**31 and wraps as the cube's int32 does
    p = ScanParams(s=S, dtype="int8")
    y = compute("scanu", GeneratedSource(3 * L, "int8", "constant"), p, hw=HW, limit=L + 3)
    np.testing.assert_array_equal(y, np.arange(1, 3 * L + 1, dtype=np.int32))
    n = 2**31 // 127 + 3 * L
    src = GeneratedSource(n, "int8", "constant", value=127)
    yy = compute("mcscan", src, ScanParams(s=S, dtype="int8", chunk=2**20), hw=HW, limit=2**20 + 13)
    i = np.arange(n, dtype=np.int64)
    np.testing.assert_array_equal(yy, ((127 * (i + 1) + 2**31) % 2**32 - 2**31).astype(np.int32))


# ----- split, compress, sort over partitions ------------------------------------------------------------------
@given(n=st.integers(0, 700), limit=st.sampled_from([1, 2, 7, 64, 255, 256, 257, 10**6]),
       seed=st.integers(0, 2**16), density=st.sampled_from([0.0, 0.3, 1.0]))
@settings(max_examples=40, deadline=None)
def test_split_compress_sort_partitioned_equal_the_unpartitioned(n, limit, seed, density):
    rng = np.random.default_rng(seed)
    values = rng.integers(-1000, 1000, n).astype(np.int32)
    flags = rng.random(n) < density
    a, b = split_ind(values, flags), split_ind_partitioned(values, flags, limit=limit)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.n_true == b.n_true and b.indices.dtype == np.int32
    carried = rng.permutation(n).astype(np.int64)
    c = split_ind_partitioned(values, flags, indices=carried, limit=limit)
    np.testing.assert_array_equal(c.indices, split_ind(values, flags, indices=carried).indices)
    np.testing.assert_array_equal(compress_partitioned(values, flags, limit=limit), compress(values, flags))
    keys = values.astype(np.int16)
    sv, si = radix_sort(keys, limit=limit)
    ref = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(si, ref)
    np.testing.assert_array_equal(sv, keys[ref])


def test_partitioned_split_writes_into_memory_maps(tmp_path):
    from ascendbench.kernels.partition import npy_memmap

    n = 5000
    values = np.arange(n, dtype=np.float16)
    flags = (np.arange(n) % 3) == 0
    ov, oi = npy_memmap(tmp_path / "v.npy", n, np.float16), npy_memmap(tmp_path / "i.npy", n, np.int32)
    res = split_ind_partitioned(values, flags, limit=777, out_values=ov, out_indices=oi)
    ov.flush()
    oi.flush()
    ref = split_ind(values, flags)
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), ref.values)
    np.testing.assert_array_equal(np.load(tmp_path / "i.npy"), ref.indices)
    assert res.n_true == ref.n_true


# ----- timing models at 2**31 - 1 ... 2**40: Python ints, counters against closed forms --------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kernel", list(SCAN_KERNELS))
def test_scan_timing_models_beyond_int_max(kernel, n):
    p = ScanParams(s=128, dtype="fp16")
    res = SCAN_KERNELS[kernel].simulate(n, p, HW)
    c = res.counters
    assert res.time_s > 0 and c["kernel_launches"] == 1
    tile = 16384
    padded = n % tile != 0
    if kernel == "memcpy":
        g = HW.mte_granularity_bytes
        assert c["bytes_gm_read"] == math.ceil(2 * n / g) * g and c["bytes_gm_write"] == math.ceil(4 * n / g) * g
        return
    assert c.get("matmuls", 0) == expected_matmuls(kernel, n, 128)
    tiles = math.ceil(n / tile)
    if kernel.startswith("mcscan"):
        chunks = math.ceil(tiles / math.ceil(auto_chunk(HW, p) / tile))
        assert c["sync_all"] == 2 * chunks - 1 + padded  # phase I / II per chunk, chunk carries, the pad pass
    else:
        # one core: no SyncAll (the tail is copied by KernelSimplePad, kernel_scan_single_core.h:193-244); ScanU
        # and ScanUL1 hand every tile over with a flag each way (the last tile's return flag is not waited for)
        assert c.get("sync_all", 0) == 0
        if kernel in ("scanu", "scanul1"):
            assert c["cross_core_flags"] == 2 * tiles - 1
    if not padded and kernel in ("scanu", "scanul1"):
        # the cube writes C (fp32) and the AIV rewrites it with the carries: 2 x 4 bytes per element
        assert c["bytes_gm_write"] == 8 * n
    # the model is linear in n far beyond 2**32: time per element at 2**40 within 2 % of that at 2**32
    if n == 2**40:
        small = SCAN_KERNELS[kernel].simulate(2**32, p, HW)
        assert res.time_s / n == pytest.approx(small.time_s / 2**32, rel=0.02)


# The index width changes once, past 2**31 - 1: both sides of it, past 2**32, and far beyond (each size takes
# 10-30 s of the operators' timing models; the scans' tests above take every size of SIZES).
@pytest.mark.parametrize("n", [2**31 - 1, 2**31, 2**32 + 1, 2**40])
def test_operator_timing_models_move_int64_indices_beyond_int_max(n):
    ib = 8 if n > 2**31 - 1 else 4
    split = simulate_split(n, "fp16", HW, n_true=n // 3)
    alone = simulate_flag_scan(n, HW)
    gather_writes = split.counters["bytes_gm_write"] - alone.counters["bytes_gm_write"]
    g = HW.mte_granularity_bytes
    # the gather writes every value and every index once (in two runs per tile: true and false elements)
    assert gather_writes == pytest.approx(n * (2 + ib), rel=1e-6, abs=64 * g * math.ceil(n / 8192))
    assert split.counters["scans"] == 1 and split.time_s > 0
    no_idx = simulate_split(n, "fp16", HW, n_true=n // 3, with_indices=False)
    assert split.counters["bytes_gm_write"] - no_idx.counters["bytes_gm_write"] == pytest.approx(n * ib, rel=1e-3)
    comp = simulate_compress(n, "fp16", HW, n_true=n // 2)
    assert comp.counters["kernel_launches"] == 2 and comp.counters["scans"] == 1
    sort = simulate_radix_sort(n, "uint8", HW)
    assert sort.counters["scans"] == 8
    if n == 2**31:  # top-k's model (9-10 s a size, most of this test) runs past INT_MAX; its rounds do not
        topk = simulate_topk(n, 1000, "fp16", HW)  # depend on the index width
        assert topk.time_s > 0 and topk.counters["rounds"] >= 1


@pytest.mark.parametrize("dims", [(2**16, 2**16, 2**16), (70_000, 40_000, 3), (3, 50_000, 50_000),
                                  (50_000, 3, 50_000), (2**17, 2**17, 128)])
def test_hgemm_timing_model_beyond_int_max_elements(dims):
    from ascendbench.kernels.hgemm import (
        GemmShape,
        HgemmParams,
        _k_splits,
        hgemm_counters,
        resolve_tiling,
        simulate_hgemm,
    )

    hw = load_profile("atlas-300t-a2")
    shape = GemmShape(*dims)
    m, n, k = dims
    assert max(m * k, k * n, m * n) > 2**31 - 1
    params = HgemmParams()
    sim, _ = simulate_hgemm(shape, params, hw)
    tiling = resolve_tiling(shape, params, hw)
    closed = hgemm_counters(shape, params, tiling, _k_splits(tiling, params, hw))
    for key in ("matmuls", "cube_fractals"):
        assert sim.counters[key] == closed[key], key
    bm, bn, bk = (math.ceil(m / tiling.m0), math.ceil(n / tiling.n0), math.ceil(k / tiling.k0))
    assert closed["matmuls"] == bm * bn * bk * _k_splits(tiling, params, hw)
    assert closed["aicore_num"] == bm * bn
    assert 0 < 2 * m * n * k / sim.time_s / 1e12 <= hw.cube_fp16_peak_tflops



@pytest.mark.parametrize("dims", [(2**40, 2**40, 2**40, 2**40), (2**40, 2**40, 16, 2**20)])
def test_hgemm_model_at_the_largest_shapes_run_hgemm_allows(dims):
    """M, N, K and batch at the 2**40 bound: more tasks than a C ssize_t holds (2**66 and beyond)."""
    from ascendbench.kernels.hgemm import MAX_DIM, GemmShape, HgemmParams, simulate_hgemm

    hw = load_profile("atlas-300t-a2")
    assert max(dims) == MAX_DIM
    shape = GemmShape(*dims)
    sim, _ = simulate_hgemm(shape, HgemmParams(), hw)
    assert 0 < shape.flops / sim.time_s / 1e12 <= hw.cube_fp16_peak_tflops

# ----- 2**32 + 1 int8 ones, functionally (slow: see benchmarks/bench_intmax.py) -----------------------------
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("ASCENDBENCH_SLOW"), reason="takes ~15 min; set ASCENDBENCH_SLOW=1")
def test_scan_of_2_to_32_plus_1_int8_ones_streams_with_the_closed_form_at_every_partition_edge():
    n = 2**32 + 1
    p = ScanParams(s=128, dtype="int8")
    plan = partitions(n)
    marks = {0, n - 1} | {b for a, b in plan if b < n} | {b - 1 for a, b in plan} | {2**31 - 1, 2**31, 2**32 - 1, 2**32}
    seen = {}
    check = ScanVerifier("mcscan", n, p, HW)
    for lo, xb, yb in stream_pieces("mcscan", GeneratedSource(n, "int8", "constant"), p, HW):
        check.feed(xb, yb)
        for i in marks:
            if lo <= i < lo + yb.shape[0]:
                seen[i] = int(yb[i - lo])
    assert check.result().passed
    assert seen == {i: (i + 1 + 2**31) % 2**32 - 2**31 for i in marks}


# ----- the streaming run's memory: small work arrays, not per-read temporaries -------------------------------
@pytest.mark.parametrize("kernel, dtype", [("mcscan-ul1", "fp16"), ("mcscan", "fp16"), ("scanu", "int8")])
def test_streaming_scan_and_check_hold_only_small_work_arrays(kernel, dtype):
    import tracemalloc

    def peak_of(n: int) -> int:
        x = _data(dtype, n)
        p = ScanParams(dtype=dtype, exclusive=True)
        tracemalloc.start()
        try:
            check = ScanVerifier(kernel, n, p, HW)
            for _, xb, yb in stream_pieces(kernel, x, p, HW):
                check.feed(xb, yb)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert check.result().passed
        return peak

    # three quarters of a read of the input (the check's every work array is made by then); two reads
    small, large = peak_of(3 * 2**20 + 5), peak_of(2**23 + 5)
    # work arrays of one 2**20-element batch and stretch (float64: 8 MB each), the same at any n (before: about
    # 200 MB of float64 temporaries per 2**22-element read)
    assert large < 80 * 2**20
    assert large <= small + 2**20


def test_check_thread_gives_the_verdict_of_the_verifier_and_raises_its_errors():
    from ascendbench.kernels.scan_numerics import CheckThread

    x = _data("fp16")
    p = ScanParams(s=S, chunk=CHUNK)
    plain, threaded = ScanVerifier("mcscan-ul1", N, p, HW), CheckThread(ScanVerifier("mcscan-ul1", N, p, HW))
    for _, xb, yb in stream_pieces("mcscan-ul1", x, p, HW, batch_tiles=2):
        plain.feed(xb, yb)
        threaded.feed(xb, yb)
    assert threaded.close() == plain.result()
    broken = CheckThread(ScanVerifier("mcscan-ul1", N, p, HW))
    broken.feed(x[:10], np.zeros(3, np.float32))  # shapes disagree: the thread's error comes back here
    with pytest.raises(ValueError):
        broken.close()
