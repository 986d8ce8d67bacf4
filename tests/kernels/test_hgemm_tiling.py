"""The HGEMM paper's tiling selector (§4.2.3): claims G-1, G-2, G-3, hand-worked cases and invariants."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.kernels.hgemm_tiling import (
    FALLBACK,
    TABLE_1,
    TABLE_2,
    TilingDecision,
    acc_loop,
    aicore_num,
    select_tiling,
)


def candidates(step_list):
    """(k0, index_mn, m0, n0, aicore_num) of the steps that tried an M0 x N0 (not the K0 < 2K rejections)."""
    return [(s.k0, s.index_mn, s.m0, s.n0, s.aicore_num) for s in step_list if s.index_mn is not None]


def test_tables_are_the_papers():
    assert TABLE_1 == {0: (16, 16), 1: (32, 32), 2: (64, 64), 3: (128, 128), 4: (256, 128)}
    assert TABLE_2 == {0: (128, 4), 1: (256, 3), 2: (512, 2), 3: (1024, 1)}
    assert FALLBACK == (256, 128, 128)


def test_g1_worked_example_of_the_paper():
    d = select_tiling(2048, 128, 2048, batch=1, threshold=20)
    assert (d.m0, d.n0, d.k0) == (128, 128, 256) and d.tile == "128x128x256"
    assert d.source == "selector" and d.aicore_num == 16 and d.acc_loop == 8
    # §4.2.3: K0 = 1024 tries 16x16 (1024 cores) and 32x32 (256), then K0 = 512 (16x16, 32x32, 64x64), then
    # K0 = 256 up to 128x128 where aicore_num = ceil(2048/128) * ceil(128/128) = 16 < 20.
    assert candidates(d.trace) == [
        (1024, 0, 16, 16, 1024), (1024, 1, 32, 32, 256),
        (512, 0, 16, 16, 1024), (512, 1, 32, 32, 256), (512, 2, 64, 64, 64),
        (256, 0, 16, 16, 1024), (256, 1, 32, 32, 256), (256, 2, 64, 64, 64), (256, 3, 128, 128, 16),
    ]
    assert [s.accepted for s in d.trace] == [False] * 8 + [True]
    assert d.trace[0].reason == "aicore_num 1024 >= threshold 20"
    assert d.trace[-1].reason == "accepted: aicore_num 16 < threshold 20"
    assert [s.acc_loop for s in d.trace] == [2, 2, 4, 4, 4, 8, 8, 8, 8]
    assert [s.index_k for s in d.trace] == [3, 3, 2, 2, 2, 1, 1, 1, 1]


def test_g2_equations_4_and_5():
    assert aicore_num(256, 4096, 128, 512, 8) == 128
    assert acc_loop(512, 64) == 8
    assert aicore_num(257, 4096, 128, 512) == 3 * 8  # non-aligned M rounds up
    assert acc_loop(513, 64) == 9


def test_equations_are_exact_at_any_size():
    big = 2**80 + 1
    assert aicore_num(big, big, 16, 16, 3) == ((big + 15) // 16) ** 2 * 3
    assert acc_loop(big, 1024) == (big + 1023) // 1024
    d = select_tiling(big, big, big)
    assert d.source == "fallback" and d.aicore_num == ((big + 255) // 256) * ((big + 127) // 128)


def test_g3_no_k0_admits_a_tiling_gives_the_fallback():
    d = select_tiling(10000, 10000, 10000, batch=1, threshold=20)
    assert (d.m0, d.n0, d.k0) == FALLBACK and d.source == "fallback"
    # ceil(10000/256) * ceil(10000/128) = 40 * 79; ceil(10000/128) = 79
    assert d.aicore_num == 3160 and d.acc_loop == 79
    # every K0 is tried (2 + 3 + 4 + 5 candidates) and none accepted; the last is 256x128 at K0 = 128
    assert len(d.trace) == 14 and not any(s.accepted for s in d.trace)
    assert (d.trace[-1].k0, d.trace[-1].m0, d.trace[-1].n0) == (128, 256, 128)


def test_k0_must_be_smaller_than_2k():
    # K = 100: 2K = 200, only K0 = 128 qualifies; 1024, 512, 256 are rejected in the trace.
    # M = N = 512: 16x16 -> 32*32 = 1024, 32x32 -> 256, 64x64 -> 64, 128x128 -> 4*4 = 16 < 20.
    d = select_tiling(512, 512, 100)
    assert d.tile == "128x128x128" and d.aicore_num == 16 and d.acc_loop == 1
    assert [s.reason for s in d.trace[:3]] == ["K0 1024 not < 2K (2K = 200)", "K0 512 not < 2K (2K = 200)",
                                               "K0 256 not < 2K (2K = 200)"]
    assert all(s.index_mn is None and s.aicore_num is None for s in d.trace[:3])
    assert {s.k0 for s in d.trace[3:]} == {128}
    # K = 64: 2K = 128, no K0 qualifies (128 < 128 is false): queue A is empty, fallback.
    d = select_tiling(16, 16, 64)
    assert d.source == "fallback" and d.tile == "256x128x128" and d.aicore_num == 1 and d.acc_loop == 1
    assert [s.k0 for s in d.trace] == [1024, 512, 256, 128] and candidates(d.trace) == []
    # K = 65: 2K = 130, K0 = 128 qualifies and 16x16 needs one core.
    assert select_tiling(16, 16, 65).tile == "16x16x128"
    # K = 1: nothing qualifies.
    assert select_tiling(1, 1, 1).source == "fallback"


def test_batch_multiplies_aicore_num():
    # batch 2 of 2048x128x2048: 128x128 at K0 = 256 now needs 16 * 2 = 32 >= 20; K0 = 128 goes on to
    # 256x128: ceil(2048/256) * 1 * 2 = 16 < 20, accepted by the selector (not the fallback).
    d = select_tiling(2048, 128, 2048, batch=2)
    assert d.tile == "256x128x128" and d.source == "selector" and d.aicore_num == 16 and d.acc_loop == 16
    # batch 3: 256x128 needs 8 * 3 = 24 >= 20, so nothing is accepted.
    d = select_tiling(2048, 128, 2048, batch=3)
    assert d.tile == "256x128x128" and d.source == "fallback" and d.aicore_num == 24


def test_threshold_other_than_20():
    # threshold 300: K0 = 1024, 32x32 needs 64 * 4 = 256 < 300.
    assert select_tiling(2048, 128, 2048, threshold=300).tile == "32x32x1024"
    # threshold 256: 256 < 256 is false (the comparison is strict), K0 = 512 reaches 64x64 with 32 * 2 = 64.
    d = select_tiling(2048, 128, 2048, threshold=256)
    assert d.tile == "64x64x512" and d.aicore_num == 64
    assert d.trace[1].reason == "aicore_num 256 >= threshold 256"
    # threshold 1: no tiling needs fewer than one core.
    assert select_tiling(16, 16, 4096, threshold=1).source == "fallback"


def test_hand_worked_cases():
    # 256x256x256: 2K = 512, so K0 1024 and 512 are rejected. K0 = 256: 16x16 -> 16*16 = 256,
    # 32x32 -> 8*8 = 64, 64x64 -> 4*4 = 16 < 20: 64x64x256, acc_loop = 1.
    d = select_tiling(256, 256, 256)
    assert (d.tile, d.aicore_num, d.acc_loop, len(d.trace)) == ("64x64x256", 16, 1, 5)
    # 128x128x4096: every K0 qualifies. K0 = 1024: 16x16 -> 8*8 = 64, 32x32 -> 4*4 = 16 < 20: 32x32x1024,
    # acc_loop = 4096 / 1024 = 4.
    d = select_tiling(128, 128, 4096)
    assert (d.tile, d.aicore_num, d.acc_loop, len(d.trace)) == ("32x32x1024", 16, 4, 2)
    # 2560x128x128: only K0 = 128 (2K = 256). 16x16 -> 160*8 = 1280, 32x32 -> 80*4 = 320, 64x64 -> 40*2 = 80,
    # 128x128 -> 20*1 = 20 (not < 20), 256x128 -> 10*1 = 10 < 20: 256x128x128 from the selector.
    d = select_tiling(2560, 128, 128)
    assert (d.tile, d.aicore_num, d.acc_loop, d.source) == ("256x128x128", 10, 1, "selector")
    assert [s.aicore_num for s in d.trace[3:]] == [1280, 320, 80, 20, 10]
    # 1000x300x700 (non-aligned): 2K = 1400, K0 = 1024 qualifies. 16x16 -> 63*19 = 1197, 32x32 -> 32*10 = 320;
    # K0 = 512: ..., 64x64 -> 16*5 = 80; K0 = 256: ..., 128x128 -> 8*3 = 24;
    # K0 = 128: ..., 256x128 -> 4*3 = 12, acc_loop = ceil(700/128) = 6.
    d = select_tiling(1000, 300, 700)
    assert (d.tile, d.aicore_num, d.acc_loop, d.source) == ("256x128x128", 12, 6, "selector")
    assert [s.aicore_num for s in d.trace][:2] == [1197, 320]


def test_to_dict_is_json():
    d = select_tiling(2048, 128, 2048)
    doc = json.loads(json.dumps(d.to_dict()))
    assert doc["m0"] == 128 and doc["n0"] == 128 and doc["k0"] == 256 and doc["source"] == "selector"
    assert doc["aicore_num"] == 16 and doc["acc_loop"] == 8 and doc["tile"] == "128x128x256"
    assert len(doc["trace"]) == 9 and doc["trace"][-1]["accepted"] is True
    assert set(doc["trace"][0]) == {"k0", "index_k", "index_mn", "m0", "n0", "aicore_num", "acc_loop",
                                    "accepted", "reason"}


def test_numpy_integers_are_accepted():
    assert select_tiling(np.int64(2048), np.int32(128), np.int64(2048)).tile == "128x128x256"


@pytest.mark.parametrize("kwargs, name, shown", [
    ({"m": 0}, "m", "0"), ({"n": -1}, "n", "-1"), ({"k": 0}, "k", "0"),
    ({"batch": 0}, "batch", "0"), ({"threshold": 0}, "threshold", "0"),
])
def test_bad_arguments_name_the_argument(kwargs, name, shown):
    args = {"m": 16, "n": 16, "k": 16, "batch": 1, "threshold": 20, **kwargs}
    with pytest.raises(ValueError, match=rf"^{name}: must be at least 1, got {shown}$"):
        select_tiling(**args)


@pytest.mark.parametrize("value", [1.5, "16", True, None])
def test_non_integers_are_rejected(value):
    with pytest.raises(ValueError, match=r"^m: must be an integer"):
        select_tiling(value, 16, 16)


# ---- invariants, against a brute-force enumeration written independently of the module -------------------

# (K0, index_k, index_mn_max), larger K0 first
_K0_ROWS = [(1024, 3, 1), (512, 2, 2), (256, 1, 3), (128, 0, 4)]
_MN_ROWS = [(0, 16, 16), (1, 32, 32), (2, 64, 64), (3, 128, 128), (4, 256, 128)]  # smaller first


def brute_force(m, n, k, batch, threshold):
    """Every candidate in queue order and the first with (ceil(M/M0) * ceil(N/N0) * batch) < threshold."""
    order = [(k0, index_mn, m0, n0, -(-m // m0) * -(-n // n0) * batch)
             for k0, _, index_mn_max in _K0_ROWS if k0 < 2 * k
             for index_mn, m0, n0 in _MN_ROWS if index_mn <= index_mn_max]
    first = next((c for c in order if c[4] < threshold), None)
    return order, first


dims = st.one_of(st.integers(1, 5000), st.integers(1, 10**7),
                 st.sampled_from([1, 64, 65, 127, 128, 129, 256, 512, 2**70]))


@settings(max_examples=400, deadline=None)
@given(m=dims, n=dims, k=dims, batch=st.integers(1, 64), threshold=st.integers(1, 400))
def test_decision_is_the_first_acceptable_candidate_in_queue_order(m, n, k, batch, threshold):
    d = select_tiling(m, n, k, batch=batch, threshold=threshold)
    assert isinstance(d, TilingDecision)
    order, first = brute_force(m, n, k, batch, threshold)
    tried = candidates(d.trace)
    if first is None:
        assert d.source == "fallback" and (d.m0, d.n0, d.k0) == FALLBACK
        assert tried == order and not any(s.accepted for s in d.trace)
        assert d.aicore_num == -(-m // 256) * -(-n // 128) * batch
    else:
        assert d.source == "selector" and (d.k0, d.m0, d.n0) == (first[0], first[2], first[3])
        assert d.aicore_num == first[4] < threshold
        assert tried == order[: order.index(first) + 1]
        assert [s.accepted for s in d.trace].count(True) == 1 and d.trace[-1].accepted
        index_mn_max = {k0: mx for k0, _, mx in _K0_ROWS}[d.k0]
        assert d.trace[-1].index_mn <= index_mn_max and TABLE_1[d.trace[-1].index_mn] == (d.m0, d.n0)
        assert d.k0 < 2 * k
    assert d.acc_loop == -(-k // d.k0)
    # every K0 of Table 2 appears in the trace: as candidates when K0 < 2K, as one rejection step otherwise
    # (until the selector stops)
    for s in d.trace:
        if s.index_mn is None:
            assert not s.k0 < 2 * k and s.reason.startswith(f"K0 {s.k0} not < 2K")
        else:
            assert s.k0 < 2 * k and s.index_mn <= TABLE_2[s.index_k][1] and TABLE_2[s.index_k][0] == s.k0
            assert s.accepted == (s.aicore_num < threshold)


# fits checks (issue 26 item 10): on a profile with smaller buffers than the paper's chip, a tile that does not
# fit is passed over like one over the threshold.
def too_big_for(limit_area):
    """A fits check that refuses tiles of M0 x N0 above limit_area (as a UB of that size would)."""
    return lambda m0, n0, k0: None if m0 * n0 <= limit_area else f"UB needs {3 * m0 * n0} B"


def test_a_tile_that_does_not_fit_passes_to_the_next_candidate():
    d = select_tiling(2048, 128, 2048, threshold=20, fits=too_big_for(128 * 128))
    assert d.tile == "128x128x256" and d.source == "selector"  # G-1 fits: unchanged, no misfit recorded
    assert all(s.misfit is None for s in d.trace)
    d = select_tiling(2048, 2048, 2048, threshold=40, fits=too_big_for(128 * 128))
    # 256 cores for 128x128 at every K0: the fallback 256x128 would take 128, but does not fit
    assert d.source == "fallback" and d.fallback_misfit == f"UB needs {3 * 256 * 128} B"
    # the fitting candidate with the fewest blocks, the first (largest K0) of equal ones: 128x128x256
    assert (d.m0, d.n0, d.k0, d.aicore_num, d.acc_loop) == (128, 128, 256, 256, 8)
    assert d.to_dict()["fallback_misfit"] == f"UB needs {3 * 256 * 128} B"


def test_an_accepted_candidate_that_does_not_fit_is_recorded_and_the_next_taken():
    d = select_tiling(2048, 128, 2048, threshold=20, fits=too_big_for(64 * 64))
    misfits = [(s.k0, s.m0, s.n0, s.reason) for s in d.trace if s.misfit is not None]
    assert misfits == [(256, 128, 128, f"does not fit: UB needs {3 * 128 * 128} B"),
                       (128, 128, 128, f"does not fit: UB needs {3 * 128 * 128} B"),
                       (128, 256, 128, f"does not fit: UB needs {3 * 256 * 128} B")]
    assert d.tile == "64x64x512" and d.source == "fallback" and d.aicore_num == 64


def test_no_tile_that_fits_is_named():
    from ascendbench.kernels.hgemm_tiling import NoTileFits

    with pytest.raises(NoTileFits) as err:
        select_tiling(2048, 128, 2048, fits=lambda m0, n0, k0: f"L1 needs {m0 * k0} B")
    assert str(err.value) == ("fits: none of the 15 tile(s) the HGEMM paper's selector tries fits (the smallest, "
                              "16x16x128: L1 needs 2048 B)")
    with pytest.raises(NoTileFits) as err:  # K <= 64: only the fallback is tried
        select_tiling(16, 16, 64, fits=lambda m0, n0, k0: "UB needs 98304 B")
    assert err.value.tried == 1 and err.value.smallest == "256x128x128"
