"""The on-the-fly scan check settles most stretches row by row, from bounds of the running sum of |x|
(ScanVerifier._rows_check); it must give the verdict, max_abs and max_rel of the element-by-element check with
the running sum taken for every element (ScanVerifier._exact_check), exactly, also for an output at the edge
of the tolerance."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendbench.hardware import load_profile
from ascendbench.kernels import ScanParams
from ascendbench.kernels import scan_numerics as sn

HW = load_profile("ascend-910b4")
STRETCH = 1 << 14  # stretches of the check (2**20 in a run): many stretches on small inputs


@pytest.fixture(autouse=True)
def small_stretches(monkeypatch):
    monkeypatch.setattr(sn, "_BATCH_ELEMS", STRETCH)


def _check(kernel: str, x: np.ndarray, y: np.ndarray, params: ScanParams, rows: bool):
    """(verdict, stretches checked element by element) of a ScanVerifier fed x and y."""
    check = sn.ScanVerifier(kernel, x.shape[0], params, HW)
    exact = [0]
    settle, element_wise = check._rows_check, check._exact_check

    def counted(*args):
        exact[0] += 1
        return element_wise(*args)

    check._rows_check = settle if rows else (lambda *args: False)
    check._exact_check = counted
    check.feed(x, y)
    return check.result(), exact[0]


def _problem(kernel: str, s: int, exclusive: bool, signed: bool, n: int, seed: int, as_fp32: bool):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(n) if signed else rng.random(n) * 4
    x = values.astype(np.float16)
    params = ScanParams(s=s, exclusive=exclusive)
    y = sn.compute(kernel, x, params, hw=HW)
    return (x.astype(np.float32) if as_fp32 else x), y, params


CASES = [("mcscan-ul1", 128, False, True), ("mcscan-ul1", 128, True, True), ("scanul1", 16, False, False),
         ("mcscan", 128, True, False), ("scanu", 16, False, True), ("vec-cumsum", 128, True, True),
         ("mcscan", 64, False, True)]


@pytest.mark.parametrize("kernel, s, exclusive, signed", CASES)
def test_rows_give_the_element_wise_verdict_and_errors(kernel, s, exclusive, signed):
    n = 6 * STRETCH + 3 * s + 5  # the last stretch ends inside a row
    x, y, params = _problem(kernel, s, exclusive, signed, n, seed=s, as_fp32=signed)
    by_rows, exact_stretches = _check(kernel, x, y, params, rows=True)
    by_elements, _ = _check(kernel, x, y, params, rows=False)
    assert by_rows.passed and by_elements.passed
    assert by_rows.max_abs_error == by_elements.max_abs_error
    assert by_rows.max_rel_error == by_elements.max_rel_error
    # only the first stretch (a_i starts at 0) and the last (a partial row) needed the element-wise check
    assert exact_stretches == 2


def _edge_agrees(case, seed: int, i: int) -> None:
    """Move output i away from the reference one fp32 step at a time to the last step that passes element by
    element; the row-wise check must agree there and one step further."""
    kernel, s, exclusive, signed = case
    x, y, params = _problem(kernel, s, exclusive, signed, 4 * STRETCH, seed, as_fp32=True)
    ref = sn.reference(x, exclusive, "fp16")[i]
    direction = 1.0 if y[i] >= ref else -1.0
    step = np.spacing(np.float32(max(abs(y[i]), abs(ref), 2.0**-14)))

    def moved(k: int) -> np.ndarray:
        out = y.copy()
        out[i] = np.float32(y[i] + direction * k * step)
        return out

    def passes(k: int) -> bool:
        return _check(kernel, x, moved(k), params, rows=False)[0].passed

    assert passes(0)
    hi = 1
    while passes(hi):  # far enough to fail, element by element (the tolerance may be many steps wide)
        hi *= 2
    lo = hi // 2 if hi > 1 else 0
    while hi - lo > 1:  # the last step that passes and the first that fails
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    for k, passed in ((lo, True), (hi, False)):
        by_rows, _ = _check(kernel, x, moved(k), params, rows=True)
        by_elements, _ = _check(kernel, x, moved(k), params, rows=False)
        assert by_rows.passed is by_elements.passed is passed, (i, k)
        assert by_rows.max_abs_error == by_elements.max_abs_error
        assert by_rows.max_rel_error == by_elements.max_rel_error


@settings(max_examples=12, deadline=None)
@given(case=st.sampled_from(CASES), seed=st.integers(0, 2**16), where=st.floats(0.2, 0.99))
def test_an_output_at_the_edge_of_the_tolerance_gets_the_same_verdict(case, seed, where):
    _edge_agrees(case, seed, int(where * 4 * STRETCH))


@pytest.mark.parametrize("row", [128, 130, 131, 256, 333, 334])  # 128, 256: a stretch starts
def test_the_first_output_of_a_row_of_an_exclusive_ul1_scan_has_the_row_befores_c1_term(row):
    _edge_agrees(("mcscan-ul1", 128, True, True), 5, row * 128)


def test_stretches_settled_by_rows_and_element_wise_ones_take_the_same_sums_of_x(monkeypatch):
    # a sum of |x| carried from stretch to stretch one way (row sums) and read another way (a running sum) drifts:
    # here by 0.006 in 8.6e9 after four stretches of +-65504 and tiny values (2.9 in 1.4e11 with a run's
    # 2**20-element stretches), enough to flip the verdict of an output at the edge of the tolerance in the last
    # (partial, element-wise) stretch
    stretch = 1 << 16
    monkeypatch.setattr(sn, "_BATCH_ELEMS", stretch)
    n = 4 * stretch + 1
    rng = np.random.default_rng(5)
    x = (np.float16(31 * 2.0**-24) * rng.choice([-1, 1], n)).astype(np.float16)
    for j in range(4):
        x[j * stretch: j * stretch + stretch // 2] = np.where(np.arange(stretch // 2) % 2, -65504, 65504)
    x[-1] = np.float16(0.4214)
    params = ScanParams()
    y = sn.compute("mcscan", x, params, hw=HW)
    by_rows, exact_stretches = _check("mcscan", x, y, params, rows=True)
    by_elements, _ = _check("mcscan", x, y, params, rows=False)
    assert exact_stretches == 2  # the first and the last: three settled by rows
    assert by_rows == by_elements
    a, b = sn.ScanVerifier("mcscan", n, params, HW), sn.ScanVerifier("mcscan", n, params, HW)
    b._rows_check = lambda *args: False
    a.feed(x, y)
    b.feed(x, y)
    assert a.abs_prefix == b.abs_prefix  # the same carried sum, bit for bit


@pytest.mark.parametrize("kernel", ["mcscan", "scanu", "vec-cumsum"])
def test_counting_numbers_past_the_probabilistic_bound_fail_with_the_worst_case_explanation(kernel):
    # 0, 1, ..., 2047 again and again: the carries' fp32 roundings add up with a bias, past the probabilistic
    # bound 4 sqrt(d) u32 (mcscan: max_rel 3.5e-5 at 3e6 elements). The check cannot tell that from a small real
    # error, so it fails, and says that the worst-case rounding bound would explain it
    n = 3 * 2**20
    x = (np.arange(n) % 2048).astype(np.float16)
    params = ScanParams()
    verdict = sn.verify(kernel, x, sn.compute(kernel, x, params, hw=HW), params, HW)
    assert not verdict.passed and "within the worst-case bound" in verdict.tolerance, verdict
    random = np.random.default_rng(0).random(n).astype(np.float16)
    verdict = sn.verify(kernel, random, sn.compute(kernel, random, params, hw=HW), params, HW)
    assert verdict.passed and "worst-case" not in verdict.tolerance  # random roundings: the usual bound holds


def test_an_output_between_the_two_bounds_fails_with_the_explanation_and_beyond_both_without():
    n = 3 * STRETCH
    x = np.random.default_rng(1).random(n).astype(np.float16)
    params = ScanParams()
    y = sn.compute("mcscan", x, params, hw=HW)
    i = 2 * STRETCH + 100
    a = float(np.abs(x[: i + 1].astype(np.float64)).sum())
    d = 128 + 1 + (2 * STRETCH + min(STRETCH, sn._SQRT_STRETCH)) / 128  # d at the end of i's 2**16 elements
    probabilistic, worst = 4 * np.sqrt(d) * 2.0**-24 * a, d * 2.0**-24 / (1 - d * 2.0**-24) * a
    ref = float(np.cumsum(x.astype(np.float64))[i])
    for offset, note in ((3 * probabilistic, True), (1.5 * worst, False)):
        moved = y.copy()
        moved[i] = np.float32(ref + offset)
        verdict = sn.verify("mcscan", x, moved, params, HW)
        assert not verdict.passed and ("within the worst-case bound" in verdict.tolerance) is note, (offset, verdict)


def test_a_systematic_error_of_a_few_percent_fails():
    # the worst-case bound is several percent at 2e7 elements with s = 16: too loose to pass on
    x = np.random.default_rng(0).random(3 * 2**20).astype(np.float16)
    params = ScanParams(s=16)
    y = sn.compute("scanu", x, params, hw=HW)
    y[2**21:] *= np.float32(0.995)
    assert not sn.verify("scanu", x, y, params, HW).passed


def test_batched_and_segmented_scans_of_counting_numbers_fail_with_the_worst_case_explanation():
    import ascendbench

    row = (np.arange(2**21) % 2048).astype(np.float16).reshape(1, -1)
    verdict = ascendbench.run("batched-scan", arrays={"x": row}, algorithm="scanu").result.verification
    assert not verdict.passed and "within the worst-case bound" in verdict.tolerance, verdict
    n = 3 * 2**20
    flags = np.zeros(n, np.uint8)
    flags[[0, n // 2]] = 1
    values = (np.arange(n) % 2048).astype(np.float16)
    verdict = ascendbench.run("segmented-scan", arrays={"values": values, "flags": flags},
                              algorithm="mcscan").result.verification
    assert not verdict.passed and "within the worst-case bound" in verdict.tolerance, verdict
