"""Segmented scan built on the matrix scans: values x and head flags f, every segment scanned on its own.

Definition (the CUDA Handbook's chapter 13): a non-zero flag starts a segment; element 0 always starts one.
Inclusive: r_i = x_h + ... + x_i with h the head of i's segment; exclusive: r_i = x_h + ... + x_{i-1} (0 at
every head).

Formulation on the matrix scans (the algorithm "mcscan" / "mcscan-ul1"), four kernels in sequence:
1. normalise the flags: f'_i = (f_i != 0), f'_0 = 1, as a 0/1 int8 mask (all AIVs, one compare and select);
2. seg = inclusive int8 MCScan of f' (int32): the segment number (1-based) of every element, and at a head
   the write offset of its segment (stream compaction, the textbook's use of a flag scan);
3. y = inclusive scan of x with MCScan or MCScanUL1 (fp32, or int32 for int8 input);
4. fix-up kernel on all AIVs: pass A compacts E_h = y_h - x_h (the exclusive scan at each head) into
   B[seg_h - 1] with GatherMask (as compress, scan paper §5.2); SyncAll; pass B computes
   r_i = y_i - B[seg_i - 1] (exclusive: y_i - x_i - B[seg_i - 1]). seg is non-decreasing, so the B entries a
   piece needs are one contiguous slice: each AIV reads that slice into the UB and gathers from it.
Cost of the formulation: the fp32 results are differences of global prefix sums, so their rounding error
scales with the running sum of |x| from the start of the array, not of the segment (int8: exact modulo 2^32,
since int32 differences wrap consistently).

Baseline "vector": a vector-only segmented CumSum (CumSumInfo 128, 128) on one AIV, the segmented operator
(add, then select on the flags) at every dependent step; its output is the segment-wise scan rounded once to
fp32 (int32 exact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import ParamError, Verification
from ascendbench.kernels.programs import Ring, loop, split_front
from ascendbench.kernels.scan import (
    _ACC_BYTES,
    _CUMSUM_INFO,
    SCAN_KERNELS,
    ScanOperatorParams,
    ScanParams,
    cumsum_last_axis,
)
from ascendbench.sim.engine import Engine
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate

__all__ = [
    "ALGORITHMS",
    "SegmentedScanParams",
    "compute_segmented",
    "count_segments",
    "normalise_flags",
    "reference_segmented",
    "simulate_segmented",
    "verify_segmented",
]

ALGORITHMS = ("mcscan", "mcscan-ul1", "vector")
FLAG_DTYPES = (np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8))
_PIECE = 16384
_U32 = 2.0**-24


@dataclass(frozen=True)
class SegmentedScanParams(ScanOperatorParams):
    """algorithm: "mcscan" (default: values scanned with MCScan), "mcscan-ul1" (with MCScanUL1, fp16 only; faster,
    but its fp16 rounding of C1 adds an error that scales with the global prefix) or "vector" (baseline);
    s: tile side of the matrix scans (16/32/64/128); exclusive; dtype: "fp16" (fp32 out) or "int8" (int32)."""

    algorithm: str = "mcscan"
    s: int = 128
    exclusive: bool = False
    dtype: str = "fp16"

    @property
    def values_scan(self) -> ScanParams:
        return ScanParams(s=self.s, dtype=self.dtype)



def check(n: int, params: SegmentedScanParams) -> None:
    """Raise ParamError naming the option for a size or parameters the segmented scan does not allow."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ParamError("n", f"must be a non-negative integer, got {n!r}")
    params.check(ALGORITHMS)
    if params.algorithm == "mcscan-ul1" and params.dtype == "int8":
        raise ParamError("dtype", "mcscan-ul1 supports fp16 only; use mcscan or vector for int8")


def normalise_flags(flags: np.ndarray) -> np.ndarray:
    """The 0/1 int8 head mask the device scans: non-zero flags are heads, and element 0 always is."""
    mask = (np.asarray(flags) != 0).astype(np.int8)
    if mask.size:
        mask[0] = 1
    return mask


def count_segments(flags: np.ndarray) -> int:
    """Number of segments (heads, counting element 0)."""
    return int(normalise_flags(flags).sum(dtype=np.int64))


# ----- timing ---------------------------------------------------------------------------------------
def _launch(hw: HardwareProfile) -> SimResult:
    return fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)


def _stream_pass(
    hw,
    n: int,
    reads: list[tuple[float, bool]],
    write_bytes: float,
    passes: int,
    phase: str,
    force_exact: bool,
    extra_write_per_elem: float = 0.0,
) -> SimResult:
    """All AIVs stream n elements in pieces (contiguous shares from the front, double-buffered): per piece one
    GM read per (bytes per element, L2 hit) in `reads`, `passes` vector passes over 4-byte elements, one write
    of `write_bytes` per element plus `extra_write_per_elem` (the compacted heads, assumed evenly spread)."""
    per_elem = sum(b for b, _ in reads) + write_bytes + extra_write_per_elem
    piece = max(256, min(_PIECE, int(hw.ub_bytes // (2 * per_elem + 8) // 256 * 256)))
    pieces = math.ceil(n / piece)
    per_aiv = split_front(pieces, hw.ai_cores * hw.aiv_per_core)

    def build(engine: Engine, skip: int) -> None:
        engine.phase = phase
        for w, count in enumerate(per_aiv):
            if count == 0:
                continue
            unit = f"core{w // hw.aiv_per_core}.aiv{w % hw.aiv_per_core}"
            engine.alloc(unit, "UB", int(2 * piece * per_elem), f"{phase} pieces (2 buffers)")
            ring = Ring(2)
            tail = n - (sum(per_aiv[:w]) + count - 1) * piece

            def emit(i: int, unit=unit, ring=ring, tail=tail, last_index=count - 1) -> None:
                elems = min(tail, piece) if i == last_index else piece
                ops = [
                    engine.gm_read(unit, "MTE2", elems * b, l2_hit=hit, deps=[ring.wait()], label="in")
                    for b, hit in reads
                ]
                vec = engine.vector(unit, elems * _ACC_BYTES, deps=ops, label=phase, passes=passes)
                last = vec
                if write_bytes:
                    last = engine.gm_write(
                        unit, "MTE3", elems * write_bytes, writeback=True, deps=[vec], label="out"
                    )
                if extra_write_per_elem:
                    last = engine.gm_write(
                        unit,
                        "MTE3",
                        elems * extra_write_per_elem,
                        writeback=True,
                        deps=[vec],
                        label="heads out",
                    )
                ring.push(last)

            loop(engine, count, skip, emit)

    return simulate(hw, build, max(per_aiv), force_exact=force_exact)


def _vector_baseline(hw, n: int, p: SegmentedScanParams, warm_l2: bool, force_exact: bool) -> SimResult:
    """One AIV, segmented CumSum (128, 128) per tile: values and flags in (one buffer each: two would not fit the
    UB next to the work buffers), the flags cast and transposed, the values scanned as AscendC CumSum does
    (scan.cumsum_last_axis) with a dependent (add, select) pair per column, a barrier after each; the row
    carries as 128 dependent adds with a scalar read each, then one select pass that stops the carry at heads."""
    outer, inner = _CUMSUM_INFO
    tile = outer * inner
    sp = ScanParams(dtype=p.dtype, exclusive=p.exclusive)
    hit = warm_l2 and n * (sp.in_bytes + 1) <= hw.l2_cache_bytes

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "segmented scan"
        unit = "core0.aiv0"
        # the flags take the UB room of the second input buffer: values and flags are single-buffered
        engine.alloc(
            unit,
            "UB",
            tile * (sp.in_bytes + 1) + 2 * tile * _ACC_BYTES,
            "segmented CumSum 128x128 tile (values and flags, work and transpose buffers)",
        )
        ring = Ring(1)
        prev = [None]

        def emit(i: int) -> None:
            rx = engine.gm_read(
                unit, "MTE2", tile * sp.in_bytes, l2_hit=hit, deps=[ring.wait()], label="x->UB"
            )
            rf = engine.gm_read(unit, "MTE2", tile, l2_hit=hit, deps=[ring.wait()], label="flags->UB")
            flags = engine.vector(unit, tile * _ACC_BYTES, deps=[rf], label="flags: cast+transpose", passes=2)
            scan = cumsum_last_axis(
                engine, unit, outer, inner, sp.in_bytes, deps=[rx, flags], adds_per_row=2,
                label="segmented CumSum (add, select)",
            )
            carry = engine.vector_chain(
                unit, outer, inner * _ACC_BYTES, "scalar", deps=[scan, prev[0]], label="row carries"
            )
            sel = engine.vector(unit, tile * _ACC_BYTES, deps=[carry], label="carry stops at heads")
            prev[0] = sel
            wr = engine.gm_write(
                unit,
                "MTE3",
                tile * sp.out_bytes,
                writeback=True,
                aligned=not p.exclusive,
                deps=[sel],
                label="r->GM",
            )
            ring.push(wr)

        loop(engine, math.ceil(n / tile), skip, emit)

    return sequence(
        [
            (_launch(hw), 1),
            (simulate(hw, build, math.ceil(n / tile), warm_l2=warm_l2, force_exact=force_exact), 1),
        ]
    )


def simulate_segmented(
    n: int,
    segments: int,
    params: SegmentedScanParams,
    hw: HardwareProfile,
    warm_l2: bool = False,
    force_exact: bool = False,
) -> SimResult:
    """Simulated run of the segmented scan on n elements with `segments` heads (see the module docstring).
    Phases: "normalise flags", "flag scan", "value scan" (each MCScan's own phases are summed into these),
    "compact heads", "sync", "subtract". Runs in milliseconds at any n.

    Raises:
        ParamError: see check; segments outside [min(n, 1), n]. BufferCapacityError: a tile does not fit.
    """
    check(n, params)
    if not (min(n, 1) <= segments <= n):
        raise ParamError("segments", f"must be between {min(n, 1)} and {n}, got {segments}")
    if n == 0:
        return _launch(hw)
    if params.algorithm == "vector":
        return _vector_baseline(hw, n, params, warm_l2, force_exact)
    vp = params.values_scan
    in_b, out_b = vp.in_bytes, vp.out_bytes
    flag_scan = SCAN_KERNELS["mcscan"].simulate(
        n, ScanParams(s=params.s, dtype="int8"), hw, warm_l2=warm_l2, force_exact=force_exact
    )
    # the flag scan ran first and paid its write-backs: L2 starts clean (or with the values resident)
    value_scan = SCAN_KERNELS[params.algorithm].simulate(n, vp, hw, force_exact=force_exact,
                                                         l2="warm" if warm_l2 else "clean")
    # what the fix-up kernel reads was just written by the scans: resident in L2 when it all fits
    hit = n * (in_b + 1 + 2 * _ACC_BYTES) <= hw.l2_cache_bytes
    flag_hit = warm_l2 and n <= hw.l2_cache_bytes
    normalise = _stream_pass(hw, n, [(1, flag_hit)], 1, 2, "normalise flags", force_exact)
    heads = segments / n
    compact = _stream_pass(
        hw,
        n,
        [(1, hit), (_ACC_BYTES, hit), (in_b, hit)],
        0,
        3,
        "compact heads",
        force_exact,
        extra_write_per_elem=_ACC_BYTES * heads,
    )
    sub_reads = [(_ACC_BYTES, hit), (_ACC_BYTES, hit), (_ACC_BYTES * heads, True)]
    if params.exclusive:
        sub_reads.append((in_b, hit))
    subtract = _stream_pass(
        hw, n, sub_reads, out_b, 4 + (2 if params.exclusive else 0), "subtract", force_exact
    )

    def renamed(res: SimResult, name: str) -> SimResult:
        """The scan's own phases (pad, phase I, phase II, chunk sync) summed under one name."""
        phases: dict[str, float] = {}
        for k, v in res.phases.items():
            key = k if k == "launch" else name
            phases[key] = phases.get(key, 0.0) + v
        res.phases = {k: min(v, res.time_cycles) for k, v in phases.items()}
        return res

    return sequence(
        [
            (_launch(hw), 1),
            (normalise, 1),
            (renamed(flag_scan, "flag scan"), 1),
            (renamed(value_scan, "value scan"), 1),
            (_launch(hw), 1),
            (compact, 1),
            (fixed_cost(hw, hw.sync_all_cycles, "sync", sync_all=1), 1),
            (subtract, 1),
        ]
    )


# ----- function -------------------------------------------------------------------------------------
def _acc(dtype: str):
    return np.int32 if dtype == "int8" else np.float32


@np.errstate(invalid="ignore", over="ignore")  # NaN/inf propagate as on the hardware; int32 wraps
def compute_segmented(
    x: np.ndarray, flags: np.ndarray, params: SegmentedScanParams, hw: HardwareProfile | None = None
) -> np.ndarray:
    """The segmented scan of x (n,) float16/int8 with head flags (n,) (any dtype; non-zero = head), computed
    as the algorithm does: the matrix scans' own functional results (MCScan / MCScanUL1 in their tile and
    carry structure), then the compaction and subtraction in fp32 (int32 wrapping). Returns (n,) float32 or
    int32. hw fixes the multi-core layout of the scans (default ascend-910b4)."""
    x = np.asarray(x)
    acc = _acc(params.dtype)
    n = x.shape[0]
    if n == 0:
        return np.zeros(0, dtype=acc)
    mask = normalise_flags(flags)
    heads = np.flatnonzero(mask)
    if params.algorithm == "vector":
        return reference_segmented(x, mask, params.exclusive, params.dtype).astype(acc)
    seg = SCAN_KERNELS["mcscan"].compute(mask, ScanParams(s=params.s, dtype="int8"), hw=hw)
    y = SCAN_KERNELS[params.algorithm].compute(x, params.values_scan, hw=hw)
    e = y - x.astype(acc)  # the exclusive scan, E = y - x
    base = e[heads][seg - 1]  # B[seg_i - 1]: E at the head of i's segment
    return (e if params.exclusive else y) - base


def reference_segmented(x: np.ndarray, flags: np.ndarray, exclusive: bool, dtype: str) -> np.ndarray:
    """Plain NumPy segmented scan: float64 for fp16 input, int64 folded to int32 values for int8 (exact)."""
    x = np.asarray(x)
    n = x.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64 if dtype == "int8" else np.float64)
    mask = normalise_flags(flags).astype(bool)
    wide = np.int64 if dtype == "int8" else np.float64
    xs = x.astype(wide)
    run = np.cumsum(xs)
    seg_start = np.maximum.accumulate(np.where(mask, np.arange(n), 0))
    before = run - xs  # global exclusive scan
    # float64 (int64) differences of global sums: exact for int8, within 2^-52 of the running sum for fp16
    ref = (before if exclusive else run) - before[seg_start]
    if dtype == "int8":
        ref = (ref + 2**31) % 2**32 - 2**31
    return ref


def tolerance_formula(params: SegmentedScanParams) -> str:
    if params.dtype == "int8":
        return "exact (int32 with wrap-around)"
    if params.algorithm == "vector":
        return "2^-24*|r_i| + 2^-50*sum|x[:i]| (one fp32 rounding)"
    extra = " + |C1 fp16 rounding effect at i and h|" if params.algorithm == "mcscan-ul1" else ""
    return (
        "4*sqrt(s+1+i/s)*2^-24*(sum|x[:i]| + sum|x[:h]|) + 2^-23*(|scan_i| + |scan_h|)"
        + extra
        + " (h: head of i's segment; errors scale with the global prefix)"
    )


def verify_segmented(
    x: np.ndarray,
    flags: np.ndarray,
    r: np.ndarray,
    params: SegmentedScanParams,
    hw: HardwareProfile | None = None,
) -> Verification:
    """Check r against reference_segmented. int8: exact. fp16: the bound of tolerance_formula, with a_i the
    running sum of |x| from the array start, h the head of i's segment, scan the global inclusive scan, c the
    exact effect of MCScanUL1's fp16 rounding of C1 (scan_numerics). The vector baseline: one fp32 rounding."""
    from ascendbench.hardware import load_profile
    from ascendbench.kernels.scan_numerics import WORST_CASE_NOTE, _c1_rounding_effect, worst_case_factor

    x = np.asarray(x)
    n = x.shape[0]
    formula = tolerance_formula(params)
    if r.shape != (n,):
        return Verification(False, math.inf, math.inf, f"shape {r.shape} != ({n},)")
    if n == 0:
        return Verification(True, 0.0, 0.0, formula)
    mask = normalise_flags(flags)
    ref = reference_segmented(x, mask, params.exclusive, params.dtype)
    if params.dtype == "int8":
        diff = np.abs(r.astype(np.int64) - ref)
        err = float(diff.max())
        return Verification(bool(err == 0), err, err / max(1.0, float(np.abs(ref).max())), formula)
    rf = r.astype(np.float64)
    finite = np.isfinite(ref)
    with np.errstate(invalid="ignore"):
        diff = np.where(finite, np.abs(rf - ref), 0.0)
    same = (np.isnan(ref) & np.isnan(rf)) | (ref == rf)
    ax = np.abs(x.astype(np.float64))
    absrun = np.cumsum(ax)
    seg_start = np.maximum.accumulate(np.where(mask.astype(bool), np.arange(n), 0))
    if params.algorithm == "vector":
        # one fp32 rounding of the float64 segment sums (themselves within 2^-50 of the running sum of |x|)
        tol = _U32 * np.abs(ref) + 2.0**-50 * absrun
        local = np.abs(ref)
        bound = None
    else:
        s = params.s
        glob = np.abs(np.cumsum(x.astype(np.float64)))
        before_h = (absrun - ax)[seg_start]
        depth = s + 1 + np.arange(n) / s
        extra = 2 * _U32 * (glob + glob[seg_start])
        if params.algorithm == "mcscan-ul1":
            eff = np.abs(_c1_rounding_effect("mcscan-ul1", x, params.values_scan, hw or load_profile()))
            extra += eff[np.arange(n) // s] + eff[seg_start // s]

        def bound(factor):
            return factor * (absrun + before_h) + extra

        tol = bound(4 * _U32 * np.sqrt(depth))
        local = absrun
    within = bool(np.isfinite(diff).all()) and bool((diff <= tol).all())
    # can fp32 roundings that add up with a bias explain a failure? (scan_numerics.verify)
    explained = (not within and bound is not None and bool(np.isfinite(diff).all())
                 and bool((diff <= bound(worst_case_factor(depth))).all()))
    ok = bool(same[~finite].all()) and within
    if np.isfinite(diff).all():
        max_abs = float(diff.max())
        max_rel = float((diff / np.maximum(local, 1e-30)).max())
    else:
        max_abs = max_rel = math.inf
    if not ok and not np.isfinite(x).all():
        formula += (
            " (the input holds NaN or inf: a segmented scan by differences of global scans spreads them "
            "beyond their segment)"
        )
    elif not ok and explained:
        formula += WORST_CASE_NOTE
    return Verification(ok, max_abs, max_rel, formula)
