"""Long loops are simulated for a few iterations and extrapolated; identical cores are simulated once."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels import SCAN_KERNELS, ScanParams
from ascendbench.sim import simulate

HW = load_profile("ascend-910b4")


@pytest.mark.parametrize("kernel", ["mcscan", "mcscan-ul1", "scanu", "scanul1", "vec-cumsum", "memcpy"])
@pytest.mark.parametrize("s", [32, 128])
def test_scaled_instances_extrapolate_to_the_exact_simulation(kernel, s, monkeypatch):
    """The scans are simulated on two smaller instances of the same problem (L2 scaled in proportion) and
    extrapolated (sim.result.simulate_scaled); the full problem simulated op by op gives the same time
    within 0.5 % and the same static counters, what L2 and HBM served within 2 %."""
    import ascendbench.kernels.scan as scan_module

    # sizes longer than the exact-simulation limit (40 steps per core), with uneven blocks and a padded tail
    if kernel.startswith("mcscan"):
        n = 59 * 20 * s * s + 7 * s * s + 3  # 60 tiles per block (an even count: see the fp16 test below)
    elif kernel == "memcpy":
        n = 50 * 40 * 16384 + 12345
    else:
        tile = 16384 if kernel == "vec-cumsum" else s * s
        n = 45 * tile + 3
    params = ScanParams(s=s)
    extrapolated = SCAN_KERNELS[kernel].simulate(n, params, HW)
    real = scan_module.simulate_scaled

    def exact(*args, **kwargs):
        kwargs["exact_limit"] = 10**9  # the whole problem
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "simulate_scaled", exact)
    reference = SCAN_KERNELS[kernel].simulate(n, params, HW)
    assert extrapolated.extrapolated and not reference.extrapolated
    # measured: at most 0.41% (MCScanUL1 with s = 128)
    assert extrapolated.time_cycles == pytest.approx(reference.time_cycles, rel=0.005)
    dynamic = ("bytes_l2_hit", "bytes_hbm_read", "bytes_hbm_write")
    assert {k: v for k, v in extrapolated.counters.items() if k not in dynamic} == {
        k: v for k, v in reference.counters.items() if k not in dynamic}
    for k in dynamic:
        assert extrapolated.counters.get(k, 0) == pytest.approx(reference.counters.get(k, 0), rel=0.02, abs=1e6)
    assert sum(extrapolated.phases.values()) == pytest.approx(extrapolated.time_cycles)


def test_linear_extrapolation_formula_on_a_synthetic_loop():
    def build(engine, skip):
        count = 100 - min(skip, 97)
        prev = None
        for i in range(count):
            prev = engine.compute("core0.aiv0", "VECTOR", 10 if i else 1000, deps=[prev])

    result = simulate(HW, build, 100)
    assert result.extrapolated
    assert result.time_cycles == pytest.approx(1000 + 99 * 10)


def test_timing_model_handles_huge_n_with_exact_counters():
    n = 2**40 + 12345
    result = SCAN_KERNELS["mcscan"].simulate(n, ScanParams(), HW)
    tiles = -(-n // 16384)
    assert result.counters["matmuls"] == tiles
    assert result.time_s > 0


def test_two_loop_fit_reads_the_shorter_run_off_the_longer_one():
    from ascendbench.sim.result import simulate_2d

    tasks, blocks = 50, 30

    def build(engine, skip_tasks, kept_blocks):
        # two cores with 50 and 49 tasks: a slow first step, then k vector ops and one small write per task
        for core, count in ((0, tasks), (1, tasks - 1)):
            kept = max(count - skip_tasks, 1)
            engine.task = 0
            prev = engine.compute(f"core{core}.aiv0", "VECTOR", 1000)
            for task in range(kept):
                engine.task = (tasks - skip_tasks) - kept + task
                for _ in range(kept_blocks):
                    prev = engine.compute(f"core{core}.aiv0", "VECTOR", 10, deps=[prev])
                engine.gm_write(f"core{core}.aiv0", "MTE3", 512, writeback=True, deps=[prev])

    fitted = simulate_2d(HW, build, tasks, blocks, keep_tasks=(4, 8), keep_blocks=(4, 8), prefix=True)
    exact = simulate_2d(HW, build, tasks, blocks, force_exact=True)
    assert fitted.extrapolated and not exact.extrapolated
    assert fitted.time_cycles == pytest.approx(exact.time_cycles, rel=1e-3)
    assert fitted.counters == exact.counters
    assert fitted.busy == pytest.approx(exact.busy, rel=1e-6)


def test_run_cache_gives_the_same_result_and_rebuilds_the_timeline():
    from ascendbench.sim.result import RunCache, simulate_2d

    built = []

    def build(engine, skip_tasks, kept_blocks):
        built.append((skip_tasks, kept_blocks))
        for core, count in ((0, 40), (1, 39)):
            kept = max(count - skip_tasks, 1)
            prev = None
            for task in range(kept):
                engine.task = (40 - skip_tasks) - kept + task
                for _ in range(kept_blocks):
                    prev = engine.compute(f"core{core}.aiv0", "VECTOR", 10, deps=[prev])
                engine.gm_write(f"core{core}.aiv0", "MTE3", 4096, writeback=True, deps=[prev])

    def key(skip_tasks, kept_blocks):
        return ("test program", skip_tasks, kept_blocks)

    kw = {"keep_tasks": (4, 8), "keep_blocks": (4, 8), "prefix": True}
    plain = simulate_2d(HW, build, 40, 30, **kw)
    cache = RunCache(maxsize=8)
    first = simulate_2d(HW, build, 40, 30, cache=cache, cache_key=key, **kw)
    runs = len(built)
    again = simulate_2d(HW, build, 40, 30, cache=cache, cache_key=key, **kw)
    assert len(built) == runs  # looked up, not built
    assert (cache.hits, cache.misses, len(cache)) == (2, 2, 2)
    for res in (first, again):
        assert (res.time_cycles, res.phases, res.busy, res.counters, res.hbm_busy_cycles) == (
            plain.time_cycles, plain.phases, plain.busy, plain.counters, plain.hbm_busy_cycles)
    assert again.timeline == plain.timeline  # each rebuilt on demand: results keep no ops
    assert len(built) == runs + 2
    cache.put(("other",), {})
    assert len(cache) == 3 and cache.get(key(32, 4)) is None  # not the same program


def test_run_cache_drops_the_least_recently_used_entry():
    from ascendbench.sim.result import RunCache

    cache = RunCache(maxsize=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("b"), cache.get("a"), cache.get("c"), len(cache)) == (None, 1, 3, 2)
    assert (cache.hits, cache.misses) == (3, 1)


@pytest.mark.parametrize("kernel, params", [("scanul1", ScanParams(s=32)), ("vec-cumsum", ScanParams(dtype="int8"))])
def test_single_core_scans_far_past_the_l2_extrapolate_to_the_exact_simulation(kernel, params, monkeypatch):
    """One core streaming 6e6 elements (s = 32: 5,860 tiles; the vector CumSum: 366 pieces): the scaled
    instances run at 16 and 24 steps with L2 scaled in proportion and give the exact run's time. (With an L2
    floor of what the core has in flight, which they had before, they grew with n: at n = 2e8, whose exact
    run takes 24 s, they took 50-1,200 ms and put ScanUL1 at s = 32 1.0% above the exact run.)"""
    import ascendbench.kernels.scan as scan_module

    n = 6_000_000
    extrapolated = SCAN_KERNELS[kernel].simulate(n, params, HW)
    real = scan_module.simulate_scaled

    def exact(*args, **kwargs):
        kwargs["exact_limit"] = 10**9
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "simulate_scaled", exact)
    reference = SCAN_KERNELS[kernel].simulate(n, params, HW)
    assert extrapolated.extrapolated and not reference.extrapolated
    assert extrapolated.time_cycles == pytest.approx(reference.time_cycles, rel=0.005)


@pytest.mark.parametrize("kernel, n", [("mcscan", 10_000_000), ("mcscan-ul1", 20_000_000)])
def test_multi_core_scans_with_small_tiles_extrapolate_to_the_exact_simulation(kernel, n, monkeypatch):
    """At s = 32 a step is a few hundred cycles and instances of 16 and 24 steps are not yet in the steady state
    (they put MCScan 1.9% below the exact run at 1e7, MCScanUL1 4.1% below at 1e7 and 5.9% above at 2e7): the
    steady-state check of simulate_scaled climbs to larger instances until two pairs agree (489 steps: 36 and
    54; 820 steps: 186 and 280). (MCScanUL1 at 1e7 has 489 tiles per block, an odd count, and runs exactly:
    see the test below.)"""
    import ascendbench.kernels.scan as scan_module

    params = ScanParams(s=32)
    extrapolated = SCAN_KERNELS[kernel].simulate(n, params, HW)
    real = scan_module.simulate_scaled

    def exact(*args, **kwargs):
        kwargs["exact_limit"] = 10**9
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "simulate_scaled", exact)
    reference = SCAN_KERNELS[kernel].simulate(n, params, HW)
    assert extrapolated.extrapolated and not reference.extrapolated
    # measured: +0.02%, -0.08%
    assert extrapolated.time_cycles == pytest.approx(reference.time_cycles, rel=0.005)


@pytest.mark.parametrize("kernel", ["mcscan", "mcscan-ul1"])
def test_chained_chunks_of_an_exclusive_scan_extrapolate_to_the_exact_simulation(kernel):
    """Exclusive scans write their row scans to a workspace that every L2 chunk uses again (6 chunks at 1e8):
    each chunk's instances start from the previous chunk's L2 rescaled with its addresses (L2Cache.rescaled),
    so both find the workspace resident in proportion, as the exact run does. (With the addresses dropped
    in the smaller instance only, phase I extrapolated to 0 cycles: -18.9% for MCScan, -18.4% for MCScanUL1;
    measured now: +0.26%, -0.16%.)"""
    n, params = 100_000_000, ScanParams(exclusive=True)
    extrapolated = SCAN_KERNELS[kernel].simulate(n, params, HW)
    reference = SCAN_KERNELS[kernel].simulate(n, params, HW, force_exact=True)  # chunks simulated op by op
    assert extrapolated.time_cycles == pytest.approx(reference.time_cycles, rel=0.005)


def test_chained_chunks_with_fp16_output_extrapolate_to_the_exact_simulation():
    """MCScanUL1 with fp16 output at 1e8 (4 chunks, 77 tiles per block): its 2B AIVs take ceil(t / 2B) tiles each,
    so with an odd count per block block b's AIVs start b tiles ahead of its cube, which changes who pays each
    L2 miss. No smaller instance keeps that lead in proportion (it is b tiles at any size): instances of 16 and
    24 steps put the run 4.9% below the exact one, and odd instances of 35 to 77 steps take 8,197 to 8,470
    cycles per step, scattered and drifting up. Such chunks run exactly up to 1,600 steps."""
    n, params = 100_000_000, ScanParams(out_dtype="fp16")
    extrapolated = SCAN_KERNELS["mcscan-ul1"].simulate(n, params, HW)
    reference = SCAN_KERNELS["mcscan-ul1"].simulate(n, params, HW, force_exact=True)
    assert extrapolated.time_cycles == pytest.approx(reference.time_cycles, rel=0.005)


def _phased_build(shrinking: bool):
    """build(engine, u) of a synthetic problem of u steps: phase "a" takes 100,000 cycles per step, phase "b"
    64,000,000 // u cycles (shrinking) or 50,000 per step."""

    def build(engine, u):
        engine.phase = "a"
        prev = engine.compute("core0.aiv0", "VECTOR", 100_000 * u)
        engine.phase = "b"
        engine.compute("core0.aiv0", "VECTOR", 64_000_000 // u if shrinking else 50_000 * u, deps=[prev])

    return build


def test_dissimilarity_names_a_shrinking_phase_and_a_makespan_that_does_not_grow():
    from ascendbench.sim.engine import RunStats
    from ascendbench.sim.result import dissimilarity

    def run(makespan, phases):
        return RunStats(makespan, {}, {}, 0.0, 0.0), phases

    assert dissimilarity(run(100, {"a": 60, "b": 40}), run(150, {"a": 90, "b": 60}), 10) is None
    assert dissimilarity(run(100, {"a": 60, "b": 40}), run(100, {"a": 60, "b": 40}), 10) == (
        "the makespan does not grow (100 -> 100 cycles)")
    assert dissimilarity(run(100, {"a": 20, "b": 80}), run(150, {"a": 110, "b": 40}), 10) == (
        "phase 'b' shrinks (80 -> 40 cycles; extrapolated -360)")
    # a phase that starts to take time, or shrinks by less than 1% (noise), is no sign
    assert dissimilarity(run(100, {"a": 100, "b": 0}), run(150, {"a": 100, "b": 50}), 10) is None
    assert dissimilarity(run(100, {"a": 50, "b": 50}), run(150, {"a": 100.5, "b": 49.6}), 10) is None


def test_instances_that_are_not_self_similar_are_replaced_or_reported():
    from ascendbench.sim.result import simulate_scaled

    def nothing(engine):
        pass

    # self-similar: extrapolated from 16 and 24 steps, exactly linear
    fine = simulate_scaled(HW, _phased_build(False), 10_000, nothing)
    assert fine.extrapolated and fine.time_cycles == pytest.approx(150_000 * 10_000)
    assert fine.gaps[0].label == "extrapolated steady state (10,000 steps, 24 simulated)"
    # the makespan shrinks from 16 to 24 steps; the next instances (32, 48) are more than half of the 60 steps,
    # which run exactly
    exact = simulate_scaled(HW, _phased_build(True), 60, nothing)
    assert not exact.extrapolated and exact.time_cycles == pytest.approx(100_000 * 60 + 64_000_000 // 60)
    # phase b shrinks at every size: after two retries (64 and 96 steps) the result says so
    far = simulate_scaled(HW, _phased_build(True), 10_000, nothing)
    assert far.extrapolated
    extrapolated_b = 666_666 + (10_000 - 96) / 32 * (666_666 - 1_000_000)
    assert far.gaps[0].label == ("extrapolated steady state (10,000 steps, 96 simulated; the instances are not "
                                 f"self-similar: phase 'b' shrinks (1,000,000 -> 666,666 cycles; extrapolated "
                                 f"{extrapolated_b:,.0f}))")


def test_the_steady_state_check_climbs_past_a_transient_or_runs_the_exact_problem():
    from ascendbench.sim.result import simulate_scaled

    def build(engine, u):
        # 100 cycles per step, and a start-up of 5,000 cycles per step over the first 30 steps
        engine.compute("core0.aiv0", "VECTOR", 100 * u + 5_000 * min(u, 30))

    def nothing(engine):
        pass

    # unchecked, 16 and 24 steps extrapolate the start-up's slope
    assert simulate_scaled(HW, build, 10_000, nothing).time_cycles == pytest.approx(
        100 * 24 + 5_000 * 24 + (10_000 - 24) * 5_100)
    # checked: the pairs (16, 24), (24, 36), (36, 54) disagree, (54, 82) agrees with (36, 54)
    checked = simulate_scaled(HW, build, 10_000, nothing, steady=0.005)
    assert checked.extrapolated and checked.time_cycles == pytest.approx(100 * 10_000 + 150_000)
    assert checked.gaps[0].label == "extrapolated steady state (10,000 steps, 82 simulated)"
    # more steps than the check's three instances (16 + 24 + 36) and at most twice as many: the exact run
    exact = simulate_scaled(HW, build, 150, nothing, steady=0.005)
    assert not exact.extrapolated and exact.time_cycles == pytest.approx(100 * 150 + 150_000)
    # the ladder would reach the problem's steps (16 + ... + 82 + 124 > 300): the exact run
    late = simulate_scaled(HW, lambda engine, u: build(engine, u) if u < 60 else engine.compute(
        "core0.aiv0", "VECTOR", 100 * u + 150_000 + 20 * (u - 60)), 300, nothing, steady=0.005)
    assert not late.extrapolated and late.time_cycles == pytest.approx(100 * 300 + 150_000 + 20 * 240)
