"""HGEMM kernel: BLAS semantics, functional result vs NumPy, options acting through mechanisms, claims."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels import ParamError
from ascendbench.kernels.hgemm import (
    GemmShape,
    HgemmParams,
    compute_hgemm,
    equivalent_params,
    hgemm_counters,
    resolve_tiling,
    simulate_hgemm,
    verify_hgemm,
)
from ascendbench.sim import BufferCapacityError

HW = load_profile("atlas-300t-a2")


def mats(m, n, k, batch=1, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.random((batch, m, k), dtype=np.float32) * 2 - 1).astype(np.float16)
    b = (rng.random((batch, k, n), dtype=np.float32) * 2 - 1).astype(np.float16)
    c = (rng.random((batch, m, n), dtype=np.float32) * 2 - 1).astype(np.float16)
    return a, b, c


def run(m, n, k, batch=1, **kw):
    params = HgemmParams(**kw)
    shape = GemmShape(m, n, k, batch)
    tiling = resolve_tiling(shape, params, HW)
    a, b, c = mats(m, n, k, batch)
    out = compute_hgemm(a, b, c if params.beta != 0 else None, params, tiling)
    return a, b, c, out, params


@pytest.mark.parametrize("variant", ["proposed", "gemm-example"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 65), (128, 128, 256), (300, 200, 1000), (2, 513, 7)])
def test_result_matches_numpy(variant, shape):
    a, b, c, out, params = run(*shape, variant=variant, alpha=0.75, beta=-0.5)
    assert out.dtype == np.float16 and out.shape == (1, shape[0], shape[1])
    assert verify_hgemm(a, b, c, out, params).passed


@pytest.mark.parametrize(("operand", "beta", "named"), [("a", 0.5, "A: 1 of 2,048"), ("c", 0.5, "C: 1 of 3,072"),
                                                          ("c", 0.0, None)])
def test_nan_or_inf_in_an_input_fails_naming_it_without_a_numpy_warning(operand, beta, named):
    import warnings

    a, b, c, _out, params = run(64, 48, 32, alpha=1.0, beta=beta)
    {"a": a, "c": c}[operand][0, 3, 4] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would fail the test
        out = compute_hgemm(a, b, c if beta else None, params, resolve_tiling(GemmShape(64, 48, 32, 1), params, HW))
        v = verify_hgemm(a, b, c, out, params)
    if named is None:  # beta = 0 does not read C: its inf is in no output
        assert v.passed
    else:
        assert not v.passed and f"the input holds NaN or inf ({named} elements)" in v.tolerance


def test_beta_zero_does_not_read_c():
    a, b, c, out, params = run(64, 48, 32, alpha=1.0, beta=0.0)
    nan_c = np.full_like(c, np.nan)
    tiling = resolve_tiling(GemmShape(64, 48, 32), params, HW)
    out2 = compute_hgemm(a, b, nan_c if params.beta != 0 else None, params, tiling)
    np.testing.assert_array_equal(out, out2)
    assert np.isfinite(out2).all()
    sim, _ = simulate_hgemm(GemmShape(4096, 4096, 64), HgemmParams(beta=0.0), HW)
    with_c, _ = simulate_hgemm(GemmShape(4096, 4096, 64), HgemmParams(beta=1.0), HW)
    assert with_c.counters["bytes_gm_read"] - sim.counters["bytes_gm_read"] >= 4096 * 4096 * 2  # C read once


def test_alpha_zero_does_not_read_a_and_b():
    params = HgemmParams(alpha=0.0, beta=2.0)
    shape = GemmShape(40, 50, 60)
    tiling = resolve_tiling(shape, params, HW)
    _, _, c = mats(40, 50, 60)
    nan = np.full((1, 40, 60), np.nan, np.float16)
    out = compute_hgemm(nan, np.full((1, 60, 50), np.nan, np.float16), c, params, tiling)
    np.testing.assert_array_equal(out, (np.float16(2.0) * c).astype(np.float16))
    sim, _ = simulate_hgemm(shape, params, HW)
    assert sim.counters["matmuls"] == 0


def test_k_zero_gives_beta_c_and_empty_shapes_are_empty():
    params = HgemmParams(alpha=1.0, beta=0.5)
    a = np.zeros((1, 7, 0), np.float16)
    b = np.zeros((1, 0, 9), np.float16)
    c = np.ones((1, 7, 9), np.float16)
    out = compute_hgemm(a, b, c, params, resolve_tiling(GemmShape(7, 9, 0), params, HW))
    np.testing.assert_array_equal(out, np.full((1, 7, 9), 0.5, np.float16))
    for shape in (GemmShape(0, 9, 5), GemmShape(7, 0, 5)):
        sim, _ = simulate_hgemm(shape, params, HW)
        assert sim.counters == {"kernel_launches": 1}
        empty = compute_hgemm(np.zeros((1, shape.m, 5), np.float16), np.zeros((1, 5, shape.n), np.float16),
                              np.zeros((1, shape.m, shape.n), np.float16), params,
                              resolve_tiling(shape, params, HW))
        assert empty.shape == (1, shape.m, shape.n)


def test_batch_runs_independent_problems():
    a, b, c, out, params = run(33, 20, 70, batch=3, alpha=1.0, beta=1.0)
    for i in range(3):
        ref = a[i].astype(np.float64) @ b[i].astype(np.float64) + c[i]
        assert np.abs(out[i] - ref).max() < 0.05
    assert verify_hgemm(a, b, c, out, params).passed


def test_split_k_accumulates_partials():
    a, b, c, out, params = run(64, 64, 2048, k0=256, split_k=4, alpha=0.5, beta=0.5)  # 8 K blocks, 2 a split
    assert verify_hgemm(a, b, c, out, params).passed


def test_split_k_above_the_k_blocks_is_refused():
    # K = 256: the selector's K0 = 256 is one K block (no split); K0 = 64 is four (up to four splits)
    assert resolve_tiling(GemmShape(256, 256, 256), HgemmParams(), HW).k0 == 256
    with pytest.raises(ParamError) as err:
        resolve_tiling(GemmShape(256, 256, 256), HgemmParams(split_k=1000), HW)
    assert str(err.value.in_python_names()).startswith("split_k: must be at most 1 for K = 256 with K0 = 256 ")
    assert "got 1,000" in str(err.value)
    assert resolve_tiling(GemmShape(256, 256, 256), HgemmParams(k0=64, split_k=4), HW).k0 == 64
    with pytest.raises(ParamError, match=r"^--split-k: must be at most 4 for K = 256 with K0 = 64 .*got 5$"):
        resolve_tiling(GemmShape(256, 256, 256), HgemmParams(k0=64, split_k=5), HW)
    with pytest.raises(ParamError, match=r"^--split-k: must be at most 1 for K = 0 "):  # no K: nothing to split
        resolve_tiling(GemmShape(8, 8, 0), HgemmParams(split_k=2), HW)


def test_wrong_result_is_detected():
    a, b, c, out, params = run(64, 64, 64, alpha=1.0, beta=1.0)
    bad = out.copy()
    bad[0, 5, 7] += np.float16(0.5)
    assert not verify_hgemm(a, b, c, bad, params).passed


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 90), n=st.integers(1, 90), k=st.integers(0, 300), batch=st.integers(1, 2),
       alpha=st.sampled_from([0.0, 1.0, -0.5]), beta=st.sampled_from([0.0, 1.0, 0.25]),
       split_k=st.sampled_from([1, 2, 4]))
def test_random_shapes_match_numpy(m, n, k, batch, alpha, beta, split_k):
    k_blocks = max(1, math.ceil(k / resolve_tiling(GemmShape(m, n, k, batch), HgemmParams(), HW).k0))
    if split_k > k_blocks:  # a split would be empty
        with pytest.raises(ParamError, match=f"^--split-k: must be at most {k_blocks} "):
            run(m, n, k, batch, alpha=alpha, beta=beta, split_k=split_k)
        return
    a, b, c, out, params = run(m, n, k, batch, alpha=alpha, beta=beta, split_k=split_k)
    assert verify_hgemm(a, b, c if beta != 0 else None, out, params).passed


def test_selector_tiling_is_used_by_default_and_user_tiles_override():
    t = resolve_tiling(GemmShape(2048, 128, 2048), HgemmParams(), HW)
    assert (t.m0, t.n0, t.k0, t.source) == (128, 128, 256, "selector")  # claim G-1
    u = resolve_tiling(GemmShape(2048, 128, 2048), HgemmParams(m0=64, n0=32, k0=64), HW)
    assert (u.m0, u.n0, u.k0, u.source) == (64, 32, 64, "user")
    g = resolve_tiling(GemmShape(2048, 128, 2048), HgemmParams(variant="gemm-example"), HW)
    assert (g.m0, g.n0, g.k0, g.k1) == (128, 256, 64, 256)


def test_tiling_that_does_not_fit_names_the_buffer():
    with pytest.raises(BufferCapacityError, match=r"L0A: .*needs 131072 bytes.*65536 bytes available"):
        resolve_tiling(GemmShape(1024, 1024, 1024), HgemmParams(m0=256, n0=16, k0=256), HW)
    with pytest.raises(BufferCapacityError, match=r"L0C: "):
        resolve_tiling(GemmShape(1024, 1024, 1024), HgemmParams(m0=512, n0=128, k0=16), HW)


@pytest.mark.parametrize("params, option", [
    (HgemmParams(m0=24), "m0"), (HgemmParams(k0=12), "k0"), (HgemmParams(split_k=0), "split-k"),
    (HgemmParams(alpha=float("nan")), "alpha"), (HgemmParams(beta=float("inf")), "beta"),
    (HgemmParams(variant="cublas"), "variant"), (HgemmParams(variant="gemm-example", m0=64), "m0"),
])
def test_bad_options_name_the_option(params, option):
    with pytest.raises(ParamError) as info:
        resolve_tiling(GemmShape(64, 64, 64), params, HW)
    assert info.value.param == option


def test_counters_have_closed_forms():
    shape = GemmShape(300, 200, 1000, 2)
    params = HgemmParams(m0=128, n0=64, k0=128, double_buffer=False)
    c = hgemm_counters(shape, params, resolve_tiling(shape, params, HW))
    blocks = 3 * 4 * 8 * 2  # ceil(300/128) x ceil(200/64) x ceil(1000/128) x batch
    assert c["matmuls"] == blocks and c["aicore_num"] == 3 * 4 * 2 and c["acc_loop"] == 8
    # fractal cycles over the real block sizes: rows 128,128,44 -> 8+8+3; cols 64,64,64,8 -> 4+4+4+1;
    # K 7 x 128 + 104 -> 7*8 + 7
    assert c["cube_fractals"] == (8 + 8 + 3) * (4 + 4 + 4 + 1) * (56 + 7) * 2


def test_options_change_time_through_mechanisms():
    big = GemmShape(4099, 4097, 1000)
    on, _ = simulate_hgemm(big, HgemmParams(), HW)
    off, _ = simulate_hgemm(big, HgemmParams(padding=False), HW)
    # padding aligns A and B (C is not padded, so its unaligned rows remain); without it A's and B's rows,
    # not even 256-byte aligned, load at the ND2NZ rate, counted apart from the 70% rate
    slow = ("bytes_unaligned", "bytes_nd2nz_unaligned")
    assert sum(off.counters.get(c, 0) for c in slow) > 5 * sum(on.counters.get(c, 0) for c in slow)
    assert on.counters.get("bytes_nd2nz_unaligned", 0) == 0 and off.counters["bytes_nd2nz_unaligned"] > 0
    assert "padding" in on.phases and "padding" not in off.phases
    single, _ = simulate_hgemm(big, HgemmParams(double_buffer=False), HW)
    assert single.time_s > on.time_s
    noshuffle, _ = simulate_hgemm(big, HgemmParams(shuffle_k=False), HW)
    assert noshuffle.counters.get("bytes_serialised", 0) > on.counters.get("bytes_serialised", 0)


def test_extrapolated_timing_matches_the_full_loops():
    for shape, params in [((2048, 2048, 2048), HgemmParams()), ((1000, 3000, 2500), HgemmParams(split_k=2)),
                          ((3000, 700, 1800), HgemmParams(variant="gemm-example")),
                          ((512, 4096, 3000), HgemmParams(shuffle_k=False, padding=False))]:
        fast, _ = simulate_hgemm(GemmShape(*shape), params, HW)
        full, _ = simulate_hgemm(GemmShape(*shape), params, HW, force_exact=True)
        assert fast.time_s == pytest.approx(full.time_s, rel=0.005), shape


@pytest.mark.xfail(strict=True, reason="known: on 40 random shapes (256-4000) the extrapolation is within 0.35% "
                   "but for this one (-1.4% here, -0.8% on the 910B4): the truncated task loops miss part of the "
                   "L2 sharing pattern of the full run")
def test_extrapolated_timing_of_a_shape_with_a_known_gap():
    fast, _ = simulate_hgemm(GemmShape(1164, 3384, 2049), HgemmParams(), HW)
    full, _ = simulate_hgemm(GemmShape(1164, 3384, 2049), HgemmParams(), HW, force_exact=True)
    assert fast.time_s == pytest.approx(full.time_s, rel=0.005)


def test_every_core_extrapolation_matches_the_full_loops():
    # every_core (the HGEMM claims' mode, run hgemm --every-core) extrapolates the same way, per core
    for shape, params, warm in [((4096, 2048, 1024), HgemmParams(alpha=0.5, beta=0.5), True),
                                ((3000, 2500, 1280), HgemmParams(alpha=0.5, beta=0.5, padding=False), False),
                                ((1000, 3000, 2500), HgemmParams(split_k=2), False)]:
        fast, _ = simulate_hgemm(GemmShape(*shape), params, HW, warm_l2=warm, every_core=True)
        full, _ = simulate_hgemm(GemmShape(*shape), params, HW, warm_l2=warm, every_core=True, force_exact=True)
        assert fast.extrapolated
        assert fast.time_s == pytest.approx(full.time_s, rel=0.005), shape


def test_timing_model_at_huge_sizes():
    sim, _ = simulate_hgemm(GemmShape(100_000, 100_000, 100_000), HgemmParams(), HW)
    assert sim.counters["matmuls"] == (100_000 // 256 + 1) * (100_000 // 128 + 1) * (-(-100_000 // 128)) * 2
    tflops = 2 * 1e15 / sim.time_s / 1e12
    assert 0 < tflops <= HW.cube_fp16_peak_tflops


def test_no_shape_beats_the_cube_peak():
    from ascendbench.workloads import load_workload

    for s in load_workload("random-5000").shapes[:60]:
        for variant in ("proposed", "gemm-example"):
            g = GemmShape(*s)
            sim, _ = simulate_hgemm(g, HgemmParams(variant=variant, alpha=0.5, beta=0.5), HW)
            fractal_time = sim.counters["cube_fractals"] / HW.ai_cores / HW.clock_hz
            assert sim.time_s >= fractal_time * 0.999, (s, variant)
            assert g.flops / sim.time_s / 1e12 <= HW.cube_fp16_peak_tflops


@pytest.mark.parametrize("shape", [(32768, 512, 512), (2048, 2048, 2048), (512, 4096, 3000), (8192, 8192, 512)])
def test_resident_fast_panels_are_fetched_once_by_their_first_wave(shape):
    from ascendbench.kernels.hgemm import _layout

    g = GemmShape(*shape)
    params = HgemmParams(padding=False)
    tiling = resolve_tiling(g, params, HW)
    lay = _layout(g, params, tiling, HW, warm_l2=False)
    assert lay.first_reads is not None
    panel, _, fast_count, _ = lay.first_reads
    cores = HW.ai_cores
    misses = [[1 - lay.fast_hit(panel, [c], i, cores, -1.0) for i in range(n)] for c, n in enumerate(lay.per_core)]
    # each fast panel misses once in all (the same bytes as the spread-out hit share), all in the first waves
    assert sum(map(sum, misses)) == pytest.approx(fast_count)
    first_wave_tasks = -(-fast_count // cores)
    assert all(m == 0 for row in misses for m in row[first_wave_tasks:])
    # a group's representative reads with the group's mean hit share
    group = [c for c, n in enumerate(lay.per_core) if n == lay.per_core[0]]
    mean = sum(1 - misses[c][0] for c in group) / len(group)
    assert lay.fast_hit(panel, group, 0, cores, -1.0) == pytest.approx(mean)


def test_run_cache_does_not_change_results():
    from ascendbench.kernels.hgemm import RUN_CACHE

    cases = [((2048, 128, 2048), HgemmParams()), ((3000, 2900, 1000), HgemmParams(variant="gemm-example")),
             ((1000, 900, 800), HgemmParams(split_k=2, beta=0.5))]
    for warm in (False, True):
        for shape, params in cases:
            RUN_CACHE.clear()
            cold, _ = simulate_hgemm(GemmShape(*shape), params, HW, warm_l2=warm)
            assert RUN_CACHE.hits == 0 and RUN_CACHE.misses > 0
            hot, _ = simulate_hgemm(GemmShape(*shape), params, HW, warm_l2=warm)
            assert RUN_CACHE.hits == RUN_CACHE.misses
            assert (hot.time_cycles, hot.phases, hot.busy, hot.counters) == (
                cold.time_cycles, cold.phases, cold.busy, cold.counters)
            assert hot.timeline == cold.timeline
    # a run with a warm L2 is not looked up among the cold ones
    RUN_CACHE.clear()
    simulate_hgemm(GemmShape(1000, 900, 800), HgemmParams(), HW)
    misses = RUN_CACHE.misses
    simulate_hgemm(GemmShape(1000, 900, 800), HgemmParams(), HW, warm_l2=True)
    assert RUN_CACHE.misses == 2 * misses and RUN_CACHE.hits == 0


@pytest.mark.parametrize("m, n, k", [(512, 512, 1), (1, 1, 1), (512, 1, 512), (1, 4096, 1), (2, 3, 1)])
def test_rows_of_one_element_are_padded_in_small_pieces(m, n, k):
    # Padding a row of 1 fp16 element to 512 bytes widens it 256 times: the pad pass must take UB pieces of
    # fewer than 256 elements (it overflowed the UB before).
    import ascendbench

    run = ascendbench.run("hgemm", m=m, n=n, k=k, alpha=0.5, beta=0.5)
    shape = run.result.shapes[0]
    assert shape.verification.passed and shape.time_s > 0


def test_warm_l2_keeps_c_resident_only_when_a_b_and_c_fit():
    params = HgemmParams(alpha=0.5, beta=0.5, padding=False)
    fits = GemmShape(4096, 4096, 512)  # A + B + C = 4 + 4 + 32 MiB of L2's 192 MB
    c_bytes = 4096 * 4096 * 2
    cold, _ = simulate_hgemm(fits, params, HW)
    warm, _ = simulate_hgemm(fits, params, HW, warm_l2=True)
    # cold: C is read from HBM and written back; warm: C is read from L2 and its writes stay there
    assert cold.counters["bytes_hbm_write"] == c_bytes
    assert cold.counters["bytes_hbm_read"] >= c_bytes
    assert warm.counters.get("bytes_hbm_write", 0) == 0 and warm.counters.get("bytes_hbm_read", 0) == 0
    assert warm.counters["bytes_gm_read"] == cold.counters["bytes_gm_read"]
    assert warm.time_s < cold.time_s
    big = GemmShape(10240, 10240, 128)  # C alone is 210 MB: it cannot stay in L2
    big_warm, _ = simulate_hgemm(big, params, HW, warm_l2=True)
    assert big_warm.counters["bytes_hbm_write"] == 10240 * 10240 * 2
    assert big_warm.counters["bytes_hbm_read"] >= 10240 * 10240 * 2


@pytest.mark.parametrize(("shape", "options", "resident"), [
    ((2048, 2048, 2048), {"variant": "gemm-example"}, True),  # A, B, C and the A @ B workspace: 32 MiB
    ((8192, 8192, 1024), {"variant": "gemm-example"}, False),  # 302 MB with the workspace
    ((5500, 5500, 5500), {}, False),  # A + B + C fit (182 MB), not with the padded copies (+124 MB)
    ((8192, 8192, 1024), {"alpha": 0.0}, True),  # alpha = 0 touches C only
])
def test_warm_residency_counts_everything_the_run_touches(shape, options, resident):
    params = HgemmParams(**{"alpha": 0.5, "beta": 0.5, **options})
    # every iteration simulated: what L2 and HBM served is counted, not extrapolated
    sim, _ = simulate_hgemm(GemmShape(*shape), params, HW, warm_l2=True, force_exact=True)
    c_bytes = shape[0] * shape[1] * 2
    if resident:
        assert sim.counters.get("bytes_hbm_read", 0) == 0 and sim.counters.get("bytes_hbm_write", 0) == 0
    else:
        # C goes back to HBM (and, for gemm-example, the A @ B workspace too)
        workspace = c_bytes if options.get("variant") == "gemm-example" else 0
        assert sim.counters["bytes_hbm_write"] >= c_bytes + workspace
        assert sim.counters["bytes_hbm_read"] >= c_bytes


@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_a_scalar_fp16_cannot_hold_is_refused_before_the_run(name):
    # the kernel scales in fp16: 70000 would become inf (and NaN with zeros) instead of a wrong-but-quiet result
    with pytest.raises(ParamError, match=f"must be representable in fp16 \\(\\|{name}\\| <= 65504\\), got 70000"):
        resolve_tiling(GemmShape(16, 16, 16), HgemmParams(**{name: 70000.0}), HW)
    resolve_tiling(GemmShape(16, 16, 16), HgemmParams(**{name: 65504.0}), HW)  # the largest fp16 is fine


def test_tile_misfit_agrees_with_the_buffer_checks_of_a_run():
    # the selector's fits check (issue 26 item 10) must refuse exactly the tiles resolve_tiling refuses
    import dataclasses

    from ascendbench.kernels.hgemm import tile_misfit
    from ascendbench.kernels.hgemm_tiling import TABLE_1, TABLE_2

    base = load_profile("atlas-300t-a2")
    profiles = [base, dataclasses.replace(base, ub_bytes=32768), dataclasses.replace(base, l0a_bytes=32768),
                dataclasses.replace(base, l0c_bytes=65536), dataclasses.replace(base, l1_bytes=65536),
                dataclasses.replace(base, l0b_bytes=16384, ub_bytes=8192)]
    seen = {True: 0, False: 0}
    for hw in profiles:
        for m0, n0 in TABLE_1.values():
            for k0, _ in TABLE_2.values():
                for shape, params in ((GemmShape(2048, 512, 4096), HgemmParams()),
                                      (GemmShape(100, 100, 100), HgemmParams(double_buffer=False, split_k=2))):
                    # SplitK up to K's K0 blocks (more is refused before the buffers; the same K1 either way)
                    params = dataclasses.replace(params, split_k=min(params.split_k, math.ceil(shape.k / k0)))
                    why = tile_misfit(m0, n0, k0, shape, params, hw)
                    try:
                        resolve_tiling(shape, dataclasses.replace(params, m0=m0, n0=n0, k0=k0), hw)
                        runs = True
                    except BufferCapacityError as exc:
                        runs = False
                        assert why is not None and str(exc).startswith(why.split(" ", 1)[0] + ":"), (why, exc)
                    assert (why is None) == runs, (hw.ub_bytes, m0, n0, k0, why)
                    seen[runs] += 1
    assert seen[True] > 50 and seen[False] > 50  # both sides of the check were exercised


@pytest.mark.parametrize("shape", [(512, 512, 1024), (500, 300, 700), (256, 1000, 512)])
@pytest.mark.parametrize("variant", ["proposed", "gemm-example"])
def test_equivalent_params_simulate_the_same_run(shape, variant):
    tiles = {"m0": 64, "n0": 128, "k0": 64} if variant == "proposed" else {}
    for padding in (True, False):
        for shuffle_k in (True, False):
            params = HgemmParams(variant=variant, padding=padding, shuffle_k=shuffle_k, **tiles)
            same = equivalent_params(GemmShape(*shape), params)
            a, _ = simulate_hgemm(GemmShape(*shape), params, HW)
            b, _ = simulate_hgemm(GemmShape(*shape), same, HW)
            assert (a.time_cycles, a.phases, a.counters) == (b.time_cycles, b.phases, b.counters)
            # only what cannot matter is changed: padding where nothing is padded, options gemm-example lacks
            nothing_padded = shape[1] % 256 == 0 and shape[2] % 256 == 0
            assert same.padding == (padding or nothing_padded or variant == "gemm-example")
            assert same.shuffle_k == (shuffle_k or variant == "gemm-example")
