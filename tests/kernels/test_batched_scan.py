"""Batched scan (scan paper B.1): results vs NumPy per row, exact work counts, layout, extrapolation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels import ParamError
from ascendbench.kernels.batched_scan import (
    BatchedScanParams,
    compute_batched,
    expected_matmuls,
    layout,
    reference_batched,
    simulate_batched,
    verify_batched,
)

HW = load_profile("ascend-910b4")
ALGS = [("scanu", "fp16"), ("scanu", "int8"), ("scanul1", "fp16"), ("vector", "fp16"), ("vector", "int8")]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, shape, dtype=np.int8)
    return rng.random(shape, dtype=np.float32).astype(np.float16)


@settings(max_examples=40, deadline=None)
@given(
    alg=st.sampled_from(ALGS),
    s=st.sampled_from([16, 32, 64, 128]),
    exclusive=st.booleans(),
    batch=st.integers(0, 9),
    length=st.one_of(st.integers(0, 300), st.integers(1000, 40000)),
    seed=st.integers(0, 2**16),
)
def test_result_matches_numpy_per_row(alg, s, exclusive, batch, length, seed):
    algorithm, dtype = alg
    params = BatchedScanParams(algorithm=algorithm, s=s, exclusive=exclusive, dtype=dtype)
    x = _data((batch, length), dtype, seed)
    y = compute_batched(x, params, algorithm)
    assert y.shape == (batch, length) and y.dtype == (np.int32 if dtype == "int8" else np.float32)
    verdict = verify_batched(x, y, params, algorithm)
    assert verdict.passed, verdict
    if dtype == "int8":
        np.testing.assert_array_equal(y, reference_batched(x, exclusive, dtype))


@pytest.mark.parametrize("algorithm", ["scanu", "scanul1", "vector"])
def test_integer_valued_fp16_rows_are_exact(algorithm):
    x = np.random.default_rng(3).integers(0, 3, (5, 3 * 4096 + 17)).astype(np.float16)
    for exclusive in (False, True):
        params = BatchedScanParams(algorithm=algorithm, s=64, exclusive=exclusive)
        y = compute_batched(x, params, algorithm)
        np.testing.assert_array_equal(y, reference_batched(x, exclusive, "fp16").astype(np.float32))
        if exclusive:
            assert (y[:, 0] == 0).all()


@pytest.mark.parametrize("algorithm", ["scanu", "vector"])
def test_int8_rows_wrap_like_int32_accumulation(algorithm):
    length = 17_000_000 // 2
    x = np.full((2, length), 127, dtype=np.int8)
    x[1] = -128
    params = BatchedScanParams(algorithm=algorithm, s=128, dtype="int8")
    y = compute_batched(x, params, algorithm)
    assert int(y[0, -1]) == ((127 * length + 2**31) % 2**32) - 2**31
    assert int(y[1, -1]) == ((-128 * length + 2**31) % 2**32) - 2**31
    assert verify_batched(x, y, params, algorithm).passed


def test_verify_rejects_a_wrong_result():
    x = _data((3, 5000), "fp16")
    params = BatchedScanParams(algorithm="scanu", s=32)
    y = compute_batched(x, params, "scanu")
    y[1, 2000] += 0.5
    assert not verify_batched(x, y, params, "scanu").passed
    assert not verify_batched(x, y[:2], params, "scanu").passed


@pytest.mark.parametrize("algorithm", ["scanu", "scanul1"])
@pytest.mark.parametrize("s", [16, 32, 64, 128])
@pytest.mark.parametrize(
    "batch, length", [(1, 1), (3, 7), (40, 65536), (41, 20000), (7, 128 * 128 + 1), (130, 16)]
)
def test_matmul_counts_follow_the_closed_form(algorithm, s, batch, length):
    params = BatchedScanParams(algorithm=algorithm, s=s)
    run = simulate_batched(batch, length, params, HW)
    assert run.sim.counters.get("matmuls", 0) == expected_matmuls(batch, length, params, algorithm)
    if length > s:
        tiles = math.ceil(length / s**2)
        assert expected_matmuls(batch, length, params, algorithm) == (
            2 * math.ceil(batch / 2) * tiles if algorithm == "scanu" else 3 * batch * tiles
        )


@pytest.mark.parametrize("s", [32, 128])
def test_gm_bytes_closed_form_without_padding(s):
    batch, length = 40, 4 * s * s  # even batch, whole tiles: no pad pass
    L = s * s
    tiles = batch * length // L
    cores = min(HW.ai_cores, batch // 2)
    u = simulate_batched(batch, length, BatchedScanParams(algorithm="scanu", s=s), HW).sim.counters
    # U_s once per core, x once, the cube's fp32 row scans read back once; fp32 written by the cube and the AIV
    assert u["bytes_gm_read"] == cores * L * 2 + tiles * L * 2 + tiles * L * 4
    assert u["bytes_gm_write"] == 2 * tiles * L * 4
    assert (
        u["cross_core_flags"] == 2 * tiles - 2 * cores
    )  # AIV->cube per tile but the first, cube->AIV per tile
    v = simulate_batched(batch, length, BatchedScanParams(algorithm="scanul1", s=s), HW).sim.counters
    # per row: U_s and L^-_s from GM ([1] is filled in L1, kernel_block_scan.h:126-140), the row padded
    # (read and written in fp16, seg_sum_single_cube.cpp:49); the cube reads the padded copy, AIV0 its C2
    assert v["bytes_gm_read"] == batch * 2 * L * 2 + 2 * tiles * L * 2 + tiles * L * 4
    assert v["bytes_gm_write"] == tiles * L * 2 + 2 * tiles * L * 4
    # per row: both AIVs' flags after the pad, cube -> AIV per tile, AIV -> cube per tile but the first
    assert v["cross_core_flags"] == batch * (2 + 4 + 3)


def test_cross_core_flags_scanu():
    # per tile a cube->AIV flag; per tile but each AIV's first an AIV->cube flag
    batch, length, s = 40, 4 * 64 * 64, 64
    c = simulate_batched(batch, length, BatchedScanParams(algorithm="scanu", s=s), HW).sim.counters
    tiles = batch * length // (s * s)
    assert c["cross_core_flags"] == tiles + (tiles - batch)


def test_layout_pairs_rows_round_robin_and_pads_odd_batches():
    params = BatchedScanParams(s=64)
    lay = layout(41, 3 * 4096, params, HW, "scanu")
    assert lay.padded and lay.rows_padded == 42 and lay.workers == 20
    assert lay.per_worker == (6,) + (3,) * 19  # 21 pairs: core 0 takes two, 3 tiles each
    lay1 = layout(41, 3 * 4096, params, HW, "scanul1")
    assert lay1.padded and lay1.per_worker == (9,) + (6,) * 19  # every row padded by its core
    vec = layout(41, 3 * 4096, params, HW, "vector")
    assert vec.workers == 40 and vec.per_worker == (2,) + (1,) * 39
    short = layout(300, 50, params, HW, "scanu")
    assert short.short and short.tiles_per_row == 5 and short.padded


def test_auto_picks_the_faster_and_records_it():
    for batch, length in [(4, 65536), (64, 1024), (1, 10)]:
        run = simulate_batched(batch, length, BatchedScanParams(algorithm="auto", s=64), HW)
        assert set(run.candidates) == {"scanu", "scanul1"}
        assert run.algorithm == min(run.candidates, key=lambda a: (run.candidates[a], a != "scanu"))
        assert run.sim.time_s == run.candidates[run.algorithm]
    int8 = simulate_batched(8, 5000, BatchedScanParams(algorithm="auto", dtype="int8"), HW)
    assert int8.algorithm == "scanu" and set(int8.candidates) == {"scanu"}


@pytest.mark.parametrize("algorithm", ["scanu", "scanul1", "vector"])
@pytest.mark.parametrize("batch, length, s", [(41, 3 * 4096, 64), (7, 100000, 32), (100, 3000, 64)])
def test_extrapolation_agrees_with_exact_simulation(algorithm, batch, length, s):
    params = BatchedScanParams(algorithm=algorithm, s=s)
    fast = simulate_batched(batch, length, params, HW).sim
    exact = simulate_batched(batch, length, params, HW, force_exact=True).sim
    assert fast.time_cycles == pytest.approx(exact.time_cycles, rel=0.005)
    assert fast.counters == exact.counters


def test_scanul1_rows_of_many_tiles_extrapolate_by_rows():
    # 20 tiles a row, 10 rows a core: the loop's iteration is a row (the rows kept: _ul1_keep)
    params = BatchedScanParams(algorithm="scanul1", s=16)
    fast = simulate_batched(200, 5120, params, HW).sim
    exact = simulate_batched(200, 5120, params, HW, force_exact=True).sim
    assert fast.time_cycles == pytest.approx(exact.time_cycles, rel=0.005)
    assert fast.counters == exact.counters


def test_bad_parameters_name_the_option():
    cases = [
        ({"s": 48}, "s"),
        ({"algorithm": "bogo"}, "algorithm"),
        ({"dtype": "bf16"}, "dtype"),
        ({"algorithm": "scanul1", "dtype": "int8"}, "dtype"),
    ]
    for kwargs, param in cases:
        with pytest.raises(ParamError) as err:
            simulate_batched(4, 100, BatchedScanParams(**kwargs), HW)
        assert err.value.param == param
    with pytest.raises(ParamError):
        simulate_batched(-1, 100, BatchedScanParams(), HW)


def test_empty_problems_cost_only_the_launch():
    for batch, length in [(0, 100), (5, 0)]:
        run = simulate_batched(batch, length, BatchedScanParams(algorithm="scanu"), HW)
        assert run.sim.counters.get("matmuls", 0) == 0 and run.sim.time_s == pytest.approx(
            HW.kernel_launch_us * 1e-6
        )


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("algorithm", ["scanu", "scanul1"])
def test_a_non_finite_last_input_of_a_row_is_named_in_an_exclusive_scan(exclusive, algorithm):
    # an exclusive row scan's last input is in none of the row's outputs: the failure was left unexplained
    x = np.ones((4, 1000), np.float16)
    x[1, -1] = np.nan
    params = BatchedScanParams(algorithm=algorithm, exclusive=exclusive)
    with np.errstate(invalid="ignore", over="ignore"):
        y = compute_batched(x, params, algorithm)
    verdict = verify_batched(x, y, params, algorithm)
    assert not verdict.passed
    assert verdict.tolerance.endswith("(the input holds NaN or inf: the cube multiplies them by the zeros of U_s, "
                                      "and 0 x NaN = NaN spreads over whole rows of a tile, so a matrix scan "
                                      "cannot match a sequential cumsum there)")


def test_scanul1_row_is_its_pad_syncgroup_reload_and_tile_in_series():
    # One core, rows of one s*s tile: each row is padded by AIV0, meets the cube in a SyncGroup, has L^- and U
    # reloaded and its tile scanned and carried before the next row's pad starts
    # (seg_sum_single_cube.cpp:49-62, kernel_block_scan.h:118-183): the time grows by that chain per row.
    # Rates pinned (the platform file's 32 and 110 B/cycle): the closed form below is the critical chain at
    # these rates; other rates can put a different (2-cycle) step on it.
    hw = HW.replace(ai_cores=1, gm_read_bytes_per_cycle=32.0, l2_read_bytes_per_cycle=110.0)
    s, L = 64, 64 * 64
    params = BatchedScanParams(algorithm="scanul1", s=s)
    t = {r: simulate_batched(r, L, params, hw, force_exact=True).sim for r in (3, 4, 5)}
    per_row = t[4].time_cycles - t[3].time_cycles
    assert t[5].time_cycles - t[4].time_cycles == pytest.approx(per_row, rel=1e-12)
    ops = {o.label: o for segment, _ in t[3].segments for o in segment}  # the last row's op of each label

    def span(label):
        return ops[label].end - ops[label].start

    def moved(nbytes, rate, latency=0.0):
        return nbytes / rate + latency

    flag = hw.cross_core_flag_cycles
    pad = (moved(L * 2, hw.gm_read_bytes_per_cycle, hw.gm_read_latency_cycles)  # the row from HBM
           + moved(L * 2, hw.l2_write_bytes_per_cycle, hw.gm_write_latency_cycles))  # into the workspace
    reload = 2 * moved(L * 2, hw.l2_read_bytes_per_cycle)  # L^- and U on MTE2 before the tile's A
    cube = (moved(L * 2, hw.l2_read_bytes_per_cycle, hw.l2_hit_latency_cycles)  # the padded tile, an L2 hit
            + sum(span(x) for x in ("x->L0A", "C1=A@1", "C1->L1 (fp16)", "U->L0B", "C2=A@U", "C1->L0B",
                                    "C2+=L^-@C1"))
            + moved(L * 4, hw.l2_write_bytes_per_cycle, hw.gm_write_latency_cycles))
    carry = (moved(L * 4, hw.l2_read_bytes_per_cycle, hw.l2_hit_latency_cycles) + span("DataCopy UB->UB")
             + span("tile += carry") + moved(L * 4, hw.l2_write_bytes_per_cycle))  # until the store leaves UB
    assert per_row == pytest.approx(pad + flag + reload + cube + flag + carry, rel=1e-9)


@pytest.mark.parametrize("batch, length, s", [(41, 30 * 1024 - 5, 32), (61, 30 * 4096, 64)])
def test_scanul1_long_rows_by_rounds_agree_with_whole_rows(monkeypatch, batch, length, s):
    # rows of more than UL1_ROW_TILES tiles: one round of rows simulated and repeated, vs all rows at once
    import ascendbench.kernels.batched_scan as bs

    params = BatchedScanParams(algorithm="scanul1", s=s)
    rounds = simulate_batched(batch, length, params, HW).sim
    monkeypatch.setattr(bs, "UL1_ROW_TILES", 10**9)
    whole = simulate_batched(batch, length, params, HW, force_exact=True).sim
    assert rounds.time_cycles == pytest.approx(whole.time_cycles, rel=0.02)
    for key in ("matmuls", "bytes_gm_read", "bytes_gm_write", "cross_core_flags"):
        assert rounds.counters[key] == whole.counters[key]


def test_s14_crossover_of_the_batched_scans():
    # S-14: ScanU wins beyond batch 36 for rows below 2K, ScanUL1 below batch 9 for rows above 8K (Fig B.2)
    from ascendbench.reference.row_scan_claims import crossover_grid

    grid = crossover_grid(HW)  # time(ScanUL1) / time(ScanU)
    assert all(v > 1 for (b, n), v in grid.items() if b > 36 and n < 2048)
    assert all(v < 1 for (b, n), v in grid.items() if b < 9 and n > 8192)
