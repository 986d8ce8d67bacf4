"""Functional results of the scan kernels, computed in each algorithm's own structure, and their checks.

The tiles of x are viewed as s x s row-major matrices A (zero-padded) and multiplied by the constant matrices
of the scan paper: U_s (upper-triangular ones), L^-_s (strictly lower-triangular ones), 1_s (all ones).
fp16 inputs are exact in float32, so float32 matrix products with float32 accumulation reproduce the cube's
fp16 x fp16 -> fp32 arithmetic up to summation order; int8 tiles go through the same float32 products, which
are exact because every partial sum of an s x s int8 tile is below 2^24, and are then carried in int32 with
wrap-around as the cube's int32 accumulation does. Carries are chained in the accumulation type exactly in
the order the vector cores chain them (sequential adds), so the rounding follows the algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.kernels.base import Verification

__all__ = ["compute", "reference", "tile_scans", "tolerance_formula", "verify"]

_BATCH_ELEMS = 1 << 22  # elements per NumPy batch: bounds temporaries and drives the progress bar
_U32 = 2.0**-24  # unit roundoff of fp32
_U16 = 2.0**-11  # unit roundoff of fp16
_SQRT_STRETCH = 1 << 16  # elements that share one value of the sqrt(depth) factor in verify


def _constants(s: int) -> tuple[np.ndarray, np.ndarray]:
    ones = np.ones((s, s), dtype=np.float32)
    return np.triu(ones), np.tril(ones, -1)  # U_s, L^-_s


def _row_sums_fp32(tiles: np.ndarray) -> np.ndarray:
    """fp32 sums of the rows of (b, s, s) float32 tiles, as (b, s, 1): C1 = A @ 1_s (all columns equal).
    Shared by compute and verify so that both see the same fp32 values before the fp16 rounding."""
    b, s, _ = tiles.shape
    return tiles.reshape(-1, s).sum(axis=1, dtype=np.float32).reshape(b, s, 1)


def _times_u(tiles: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A @ U_s for every (s, s) tile at once, as one (tiles * s, s) x (s, s) GEMM: the same products as the
    per-tile matmuls, without one BLAS call (and thread hand-off) per tile."""
    b, s, _ = tiles.shape
    return (tiles.reshape(b * s, s) @ u).reshape(b, s, s)


def tile_scans(A: np.ndarray, kind: str, U: np.ndarray | None = None, Lm: np.ndarray | None = None) -> np.ndarray:
    """Local scans of (b, s, s) float32 tiles A in one algorithm's structure, as (b, s, s) float32:
    "rowscan" A @ U_s (ScanU, MCScan: every row scanned), "ul1" A @ U_s + L^-_s @ fp16(A @ 1_s) (ScanUL1,
    equation 4.1: the whole tile scanned, C1 rounded to fp16 on its way to L1), "cumsum" sequential adds
    along each row (the vector-only CumSum). U, Lm: the constants of _constants(s) (built when omitted)."""
    if kind == "cumsum":
        return np.cumsum(A, axis=2, dtype=np.float32)  # CumSum along the inner axis, sequential adds
    if U is None or Lm is None:
        U, Lm = _constants(A.shape[1])
    C = _times_u(A, U)
    if kind == "ul1":
        C1 = _row_sums_fp32(A)  # A @ 1_s: every column holds the row sum
        C1 = C1.astype(np.float16).astype(np.float32)  # FIXPIPE L0C -> L1 rounds C1 to fp16
        # L^-_s @ C1 accumulated into C2 in L0C (the columns of C1 are equal): one GEMM for all tiles
        C += (Lm @ C1[:, :, 0].T).T[:, :, None]
    return C


def _acc_dtype(dtype: str):
    return np.int32 if dtype == "int8" else np.float32


@np.errstate(invalid="ignore")  # NaN inputs propagate as on the hardware; verify explains the mismatch
def compute(name: str, x: np.ndarray, params, progress: Callable[[int], None] | None = None,
            hw: HardwareProfile | None = None) -> np.ndarray:
    """Output of kernel `name` on x (see ScanKernel.compute). hw decides the multi-core block and L2 chunk
    layout (default ascend-910b4)."""
    from ascendbench.kernels.scan import _CUMSUM_INFO

    hw = hw or load_profile()
    x = np.asarray(x)
    n = x.shape[0]
    out_np = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32}[params.out]
    acc = _acc_dtype(params.dtype)
    if n == 0:
        return np.zeros(0, dtype=out_np)
    if name == "memcpy":
        if progress:
            progress(n)
        return x.astype(out_np)
    s = _CUMSUM_INFO[1] if name == "vec-cumsum" else params.s
    L = s * s
    tiles = math.ceil(n / L)
    rows_total = tiles * s
    ul1 = name in ("scanul1", "mcscan-ul1")

    # Pass 1 (phase I on the cube): tile scans into y, batch by batch; keep the carry units' totals.
    y = np.empty(tiles * L, dtype=acc)
    unit_totals = np.empty(tiles if ul1 else rows_total, dtype=acc)
    U, Lm = _constants(s)
    batch_tiles = max(1, _BATCH_ELEMS // L)
    for t0 in range(0, tiles, batch_tiles):
        t1 = min(tiles, t0 + batch_tiles)
        lo, hi = t0 * L, min(n, t1 * L)
        A = np.zeros(((t1 - t0) * L,), dtype=np.float32)
        A[: hi - lo] = x[lo:hi]
        A = A.reshape(t1 - t0, s, s)
        C = tile_scans(A, "cumsum" if name == "vec-cumsum" else "ul1" if ul1 else "rowscan", U, Lm)
        C = C.astype(acc, copy=False)
        y[t0 * L: t1 * L] = C.reshape(-1)
        if ul1:
            unit_totals[t0:t1] = C[:, -1, -1]
        else:
            unit_totals[t0 * s: t1 * s] = C[:, :, -1].reshape(-1)
        if progress:
            progress((hi - lo) // 2)

    # Carries: where each carry chain starts and which units (rows or tiles) it walks.
    unit = L if ul1 else s
    units = unit_totals.shape[0]
    if name in ("mcscan", "mcscan-ul1"):
        halves = _shares(n, params, hw, s, ul1)
        carries = np.empty(units, dtype=acc)
        chunk_carry = acc(0)
        for chunk_halves in halves:
            # Phase I on the AIVs: one partial sum of the *input* per core-half, in the accumulation type.
            partials = []
            for u0, cnt in chunk_halves:
                lo, hi = min(n, u0 * unit), min(n, (u0 + cnt) * unit)
                partials.append(x[lo:hi].sum(dtype=acc) if hi > lo else acc(0))
            # Phase II: each AIV sums the partials of lower-numbered core-halves (scalar, sequential), adds
            # the previous chunk's carry, then walks its rows (tiles for ScanUL1) adding the carry.
            run = acc(0)
            last_unit = 0
            with np.errstate(over="ignore"):
                for (u0, cnt), part in zip(chunk_halves, partials):
                    if cnt:
                        carries[u0: u0 + cnt] = _chain(acc(chunk_carry + run), unit_totals[u0: u0 + cnt], acc)
                        last_unit = u0 + cnt - 1
                    run = acc(run + part)
                # The next chunk's carry is this chunk's last output, read back from GM.
                chunk_carry = acc(carries[last_unit] + unit_totals[last_unit])
    else:
        carries = _chain(acc(0), unit_totals, acc)

    # Pass 2 (phase II on the vector cores): add each unit's carry in place.
    with np.errstate(over="ignore"):
        yv = y.reshape(units, unit)
        step = max(1, _BATCH_ELEMS // unit)
        for u0 in range(0, units, step):
            yv[u0: u0 + step] += carries[u0: u0 + step, None]
            if progress:
                done = min(n, (u0 + step) * unit) - min(n, u0 * unit)
                progress(done - done // 2)
    y = y[:n]
    if params.exclusive:
        y = np.concatenate([np.zeros(1, dtype=acc), y[:-1]])
    with np.errstate(over="ignore"):  # fp16 output saturates to inf past 65504, as the hardware's cast does
        return y.astype(out_np, copy=False)


def _shares(n: int, params, hw: HardwareProfile, s: int, ul1: bool) -> list[list[tuple[int, int]]]:
    """The multi-core scans' carry chains: per L2 chunk, the (first unit, unit count) of each AIV's share in
    order, with units = tiles for MCScanUL1 and rows of s elements for MCScan (phase II of Algorithm 3)."""
    from ascendbench.kernels.scan import _split, auto_chunk

    L = s * s
    tiles = math.ceil(n / L)
    chunk = params.chunk
    if chunk is None:
        chunk = auto_chunk(hw, params) if n * (params.in_bytes + params.out_bytes) > hw.l2_bytes else 0
    chunk_tiles = tiles if chunk == 0 else max(1, min(tiles, math.ceil(chunk / L)))
    halves = []
    for c0 in range(0, tiles, chunk_tiles):
        ct = min(chunk_tiles, tiles - c0)
        blocks = min(params.blocks or hw.ai_cores, ct)
        first = c0
        chunk_halves = []
        for count in _split(ct, blocks):
            if ul1:
                u0 = first
                for share in _split(count, hw.aiv_per_core):
                    chunk_halves.append((u0, share))
                    u0 += share
            else:
                rows_per_aiv = count * s // hw.aiv_per_core
                for h in range(hw.aiv_per_core):
                    chunk_halves.append((first * s + h * rows_per_aiv, rows_per_aiv))
            first += count
        halves.append(chunk_halves)
    return halves


def _c1_rounding_effect(name: str, x: np.ndarray, params, hw: HardwareProfile) -> np.ndarray:
    """The exact effect of rounding C1 = A @ 1_s to fp16 in the ScanUL1 variants, per row of s input
    elements, as (rows,) float64 (element i of an inclusive scan gets entry i // s): within a tile, row k gets the rounding errors of rows j < k (L^-_s @ C1); a tile's total
    (carried to the next tiles of the same chain) gets those of all rows but the last. MCScanUL1 chains restart
    from exact partial sums at each AIV share, plus the previous chunk's last output."""
    s = params.s
    L = s * s
    n = x.shape[0]
    tiles = math.ceil(n / L)
    delta = np.empty(tiles * s)
    step = max(1, _BATCH_ELEMS // L)
    for t0 in range(0, tiles, step):
        t1 = min(tiles, t0 + step)
        block = np.zeros((t1 - t0) * L, dtype=np.float32)
        chunk = x[t0 * L: min(n, t1 * L)]
        block[: chunk.shape[0]] = chunk
        sums = _row_sums_fp32(block.reshape(t1 - t0, s, s)).reshape(-1)
        delta[t0 * s: t1 * s] = sums.astype(np.float16).astype(np.float64) - sums.astype(np.float64)
    delta.reshape(tiles, s)[:, -1] = 0.0  # the last row's C1 enters no output
    effect_rows = np.empty(tiles * s)
    if name == "scanul1":
        effect_rows[0] = 0.0
        effect_rows[1:] = np.cumsum(delta[:-1])
    else:
        base = 0.0
        for chunk_halves in _shares(n, params, hw, s, ul1=True):
            for u0, cnt in chunk_halves:
                if cnt:
                    r0, r1 = u0 * s, (u0 + cnt) * s
                    effect_rows[r0] = base
                    effect_rows[r0 + 1: r1] = base + np.cumsum(delta[r0: r1 - 1])
            last_u0, last_cnt = [h for h in chunk_halves if h[1]][-1]
            base = effect_rows[(last_u0 + last_cnt) * s - 1]
    return effect_rows


def _chain(start, totals: np.ndarray, acc) -> np.ndarray:
    """Carries of a sequential chain: carry[0] = start, carry[k+1] = carry[k] + totals[k], rounded in the
    accumulation type after every add (as the vector core does: y = rows + carry; carry = y[-1])."""
    seq = np.empty(totals.shape[0], dtype=acc)
    seq[0] = start
    seq[1:] = totals[:-1]
    with np.errstate(over="ignore"):
        return np.cumsum(seq, dtype=acc)


def reference(x: np.ndarray, exclusive: bool, dtype: str) -> np.ndarray:
    """Plain NumPy scan: float64 for fp16 input, int64 wrapped to int32 for int8 input."""
    if dtype == "int8":
        ref = np.cumsum(x, dtype=np.int64)
        ref = (ref + 2**31) % 2**32 - 2**31
    else:
        ref = np.cumsum(x, dtype=np.float64)
    if exclusive and ref.size:
        ref = np.concatenate([np.zeros(1, dtype=ref.dtype), ref[:-1]])
    return ref


def _tolerance_terms(name: str, params) -> tuple[int, float]:
    s = 128 if name == "vec-cumsum" else params.s
    return s, (_U16 if name in ("scanul1", "mcscan-ul1") else 0.0)


def tolerance_formula(name: str, params) -> str:
    if params.dtype == "int8" or name == "memcpy":
        return "exact (int32 with wrap-around)" if params.dtype == "int8" else "exact copy"
    _, extra = _tolerance_terms(name, params)
    formula = "4*sqrt(d_i)*2^-24*sum|x[:i]|" + (" + |C1 fp16 rounding effect_i|" if extra else "")
    if params.out == "fp16":
        formula += " + 2^-11*|y_i|"
    return formula


def verify(name: str, x: np.ndarray, y: np.ndarray, params, hw: HardwareProfile | None = None) -> Verification:
    """Check y against the NumPy reference, batch by batch (memory stays flat at any n).

    Reference: float64 running sum for fp16 input; int64 wrapped to int32 for int8 (must match exactly).
    Tolerance for fp16 input, with a_i the running sum of |x| up to element i and d_i = s + i/s + 1 the
    length of the longest chain of fp32 roundings that reaches element i (a row scan, then the carry chain):
    |y_i - ref_i| <= 4 sqrt(d_i) u32 a_i + |c_i| (+ u16 |ref_i| for fp16 output), u32 = 2^-24, u16 = 2^-11,
    where c_i is the exact effect of the ScanUL1 variants' rounding of C1 to fp16 on its way to L1 (0 for the
    other kernels; see _c1_rounding_effect). The sqrt(d) term is the probabilistic rounding-error bound of
    fp32 accumulation (Higham and Mary) with a safety factor of 4.
    max_rel_error is relative to the running sum of |x| (sign changes of the prefix do not blow it up).
    """
    n = x.shape[0]
    formula = tolerance_formula(name, params)
    if y.shape != (n,):
        return Verification(False, math.inf, math.inf, f"shape {y.shape} != ({n},)")
    if n == 0:
        return Verification(True, 0.0, 0.0, formula)
    int8 = params.dtype == "int8"
    s, extra = _tolerance_terms(name, params)
    c1_effect = _c1_rounding_effect(name, x, params, hw or load_profile()) if extra else None
    prefix = 0  # running sum of x before the batch (int64 or float64)
    abs_prefix = 0.0
    max_abs = max_rel = 0.0
    passed = True
    overflow = False
    nonfinite_input = False
    shift = 1 if params.exclusive and name != "memcpy" else 0
    for lo in range(0, n, _BATCH_ELEMS):
        hi = min(n, lo + _BATCH_ELEMS)
        # ref_i for i in [lo, hi): inclusive scan up to i - shift
        src_lo, src_hi = max(lo - shift, 0), hi - shift
        xs = x[src_lo:src_hi]
        if name == "memcpy":
            ref = x[lo:hi].astype(np.float64)
            diff = np.abs(y[lo:hi].astype(np.float64) - ref)
            err = float(diff.max())
            max_abs = max(max_abs, err)
            max_rel = max(max_rel, float((diff / np.maximum(np.abs(ref), 1e-30)).max()))
            passed &= err == 0.0 or (params.out == "fp16" and err <= _U16 * float(np.abs(ref).max()))
            continue
        if int8:
            run = np.cumsum(xs, dtype=np.int64) + prefix
            absrun = np.cumsum(np.abs(xs.astype(np.int64)), dtype=np.int64) + int(abs_prefix)
        else:
            xs64 = xs.astype(np.float64)
            run = np.cumsum(xs64)
            run += prefix
            np.abs(xs64, out=xs64)
            absrun = np.cumsum(xs64)
            absrun += abs_prefix
            del xs64
        if shift and lo == 0:
            run = np.concatenate([np.zeros(1, dtype=run.dtype), run])
            absrun = np.concatenate([np.zeros(1, dtype=absrun.dtype), absrun])
        if xs.size:
            prefix = run[-1]
            abs_prefix = float(absrun[-1])
        yb = y[lo:hi]
        if int8:
            ref = (run + 2**31) % 2**32 - 2**31
            diff = np.abs(yb.astype(np.int64) - ref)
            err = int(diff.max())
            passed &= err == 0
            max_abs = max(max_abs, float(err))
            max_rel = max(max_rel, float((diff / np.maximum(absrun, 1)).max()))
            continue
        diff = yb.astype(np.float64)
        with np.errstate(invalid="ignore"):
            diff -= run
        np.abs(diff, out=diff)
        ref_finite = np.isfinite(run)
        if not ref_finite.all():
            nonfinite_input = True
            # NaN or inf in the input: the output must carry the same non-finite values from there on
            yf = yb.astype(np.float64)
            same = (np.isnan(run) & np.isnan(yf)) | (run == yf)
            passed &= bool(same[~ref_finite].all())
            diff[~ref_finite] = 0.0
            absrun[~np.isfinite(absrun)] = 0.0
        if not np.isfinite(diff).all():
            passed = False
            overflow = True
            max_abs = max_rel = math.inf
            continue
        # 4 sqrt(d_i) u32 with d_i taken at the end of each stretch of 2^16 elements (a slightly larger bound)
        ends = np.minimum(np.arange(lo, hi, _SQRT_STRETCH, dtype=np.float64) + _SQRT_STRETCH, hi)
        coef = 4 * _U32 * np.sqrt(s + 1 + ends / s)
        tol = absrun * np.repeat(coef, _SQRT_STRETCH)[: hi - lo]
        if c1_effect is not None:
            r_lo, r_hi = max(lo - shift, 0) // s, (hi - 1 - shift) // s + 1
            c1 = np.repeat(np.abs(c1_effect[r_lo:r_hi]), s)
            start = max(lo - shift, 0) - r_lo * s
            part = c1[start: start + (hi - lo) - (shift if lo == 0 else 0)]
            tol[(shift if lo == 0 else 0):] += part
        if params.out == "fp16":
            tol += _U16 * np.abs(run) + 2.0**-24
        passed &= bool((diff <= tol).all())
        max_abs = max(max_abs, float(diff.max()))
        np.maximum(absrun, 1e-30, out=absrun)
        diff /= absrun
        max_rel = max(max_rel, float(diff.max()))
    if nonfinite_input and not passed:
        formula += (" (the input holds NaN or inf: the cube multiplies them by the zeros of U_s, and 0 x NaN = NaN "
                    "spreads over whole rows, so a matrix scan cannot match a sequential cumsum there)")
    elif overflow:
        limit = "65504, the fp16 maximum" if params.out == "fp16" else "the float32 range"
        formula += f" (the output is not finite where the reference is: it overflows past {limit})"
    return Verification(bool(passed), max_abs, max_rel, formula)
