"""Top-p sampling: Llama 3's sample_top_p rule against an independent transcription, statistics of the draws,
invalid rows, and the simulated operator (17 scans per fp16 row, claim S-16)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels import ParamError
from ascendbench.kernels.sampling import DistributionError
from ascendbench.kernels.topp import simulate_top_p, top_p_draw, top_p_sample
from tests.kernels.chi_square import ALPHA, goodness_of_fit

HW = load_profile("ascend-910b4")


def reference_row(row: np.ndarray, p: float, u: float) -> tuple[int, int]:
    """Straightforward transcription of Llama 3's sample_top_p for one row, in float32 scalars:
    sort descending (Python's sort is stable), running sum, mask sum - prob > p, zero the masked, divide by
    their sum, draw by the float64 running sum of the renormalised probabilities; p = 1 masks nothing (our
    documented rule where a float16 row sums past 1). Returns (token, kept)."""
    order = sorted(range(len(row)), key=lambda i: -float(row[i]))
    s = [np.float32(row[i]) for i in order]
    c, acc = [], np.float32(0)
    for v in s:
        acc = np.float32(acc + v)
        c.append(acc)
    p32 = np.float32(p)
    masked = [np.float32(0) if np.float32(ci - si) > p32 and p32 < 1 else si for ci, si in zip(c, s)]
    kept = sum(1 for ci, si in zip(c, s) if not (np.float32(ci - si) > p32 and p32 < 1))
    total = np.float32(0)
    for v in masked:
        total = np.float32(total + v)
    cdf, running = [], 0.0
    for v in masked:
        running += float(np.float32(v / total))
        cdf.append(running)
    target = u * cdf[-1]
    j = next(i for i, x in enumerate(cdf) if x > target)
    return order[j], kept


row_values = st.sampled_from([0.0, 0.0, 0.5, 0.25, 0.125, 0.1, 0.01, 1e-4, 6e-8, 0.3333, 1.0])
rows = st.lists(row_values, min_size=1, max_size=40).filter(lambda r: max(r) > 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(rows, min_size=1, max_size=4), st.one_of(st.sampled_from([0.0, 0.1, 0.5, 0.75, 0.9, 1.0]),
                                                          st.floats(0, 1)), st.integers(0, 2**32 - 1))
def test_rule_matches_the_transcription_for_both_variants(batch_rows, p, seed):
    _check_both_variants(batch_rows, p, seed, np.float16)


def _check_both_variants(batch_rows, p, seed, dtype):
    """Both variants draw what the transcription of the rule draws, from rows of `dtype` (zero-padded)."""
    vocab = max(len(r) for r in batch_rows)
    probs = np.zeros((len(batch_rows), vocab), dtype=dtype)
    for i, r in enumerate(batch_rows):
        probs[i, : len(r)] = r
    u = np.random.default_rng(seed).random(len(batch_rows))
    expected = [reference_row(probs[i], p, u[i]) for i in range(len(batch_rows))]
    for variant in ("radix", "baseline"):
        got = top_p_draw(probs, p, u, variant=variant)
        assert [(int(t), int(k)) for t, k in zip(got.tokens, got.kept)] == expected, variant
        assert (probs[np.arange(len(batch_rows)), got.tokens] > 0).all()


def test_one_row_and_the_ends_of_p():
    probs = np.array([0.1, 0.3, 0.3, 0.2, 0.0, 0.1], dtype=np.float16)
    # p = 0 keeps the first of the tied largest tokens only (stable order): greedy decoding
    for u in (0.0, 0.5, np.nextafter(1.0, 0)):
        res = top_p_draw(probs, 0.0, np.array([u]))
        assert res.tokens.shape == () and int(res.tokens) == 1 and int(res.kept) == 1
    # p = 1 keeps every token whose preceding sum is at most 1, including the zero; the zero is never drawn
    res = top_p_draw(probs, 1.0, np.array([np.nextafter(1.0, 0)]))
    assert int(res.kept) == 6 and int(res.tokens) == 5  # sorted order 1, 2, 3, 0, 5, 4: last positive is 5


def test_seeded_generator():
    probs = np.random.default_rng(0).random((8, 100)).astype(np.float16)
    a = top_p_sample(probs, 0.9, seed=4)
    b = top_p_sample(probs, 0.9, rng=np.random.default_rng(4), variant="baseline")
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert a.tokens.shape == (8,) and a.tokens.dtype == np.int64
    assert top_p_sample(np.zeros((0, 5), np.float16), 0.5).tokens.shape == (0,)


def test_chi_square_against_the_renormalised_nucleus():
    rng = np.random.default_rng(21)
    logits = rng.normal(size=60)
    row = (np.exp(logits) / np.exp(logits).sum()).astype(np.float16)
    p = 0.8
    draws = top_p_sample(np.tile(row, (60_000, 1)), p, seed=21, variant="baseline")
    order = np.argsort(-row, kind="stable")
    s = row[order].astype(np.float32)
    kept = int(draws.kept[0])
    assert kept == reference_row(row, p, 0.0)[1] and 1 < kept < 60
    probs = np.zeros(60)
    probs[order[:kept]] = s[:kept].astype(np.float64) / s[:kept].astype(np.float64).sum()
    counts = np.bincount(draws.tokens, minlength=60)
    stat, dof, pvalue = goodness_of_fit(counts, probs)
    assert pvalue > ALPHA, (stat, dof, pvalue)
    assert counts[order[kept:]].sum() == 0  # nothing outside the nucleus


@pytest.mark.parametrize("probs, message", [
    (np.array([[0.5, 0.5], [0.5, -0.1]]), "probs: row 1: token 1 is negative (-0.1)"),
    (np.array([[0.5, np.nan], [0.5, 0.5]]), "probs: row 0: token 1 is NaN"),
    (np.array([[0.5, 0.5], [np.inf, 0.5], [0, 0]]), "probs: row 1: token 0 is infinite"),
    (np.array([[0.5, 0.5], [0.5, 0.5], [0, 0]]), "probs: row 2 is all zero"),
    (np.array([0.0, 0.0]), "probs is all zero"),
    (np.array([0.2, -0.0, -1.0]), "probs: token 2 is negative (-1.0)"),
    (np.zeros((1, 0)), "probs: row 0 has no tokens"),
])
def test_rows_that_are_not_probabilities_are_named(probs, message):
    with pytest.raises(DistributionError) as info:
        top_p_sample(probs.astype(np.float16), 0.5)
    assert message in str(info.value)


def test_wrong_arguments():
    good = np.ones(4, np.float16)
    for p in (-0.1, 1.5, float("nan"), "x"):
        with pytest.raises(ParamError, match="--p: must be"):
            top_p_sample(good, p)
    with pytest.raises(ParamError, match=r"--probs: dtype must be float16 \(the paper's fp16 kernel\) or float32"):
        top_p_sample(good.astype(np.float64), 0.5)
    with pytest.raises(ParamError, match="--probs: must have shape"):
        top_p_sample(np.ones((2, 2, 2), np.float16), 0.5)
    with pytest.raises(ParamError, match="--variant: must be one of radix, baseline"):
        top_p_sample(good, 0.5, variant="bitonic")


# ----- timing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("vocab", [1, 1000, 32000, 128256, 16384 * 20 + 5])
@pytest.mark.parametrize("s", [32, 128])
def test_seventeen_scans_per_fp16_row(vocab, s):
    """S-16: 16 radix passes (one int8 MCScan each) + the cumsum MCScan; the matmul counter confirms it:
    16 int8 scans of ceil(vocab/128^2) tiles and one fp16 scan of ceil(vocab/s^2) tiles."""
    fast = simulate_top_p(vocab, HW, variant="radix", s=s)
    assert fast.scans_per_row == 17 and fast.row.counters["scans"] == 17
    assert fast.row.counters["matmuls"] == 16 * math.ceil(vocab / 128**2) + math.ceil(vocab / s**2)
    base = simulate_top_p(vocab, HW, variant="baseline", s=s)
    assert base.scans_per_row == 17 and base.row.counters.get("matmuls", 0) == 0
    assert set(fast.row.phases) == {"sort", "cumsum", "mask", "renormalise", "multinomial", "gather"}


def test_radix_variant_scales_better_with_vocabulary():
    sizes = [2**15, 2**18, 2**21, 2**24]
    fast = [simulate_top_p(n, HW, variant="radix").sim.time_s for n in sizes]
    base = [simulate_top_p(n, HW, variant="baseline").sim.time_s for n in sizes]
    assert all(f < b for f, b in zip(fast, base))
    assert base[-1] / base[0] > fast[-1] / fast[0]
    assert all(a < b for a, b in itertools.pairwise(fast)) and all(a < b for a, b in itertools.pairwise(base))


def test_batch_rows_spread_over_the_cores():
    one = simulate_top_p(128256, HW)
    assert one.cores_per_row == 8 and one.rows_per_wave == 1 and one.waves == 1
    batch = simulate_top_p(128256, HW, batch=64)
    assert batch.rows_per_wave == 2 and batch.waves == 32  # 20 cores // 8 per row
    assert batch.sim.counters["scans"] == 64 * 17
    assert batch.sim.time_cycles >= 32 * one.row.time_cycles * (1 - 1e-12)
    assert batch.sim.counters["bytes_gm_read"] == pytest.approx(64 * one.row.counters["bytes_gm_read"])
    # a row that fills the chip runs alone: waves = rows
    big = simulate_top_p(2**22, HW, batch=3)
    assert big.rows_per_wave == 1 and big.sim.time_cycles == pytest.approx(3 * big.row.time_cycles)
    # small rows: many at once, but never faster than their shared HBM traffic allows
    small = simulate_top_p(4096, HW, batch=40)
    assert small.rows_per_wave == 20 and small.waves == 2
    assert small.sim.time_cycles >= 40 * small.row.hbm_busy_cycles * (1 - 1e-12)
    assert simulate_top_p(100, HW, batch=0).sim.time_cycles == 0


def test_timing_argument_errors():
    with pytest.raises(ParamError, match="--vocab"):
        simulate_top_p(-1, HW)
    with pytest.raises(ParamError, match="--s: must be one of"):
        simulate_top_p(100, HW, s=48)
    with pytest.raises(ParamError, match="--variant"):
        simulate_top_p(100, HW, variant="x")


# ----- fp32 probabilities (issue 26 item 13) ---------------------------------------------------------------
def test_float32_rows_are_sorted_and_summed_as_they_are():
    probs = np.array([0.3, 0.1, 0.1, 0.5])
    for variant in ("radix", "baseline"):
        # fp32, the rule of the common samplers: c - s = 0, 0.5, 0.8 <= 0.8 keeps three tokens
        res = top_p_draw(probs.astype(np.float32), 0.8, np.array([0.999]), variant=variant)
        assert int(res.kept) == 3 and int(res.tokens) == 1  # sorted 3, 0, 1, 2: the last kept is token 1
        assert reference_row(probs.astype(np.float32), 0.8, 0.999) == (1, 3)
        # the paper's fp16 kernel: 0.3 rounds to 0.30005, so c - s = 0.80005 > 0.8 masks the third
        res = top_p_draw(probs.astype(np.float16), 0.8, np.array([0.999]), variant=variant)
        assert int(res.kept) == 2 and reference_row(probs.astype(np.float16), 0.8, 0.999) == (int(res.tokens), 2)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1, width=32), min_size=1, max_size=30).filter(lambda r: max(r) > 0),
                min_size=1, max_size=3), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_float32_rule_matches_the_transcription_for_both_variants(batch_rows, p, seed):
    _check_both_variants(batch_rows, p, seed, np.float32)


@pytest.mark.parametrize("vocab", [1, 1000, 128256])
def test_fp32_timing_sorts_32_bit_keys_and_scans_on_the_vector_unit(vocab):
    from ascendbench.kernels.scan import simulate_fp32_cumsum

    for variant, sort_matmuls in (("radix", 32 * math.ceil(vocab / 128**2)), ("baseline", 0)):
        t = simulate_top_p(vocab, HW, variant=variant, dtype="fp32")
        assert t.scans_per_row == 33 and t.cumsum == "vector-only CumSum fp32"
        assert t.row.counters.get("matmuls", 0) == sort_matmuls  # the cumsum issues none
        clean = simulate_fp32_cumsum(vocab, HW, l2="warm")  # the sorted row is resident (it fits L2)
        assert t.row.phases["cumsum"] == pytest.approx(clean.time_cycles, rel=1e-12)
        fp16 = simulate_top_p(vocab, HW, variant=variant)
        assert fp16.scans_per_row == 17 and t.row.phases["sort"] > fp16.row.phases["sort"]
        assert t.row.counters["bytes_gm_read"] > fp16.row.counters["bytes_gm_read"]
    with pytest.raises(ParamError, match="--dtype: must be one of fp16, fp32, got 'bf16'"):
        simulate_top_p(100, HW, dtype="bf16")


def test_fp32_cumsum_reads_four_bytes_an_element_and_casts_nothing():
    from ascendbench.kernels.scan import SCAN_KERNELS, ScanParams, simulate_fp32_cumsum

    n = 3 * 128 * 128
    fp32 = simulate_fp32_cumsum(n, HW, l2="clean")
    fp16 = SCAN_KERNELS["vec-cumsum"].simulate(n, ScanParams(), HW, l2="clean")
    assert fp32.counters["bytes_gm_read"] == 2 * fp16.counters["bytes_gm_read"] == 4 * n
    assert fp32.counters["bytes_gm_write"] == fp16.counters["bytes_gm_write"] == 4 * n
    # no cast to fp32 and back: fewer vector instructions than the fp16 scan of the same tiles
    assert fp32.counters["vector_instructions"] < fp16.counters["vector_instructions"]
    with pytest.raises(ParamError, match="--n: must be a non-negative integer"):
        simulate_fp32_cumsum(-1, HW)
