import math

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels.programs import Ring as _Ring
from ascendbench.sim import BufferCapacityError, Engine
from ascendbench.sim.engine import Parts

HW = load_profile("ascend-910b4")


def test_ops_on_one_pipe_run_in_order_and_pipes_run_concurrently():
    e = Engine(HW)
    a = e.compute("core0.aiv0", "VECTOR", 100)
    b = e.compute("core0.aiv0", "VECTOR", 50)
    c = e.compute("core0.aiv0", "SCALAR", 30)
    e.run()
    assert (a.start, a.end, b.start, b.end) == (0, 100, 100, 150)
    assert (c.start, c.end) == (0, 30)


def test_dependency_with_delay_models_a_cross_core_flag():
    e = Engine(HW)
    a = e.compute("core0.aic", "CUBE", 100)
    b = e.compute("core0.aiv0", "VECTOR", 10, deps=[e.flag(a)])
    e.run()
    assert b.start == 100 + HW.cross_core_flag_cycles
    assert e.counters["cross_core_flags"] == 1


def test_cube_cycles_follow_the_fractal_count():
    e = Engine(HW)
    fp16 = e.cube("core0.aic", 128, 128, 128, int8=False)
    int8 = e.cube("core0.aic", 128, 128, 128, int8=True)
    odd = e.cube("core0.aic", 17, 33, 49, int8=False)
    e.run()
    assert fp16.end - fp16.start == 8 * 8 * 8 + HW.cube_latency_cycles
    assert int8.end - int8.start == 8 * 8 * 4 + HW.cube_latency_cycles  # 16x32x16 fractal
    assert odd.end - odd.start == 2 * 3 * 4 + HW.cube_latency_cycles
    assert e.counters["matmuls"] == 3 and e.counters["cube_fractals"] == 512 + 256 + 24


def test_vector_cycles_follow_repeats_and_latency():
    # pypto cost model: one uop per 256-byte repeat (instructions of at most 255 repeats issue back to back),
    # the result ready vector_startup_cycles after the last uop; the next op on the pipe may start at once
    e = Engine(HW)
    op = e.vector("core0.aiv0", 64 * 1024)  # 256 repeats of 256 B -> 2 instructions
    nxt = e.vector("core0.aiv0", 256)
    dep = e.vector("core0.aiv0", 256, deps=[op])
    e.run()
    assert op.release - op.start == 256 and op.end - op.release == HW.vector_startup_cycles
    assert nxt.start == op.release and dep.start == op.end
    assert (e.counters["vector_instructions"], e.counters["vector_repeats"]) == (4, 258)


def test_carry_loop_step_costs_the_vector_op_the_sync_and_the_scalar_read():
    e = Engine(HW)
    op = e.vector_chain("core0.aiv0", 64, 128 * 4, "scalar")  # 64 rows of 128 fp32: Adds + GetValue each
    e.run()
    step = (2 + HW.vector_startup_cycles + HW.vector_scalar_sync_cycles + HW.scalar_load_cycles
            + HW.carry_loop_scalar_ops * HW.scalar_op_cycles)
    assert op.end - op.start == pytest.approx(64 * step)
    assert e.counters["vector_scalar_syncs"] == 64


def test_gm_read_miss_hit_and_unaligned_costs():
    e = Engine(HW)
    miss = e.gm_read("core0.aic", "MTE2", 32768, l2_hit=False)
    e2 = Engine(HW)
    hit = e2.gm_read("core0.aic", "MTE2", 32768, l2_hit=True)
    e3 = Engine(HW)
    unaligned = e3.gm_read("core0.aic", "MTE2", 32768, l2_hit=False, aligned=False)
    for eng in (e, e2, e3):
        eng.run()
    assert miss.end == pytest.approx(32768 / HW.gm_read_bytes_per_cycle + HW.gm_read_latency_cycles)
    assert hit.end == pytest.approx(32768 / HW.l2_read_bytes_per_cycle + HW.l2_hit_latency_cycles)
    assert unaligned.end - HW.gm_read_latency_cycles == pytest.approx(32768 / (HW.gm_read_bytes_per_cycle * 0.7))
    assert e.stats.dynamic["bytes_hbm_read"] == 32768 and e2.stats.dynamic["bytes_l2_hit"] == 32768


def test_nd2nz_load_of_unaligned_rows_runs_at_the_profile_rate():
    # The ND2NZ rate replaces the alignment rate (it was derived with that rate out of the way).
    times = []
    for aligned, slow in ((True, False), (False, False), (True, True), (False, True)):
        e = Engine(HW)
        op = e.gm_read("core0.aic", "MTE2", 32768, l2_hit=True, aligned=aligned, nd2nz_unaligned=slow)
        e.run()
        times.append(op.end - HW.l2_hit_latency_cycles)
        assert e.counters.get("bytes_nd2nz_unaligned", 0) == (32768 if slow else 0)
    rate = HW.l2_read_bytes_per_cycle
    assert times == pytest.approx([32768 / rate, 32768 / (rate * HW.unaligned_efficiency),
                                   32768 / (rate * HW.nd2nz_unaligned_efficiency),
                                   32768 / (rate * HW.nd2nz_unaligned_efficiency)])


def test_transfers_round_up_to_32_bytes():
    e = Engine(HW)
    e.gm_write("core0.aiv0", "MTE3", 33, writeback=True)
    e.gm_read("core0.aiv0", "MTE2", 1, region=("x", 0))
    assert e.counters["bytes_gm_write"] == 64 and e.counters["bytes_gm_read"] == 32
    assert e.run().dynamic["bytes_hbm_write"] == 64


def test_cores_transferring_at_once_share_hbm_bandwidth():
    nbytes = 1 << 20
    alone = Engine(HW)
    op = alone.gm_read("core0.aic", "MTE2", nbytes, l2_hit=False)
    alone.run()
    crowd = Engine(HW)
    ops = [crowd.gm_read(f"core{c}.aic", "MTE2", nbytes, l2_hit=False) for c in range(HW.ai_cores)]
    crowd.run()
    assert op.end == pytest.approx(nbytes / HW.gm_read_bytes_per_cycle + HW.gm_read_latency_cycles)
    # 20 cores x 32 B/cycle exceed the chip's HBM rate: the last one finishes when HBM has moved all of it.
    last = max(o.end for o in ops)
    assert last == pytest.approx(HW.ai_cores * nbytes / HW.hbm_bytes_per_cycle + HW.gm_read_latency_cycles)


def test_weighted_representative_core_reserves_its_group_bandwidth():
    nbytes = 1 << 20
    e = Engine(HW)
    e.set_weight("core0.aic", HW.ai_cores)
    op = e.gm_read("core0.aic", "MTE2", nbytes, l2_hit=False)
    e.run()
    assert op.end == pytest.approx(HW.ai_cores * nbytes / HW.hbm_bytes_per_cycle + HW.gm_read_latency_cycles)
    assert e.stats.dynamic["bytes_hbm_read"] == HW.ai_cores * nbytes


def test_writes_back_to_hbm_only_when_asked():
    e = Engine(HW)
    e.gm_write("core0.aic", "FIXPIPE", 4096, writeback=False)
    assert e.counters.get("bytes_hbm_write", 0) == 0 and e.counters["bytes_gm_write"] == 4096


def test_a_written_back_write_without_region_takes_hbm_time_from_a_later_reader_not_from_the_writer():
    nbytes = 1 << 20
    e = Engine(HW)
    e.set_weight("core0.aiv0", HW.ai_cores)
    wr = e.gm_write("core0.aiv0", "MTE3", nbytes, writeback=True)
    rd = e.gm_read("core0.aiv1", "MTE2", nbytes, l2_hit=False)
    stats = e.run()
    hbm_write = HW.ai_cores * nbytes / HW.hbm_bytes_per_cycle
    assert wr.release == pytest.approx(max(nbytes / HW.l2_write_bytes_per_cycle, HW.ai_cores * nbytes / HW.l2_bytes_per_cycle))
    assert wr.end == pytest.approx(wr.release + HW.gm_write_latency_cycles)
    # the reader is served by HBM after the write-back (first come, first served)
    assert rd.release == pytest.approx(max(hbm_write + nbytes / HW.hbm_bytes_per_cycle, nbytes / HW.gm_read_bytes_per_cycle))
    assert stats.hbm_busy == pytest.approx(hbm_write + nbytes / HW.hbm_bytes_per_cycle)
    assert stats.dynamic["bytes_hbm_write"] == HW.ai_cores * nbytes


def test_a_read_of_resident_data_hits_and_of_evicted_data_misses():
    e = Engine(HW)
    w = e.gm_write("core0.aic", "FIXPIPE", 4096, region=("y", 0))
    again = e.gm_read("core0.aiv0", "MTE2", 4096, region=("y", 0), deps=[w])
    half = e.gm_read("core0.aiv0", "MTE2", 4096, region=("y", 2048), deps=[again])
    stats = e.run()
    assert stats.dynamic["bytes_l2_hit"] == 4096 + 2048 and stats.dynamic["bytes_hbm_read"] == 2048
    assert again.end - again.release == HW.l2_hit_latency_cycles
    assert half.end - half.release == HW.gm_read_latency_cycles


def test_evicting_dirty_lines_writes_them_back_then_and_takes_hbm_time_from_everyone():
    # L2 of 1 MiB: a 1 MiB write fills it with dirty lines; reading 1 MiB more evicts them all, and their
    # write-back is served by HBM first come, first served with the reads (the reader does not wait for it)
    hw = HW.replace(l2_bytes=1 << 20, l2_cache_bytes=1 << 20)
    e = Engine(hw)
    w = e.gm_write("core0.aiv0", "MTE3", 1 << 20, region=("y", 0))
    r1 = e.gm_read("core0.aic", "MTE2", 1 << 20, region=("x", 0), deps=[w])
    r2 = e.gm_read("core1.aic", "MTE2", 4096, region=("z", 0), deps=[w])
    stats = e.run()
    rate = hw.hbm_bytes_per_cycle
    assert stats.dynamic["bytes_hbm_write"] == pytest.approx(1 << 20)
    assert stats.hbm_busy == pytest.approx((2 * (1 << 20) + 4096) / rate)
    assert r1.release == pytest.approx(w.end + max((1 << 20) / hw.gm_read_bytes_per_cycle, (1 << 20) / rate))
    # the second reader queues behind the first read and the write-back it caused
    assert r2.release == pytest.approx(w.end + (2 * (1 << 20) + 4096) / rate)


def test_a_rewrite_of_resident_data_allocates_nothing():
    hw = HW.replace(l2_bytes=1 << 20, l2_cache_bytes=1 << 20)
    e = Engine(hw)
    w = e.gm_write("core0.aiv0", "MTE3", 1 << 19, region=("y", 0))
    e.gm_write("core0.aiv0", "MTE3", 1 << 19, region=("y", 0), deps=[w])
    stats = e.run()
    assert stats.dynamic["bytes_hbm_write"] == 0 and e.cache.dirty_bytes() == 1 << 19


def test_a_flushed_l2_is_full_of_dirty_lines_that_the_first_allocations_write_back():
    from ascendbench.sim.l2 import L2Cache

    e = Engine(HW, l2=L2Cache(HW.l2_bytes, dirty_fill=HW.l2_bytes))
    e.gm_read("core0.aic", "MTE2", 1 << 20, region=("x", 0))
    stats = e.run()
    assert stats.dynamic["bytes_hbm_write"] == pytest.approx(1 << 20)


def test_a_read_that_misses_l2_also_takes_l2_bandwidth():
    nbytes = 1 << 20
    e = Engine(HW)
    e.set_weight("core0.aic", HW.ai_cores)
    e.gm_read("core0.aic", "MTE2", nbytes, l2_hit=False)
    stats = e.run()
    assert stats.l2_busy == pytest.approx(HW.ai_cores * nbytes / HW.l2_bytes_per_cycle)
    assert stats.hbm_busy == pytest.approx(HW.ai_cores * nbytes / HW.hbm_bytes_per_cycle)


def test_queue_depth_bounds_how_far_a_producer_runs_ahead():
    for depth in (1, 2):
        e = Engine(HW)
        ring = _Ring(depth)
        produced = []
        for _ in range(6):
            p = e.compute("core0.aiv0", "MTE2", 10, deps=[ring.wait()])
            c = e.compute("core0.aiv0", "VECTOR", 100, deps=[p])
            ring.push(c)
            produced.append((p, c))
        e.run()
        for i in range(depth, 6):
            assert produced[i][0].start == pytest.approx(produced[i - depth][1].end)
        assert produced[depth - 1][0].start < produced[0][1].end  # up to `depth` items before the first is consumed


def test_sync_all_waits_for_every_core_and_costs_its_latency():
    e = Engine(HW)
    a = e.compute("core0.aiv0", "VECTOR", 100)
    b = e.compute("core1.aiv0", "VECTOR", 300)
    barrier = e.sync_all([a, b])
    after = e.compute("core0.aiv0", "VECTOR", 1, deps=[barrier])
    e.run()
    assert after.start == 300 + HW.sync_all_cycles


def test_buffer_capacity_error_names_buffer_and_bytes():
    e = Engine(HW)
    e.alloc("core0.aic", "L0A", 40000, "first")
    with pytest.raises(BufferCapacityError) as info:
        e.alloc("core0.aic", "L0A", 40000, "second tile")
    assert "L0A" in str(info.value) and "80000" in str(info.value) and "65536" in str(info.value)


def test_deadlock_is_reported():
    e = Engine(HW)
    a = e.compute("core0.aiv0", "VECTOR", 1)
    b = e.compute("core0.aiv0", "SCALAR", 1, deps=[a])
    a.deps.append((b, 0.0))
    b.succs.append(a)
    a.pending += 1
    with pytest.raises(RuntimeError, match="deadlock"):
        e.run()


def test_queue_depth_one_serialises_producer_and_consumer():
    e = Engine(HW)
    ring = _Ring(1)
    for _ in range(3):
        p = e.compute("core0.aiv0", "MTE2", 10, deps=[ring.wait()])
        ring.push(e.compute("core0.aiv0", "VECTOR", 100, deps=[p]))
    e.run()
    assert math.isclose(ring.released[-1].end, 3 * 110)


def test_negative_transfer_sizes_are_refused():
    e = Engine(HW)
    with pytest.raises(ValueError, match="nbytes >= 0"):
        e.gm_read("core0.aic", "MTE2", -1, l2_hit=False)
    with pytest.raises(ValueError, match="nbytes >= 0"):
        e.gm_write("core0.aiv0", "MTE3", -1000, writeback=True)


def _two_moves_and_mmads(e: Engine, composite: bool, extra_move: bool = False):
    """A GM read, then two (L1 -> L0 move, Mmad) pairs that depend on it, then a GM write of the result:
    as separate ops, or the four local ops as one composite whose schedule applies the same rules; with
    `extra_move`, one more separate move of 1000 bytes at 7 bytes per cycle after the write."""
    read = e.gm_read("core0.aic", "MTE2", 4096, l2_hit=0.0, label="panel")
    if not composite:
        mm = None
        for _ in range(2):
            load = e.local_move("core0.aic", "MTE1", 8192, 512.0, "bytes_l1_to_l0", deps=[read, mm], label="move")
            mm = e.cube("core0.aic", 64, 64, 64, False, deps=[load, mm], label="Mmad")
    else:
        move, cube = 8192 / 512.0, e.cube_cycles(64, 64, 64)
        lat = HW.cube_latency_cycles

        def schedule(op):
            parts, load_rel, mm_rel, mm_end = [], None, None, None
            moves, mmads = [], []
            for _ in range(2):  # as Engine.run: after the pipe's previous op and every dependency
                t = max(read.end, 0.0 if load_rel is None else load_rel, mm_end or 0.0)
                parts.append(("MTE1", "move", t, t + move, t + move))
                moves.append((t + move) - t)
                load_rel = t + move
                t = max(load_rel, mm_end or 0.0)
                mm_rel, mm_end = t + cube, t + cube + lat
                parts.append(("CUBE", "Mmad", t, mm_rel, mm_end))
                mmads.append(mm_rel - t)
            op.parts = Parts(parts, [("MTE1", moves), ("CUBE", mmads)], mm_end)
            op.start, op.latency = parts[0][2], lat
            return mm_rel

        e.count("core0.aic", (("bytes_l1_to_l0", 2 * 8192), ("matmuls", 2), ("cube_fractals", 2 * cube)))
        mm = e.composite("core0.aic", "CUBE", "moves and Mmads", [read], schedule)
    write = e.gm_write("core0.aic", "FIXPIPE", 4096, writeback=True, deps=[mm], label="C")
    if extra_move:
        e.local_move("core0.aic", "MTE1", 1000, 7.0, "bytes_l1_to_l0", deps=[write], label="move")
    return e.run(), write


def test_a_composite_op_times_counts_and_shows_the_ops_it_stands_for():
    from ascendbench.sim.result import _to_result, partition

    runs = []
    for composite in (False, True):
        e = Engine(HW)
        stats, write = _two_moves_and_mmads(e, composite)
        res = _to_result(HW, e, stats, partition(stats.phases, stats.makespan), False, dict(e.counters))
        runs.append((stats, write.start, res.counters, [(s.pipe, s.label, s.start, s.release, s.end)
                                                         for s in res.timeline]))
    (plain, w1, c1, t1), (comp, w2, c2, t2) = runs
    assert w1 == w2 and plain.makespan == comp.makespan and plain.phases == comp.phases
    assert plain.busy == comp.busy and c1 == c2
    assert t1 == t2 and [s[1] for s in t2] == ["panel", "move", "Mmad", "move", "Mmad", "C"]


@pytest.mark.parametrize("extra_move", [False, True])
def test_busy_time_of_a_composites_parts_adds_in_program_order(extra_move):
    # the run walks each pipe; a pipe that gets busy time from a composite's parts and from its own ops (the
    # extra move) is summed in program order, as _spans sums it, in the same (unit, pipe) order
    from ascendbench.sim.engine import _spans

    e = Engine(HW)
    stats, _ = _two_moves_and_mmads(e, True, extra_move)
    makespan, phases, busy = _spans(e.ops)
    assert (stats.makespan, stats.phases, list(stats.busy.items())) == (makespan, phases, list(busy.items()))
    assert list(busy) == [("core0.aic", "MTE2"), ("core0.aic", "MTE1"), ("core0.aic", "CUBE"),
                          ("core0.aic", "FIXPIPE")]
    moves = 2 * 8192 / 512.0 + (1000 / 7.0 if extra_move else 0.0)
    assert busy[("core0.aic", "MTE1")] == pytest.approx(moves)


def _check_index(cache) -> None:
    """The L2's index of each buffer: sorted, disjoint segments, exactly the live addressed ones, whose
    sizes (with the anonymous ones) add up to `used`."""
    live = [seg for _, _, seg in cache._heap if seg.alive]
    for buf, segs in cache._segs.items():
        assert cache._los[buf] == [s.lo for s in segs]
        assert all(a.hi <= b.lo for a, b in zip(segs, segs[1:]))
        assert all(s.alive and s.buf == buf for s in segs)
    assert sorted(map(id, (s for s in live if s.buf is not None))) == sorted(
        id(s) for segs in cache._segs.values() for s in segs)
    assert cache.used == pytest.approx(sum(s.size for s in live))


def test_l2_lookups_match_a_byte_by_byte_reference_and_keep_the_index_consistent():
    import random

    from ascendbench.sim.l2 import L2Cache

    rng = random.Random(7)
    big, small = L2Cache(10_000), L2Cache(300)
    resident: set[tuple[str, int]] = set()
    for step in range(600):
        buf = rng.choice("xy")
        lo = rng.randrange(0, 900)
        hi = lo + rng.randrange(1, 120)
        write = rng.random() < 0.4
        hit, evicted = big.access(buf, lo, hi, 1, write)
        touched = {(buf, a) for a in range(lo, hi)}
        # nothing is evicted from the big cache: the hit share is what a byte-level set says
        assert hit == pytest.approx(len(touched & resident) / (hi - lo)) and evicted == 0.0
        resident |= touched
        small.access(buf, lo, hi, 1, write)
        if step % 50 == 0:
            _check_index(big)
            _check_index(small)
    _check_index(big)
    _check_index(small)
    assert small.used == pytest.approx(300.0)
    # a clone behaves exactly as the original from then on
    copy = small.clone()
    _check_index(copy)
    for _ in range(200):
        args = (rng.choice("xy"), (lo := rng.randrange(0, 900)), lo + rng.randrange(1, 120), 1, rng.random() < 0.4)
        assert copy.access(*args) == small.access(*args) and copy.used == small.used
    assert big.resident("x") + big.resident("y") == pytest.approx(len(resident))


def test_l2_rescaled_scales_the_addresses_with_the_capacity():
    """An L2 state at another scale holds the same buffers in proportion (a workspace used again by the next
    chunk is found at the scaled addresses), in the same age order and with the same dirty shares."""
    from ascendbench.sim.l2 import L2Cache

    cache = L2Cache(1000, dirty_fill=1000, scale=0.5)
    cache.access("ws", 0, 300, 1, True)  # dirty workspace
    cache.access("x", 1000, 1200, 1, False)  # clean input
    cache.allocate(100, dirty=False)  # anonymous traffic
    small = cache.rescaled(0.25)
    _check_index(small)
    assert (small.capacity, small.scale, small.used) == (500, 0.25, pytest.approx(500))
    assert (small.resident("ws"), small.resident("x"), small.dirty_bytes()) == (150, 100, pytest.approx(350))
    assert small.access("ws", 0, 150, 1, False) == (1.0, 0.0)  # the scaled workspace hits
    assert small.access("x", 500, 600, 1, False)[0] == 1.0
    assert small.access("x", 1000, 1200, 1, False)[0] == 0.0  # the unscaled addresses miss
    assert cache.rescaled(0.5) is not cache and cache.rescaled(0.5).resident("ws") == 300  # same scale: a copy
