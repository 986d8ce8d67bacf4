"""L2 residency of HGEMM panels without cliffs: a working set larger than L2 keeps the part that fits."""

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels.hgemm import GemmShape, HgemmParams, _layout, resolve_tiling, simulate_hgemm

HW = load_profile("ascend-910b2")  # 24 cores, 192 MiB L2
SIZES = range(1024, 16385, 1024)


def _per_flop(s: int) -> float:
    result, _ = simulate_hgemm(GemmShape(s, s, s), HgemmParams(), HW)
    return result.time_s / (2 * s**3)


def test_square_sweep_time_per_flop_has_no_cliff():
    # Before, the fast panels' hit rate fell from 1 - 1/slow_count to one wave's sharing at one byte past L2:
    # 10240^3 was 2.94x slower per flop than 8192^3. Consecutive sizes now differ by at most 30% per flop
    # (the operands grow 13-300% per step).
    per_flop = [_per_flop(s) for s in SIZES]
    steps = [b / a for a, b in zip(per_flop, per_flop[1:])]
    assert max(steps) < 1.3, dict(zip(SIZES[1:], steps))
    assert per_flop[SIZES.index(10240)] < 1.1 * per_flop[SIZES.index(8192)]


def _hit_a(s: int) -> float:
    shape, params = GemmShape(s, s, s), HgemmParams()
    tiling = resolve_tiling(shape, params, HW)
    assert (tiling.m0, tiling.n0) == (256, 128)
    return _layout(shape, params, tiling, HW, False).hit_a


def test_fast_panels_hit_in_the_share_of_their_working_set_that_fits():
    # A is the fast direction (fewer M blocks than N blocks); one wave of 24 cores reads 24
    # different A panels, so a panel not resident is not shared (hit 0) and a resident one misses only on its
    # first read (1 - 1/slow_count).
    mib = 2**20
    # 8192^3: 32 A panels of 256 x 8192 fp16 (4 MiB) + one B panel (8192 x 128, 2 MiB) = 130 MiB < 192 MiB.
    assert _hit_a(8192) == pytest.approx(1 - 1 / 64)
    # 16384^3: 64 A panels of 8 MiB + one B panel of 4 MiB = 516 MiB; 192 MiB of it stays.
    assert _hit_a(16384) == pytest.approx(192 / 516 * (1 - 1 / 128))
    # just past L2 the hit rate is close to the resident one, not a step down to 0
    assert 0.9 * (1 - 1 / 80) < _hit_a(10240) < 1 - 1 / 80
    assert HW.l2_cache_bytes == 192 * mib


def test_k_zero_has_no_working_set_and_runs():
    # K = 0 (C = beta * C) moves no panel: the resident share must not divide by a zero working set.
    result, _ = simulate_hgemm(GemmShape(256, 256, 0), HgemmParams(), HW)
    assert result.time_s > 0
