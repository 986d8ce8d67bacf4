"""GemmExample (CATLASS's basic matmul) as the HGEMM paper's baseline ran it: the swizzle its example chose
by M and N, no ShuffleK, and the cost of cores reading the same 512-byte ranges in lockstep."""

import math

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels.hgemm import (
    GemmShape,
    HgemmParams,
    _layout,
    _serialised,
    example_block,
    example_swizzle_direction,
    resolve_tiling,
    simulate_hgemm,
)

HW = load_profile("atlas-300t-a2")


def catlass_block(r: int, bm: int, bn: int, offset: int, direction: int) -> tuple[int, int]:
    """GemmIdentityBlockSwizzle<offset, direction>::GetBlockCoord, line by line (block_swizzle.hpp)."""
    if direction == 0:
        loop = math.ceil(bm / offset)
        tile, inside = divmod(r, offset * bn)
        rows = bm - offset * tile if tile == loop - 1 else offset
        m, n = tile * offset + inside % rows, inside // rows
        return m, (bn - n - 1 if tile % 2 == 1 else n)
    loop = math.ceil(bn / offset)
    tile, inside = divmod(r, offset * bm)
    cols = bn - offset * tile if tile == loop - 1 else offset
    m, n = inside // cols, tile * offset + inside % cols
    return (bm - m - 1 if tile % 2 == 1 else m), n


@pytest.mark.parametrize(("m", "n", "direction"), [(513, 512, 0), (8192, 8, 0), (512, 512, 1), (8, 28672, 1),
                                                   (512, 28672, 1)])
def test_swizzle_direction_is_0_when_m_exceeds_n_else_1(m, n, direction):
    assert example_swizzle_direction(m, n) == direction


@pytest.mark.parametrize("direction", [0, 1])
@pytest.mark.parametrize(("bm", "bn"), [(1, 1), (4, 112), (7, 5), (3, 3), (10, 2)])
def test_example_block_is_catlass_swizzle(direction, bm, bn):
    order = [example_block(r, bm, bn, direction) for r in range(bm * bn)]
    assert order == [catlass_block(r, bm, bn, 3, direction) for r in range(bm * bn)]
    assert sorted(order) == [(i, j) for i in range(bm) for j in range(bn)]  # each block once


def test_example_block_order_by_hand():
    # <3, 1> on 4 x 7 blocks: N fastest in bands of 3 N blocks; the second band walks M backwards
    assert [example_block(r, 4, 7, 1) for r in range(15)] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2),
        (3, 3), (3, 4), (3, 5)]
    assert [example_block(r, 4, 7, 0) for r in range(5)] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1)]
    with pytest.raises(ValueError, match="direction"):
        example_block(0, 2, 2, 2)


def _sharers(order: list[tuple[int, int]], axis: int) -> float:
    """Mean count of the wave's tasks that read the same panel (axis 0: A panels, 1: B panels)."""
    keys = [b[axis] for b in order]
    return sum(keys.count(x) for x in keys) / len(keys)


def test_gemm_example_has_no_shufflek_and_swizzles_by_m_and_n():
    # OPT FFN M=512: 4 x 112 blocks of 128 x 256; M <= N, so <3, 1>. The first wave of 20 tasks: M blocks
    # 0..3 three times each (band 0), then 3, 3, 3, 2, 2, 2, 1, 1 (band 1, M reversed): A sharers
    # (9 + 25 + 36 + 36) / 20 = 5.3; N blocks 0, 1, 2 four times, 3 and 4 three times, 5 twice: B sharers
    # (3 * 16 + 9 + 9 + 4) / 20 = 3.5. ShuffleK (on by default) is not applied: the sharers read in lockstep.
    shape = GemmShape(512, 28672, 7168)
    params = HgemmParams(variant="gemm-example", alpha=1.0, beta=0.0)
    assert params.shuffle_k
    lay = _layout(shape, params, resolve_tiling(shape, params, HW), HW, warm_l2=True)
    wave = [example_block(r, 4, 112, 1) for r in range(HW.ai_cores)]
    assert (_sharers(wave, 0), _sharers(wave, 1)) == pytest.approx((5.3, 3.5))
    assert (lay.serial_a, lay.serial_b) == pytest.approx((5.3, 3.5))
    # M > N: <3, 0>, 224 x 2 blocks, bands of 3 M blocks (6 tasks), N reversed in odd bands: the wave holds
    # 3 bands and (9, 1), (10, 1): A sharers (9 x 4 + 2) / 20 = 1.9; B: N 0 nine times, N 1 eleven: 10.1
    t_shape = GemmShape(28672, 512, 7168)
    t_lay = _layout(t_shape, params, resolve_tiling(t_shape, params, HW), HW, warm_l2=True)
    t_wave = [example_block(r, 224, 2, 0) for r in range(HW.ai_cores)]  # 28672 / 128, 512 / 256
    assert (t_lay.serial_a, t_lay.serial_b) == pytest.approx((_sharers(t_wave, 0), _sharers(t_wave, 1)))
    assert (t_lay.serial_a, t_lay.serial_b) == pytest.approx((1.9, 10.1))
    # the proposed kernel with ShuffleK: 112 K blocks per task outnumber the sharers, no collision
    proposed = _layout(shape, HgemmParams(), resolve_tiling(shape, HgemmParams(), HW), HW, warm_l2=True)
    assert (proposed.serial_a, proposed.serial_b) == (1.0, 1.0)


def test_shuffle_k_option_does_not_change_gemm_example():
    shape = GemmShape(1000, 3000, 2048)
    on, _ = simulate_hgemm(shape, HgemmParams(variant="gemm-example", shuffle_k=True), HW)
    off, _ = simulate_hgemm(shape, HgemmParams(variant="gemm-example", shuffle_k=False), HW)
    assert on.time_s == off.time_s
    assert on.counters["bytes_serialised"] == off.counters["bytes_serialised"] > 0


@pytest.mark.parametrize(("sharers", "slowdown"), [(0.0, 1.0), (1.0, 1.0), (2.0, 1.01), (16.0, 1.15),
                                                   (20.0, 1.19), (5.3, 1.043)])
def test_serialisation_cost_closed_form(sharers, slowdown):
    # 1 + 0.15 / 15 per extra sharer: 16 cores in lockstep cost 15%, the midpoint of CANN's 10%-20%
    assert _serialised(sharers) == pytest.approx(slowdown)


def test_serialised_bytes_count_the_queueing():
    # bytes_serialised = sum over panel reads of bytes x (slow-down - 1): 8 x 28672 x 7168, M = 8 is one M
    # block, so all 20 cores of a wave share its A panels (8 rows x 7168 x 2 bytes per task); B panels are
    # not shared. 112 tasks read A (8 x 7168 x 2 = 114,688 bytes each): 112 x 114,688 x 0.19.
    shape = GemmShape(8, 28672, 7168)
    sim, _ = simulate_hgemm(shape, HgemmParams(variant="gemm-example", alpha=1.0, beta=0.0), HW,
                            warm_l2=True, force_exact=True)
    assert sim.counters["bytes_serialised"] == pytest.approx(112 * 8 * 7168 * 2 * 0.19, rel=1e-9)


def test_l2_reuse_follows_the_swizzle_direction():
    # <3, 1> (M <= N): a band's B panels are read by all bm M blocks (fetched once: 1 - 1/bm); A (7.3 MB) stays
    # in L2 beside the band's 3 B panels, so each A panel is fetched once for its bn reads. <3, 0> (M > N): the
    # same with A and B exchanged. Cold L2: A and B (418 MB) do not fit the 192 MB L2 together.
    params = HgemmParams(variant="gemm-example", alpha=1.0, beta=0.0)
    for shape, hits in ((GemmShape(512, 28672, 7168), (1 - 1 / 112, 1 - 1 / 4)),
                        (GemmShape(28672, 512, 7168), (1 - 1 / 2, 1 - 1 / 224))):
        lay = _layout(shape, params, resolve_tiling(shape, params, HW), HW, warm_l2=False)
        assert (lay.hit_a, lay.hit_b) == pytest.approx(hits)
