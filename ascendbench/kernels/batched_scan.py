"""Batched scan (scan paper appendix B.1): x of shape (batch, length), every row scanned along the last axis.

Algorithms:
- "scanu": built on ScanU (Algorithm 1) with the 2:1 vector/cube scheduling of Figure B.1: block_dim =
  min(#AIC, ceil(batch/2)); each AI core takes pairs of rows round-robin; its cube row-scans tile t of both
  rows of a pair, and each of its two AIVs finishes one of the two rows (carry per row of s, Algorithm 1).
- "scanul1": built on ScanUL1 (Algorithm 2): one AI core per row (rows round-robin over min(#AIC, batch)
  cores); the cube runs equation 4.1 per s*s tile and AIV0 adds one carry per tile.
- "auto": whichever of the two the timing model finds faster (recorded); fp16 only for scanul1, so int8
  always resolves to scanu.
- "vector": the vector-only baseline: AscendC CumSum (CumSumInfo 128, 128), rows round-robin over all AIVs.

As the measured kernels do (KERNELS.md, "Batched scan"): rows that are not a multiple of s*s (16384 for the
vector baseline), or an odd batch for scanu, are first copied into a zero-padded workspace (a pad pass on all
AIVs); rows no longer than s take a row-scan-only path where one s x s tile holds s rows and a single A @ U_s
(A @ (U_s - I) for exclusive) gives their scans with no carry at all.

Functional result: computed in the algorithm's tile structure (scan_numerics.tile_scans), vectorised over
rows and tiles; carries chained per row in the accumulation type (fp32, or int32 with wrap-around).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import ParamError, Verification
from ascendbench.kernels.programs import copy_pass, loop
from ascendbench.kernels.scan import (
    _ACC_BYTES,
    _CUMSUM_INFO,
    CubeRowScan,
    CubeUL1,
    ScanOperatorParams,
    ScanParams,
    VecCumSumTile,
    l2_start,
)
from ascendbench.sim.engine import Engine, Op
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate

__all__ = [
    "ALGORITHMS",
    "BatchedLayout",
    "BatchedScanParams",
    "BatchedSim",
    "compute_batched",
    "layout",
    "reference_batched",
    "simulate_batched",
    "verify_batched",
]

ALGORITHMS = ("scanu", "scanul1", "auto", "vector")
_ROW_BLOCK_ELEMS = 1 << 22  # elements per NumPy block of rows: bounds the temporaries
_U32 = 2.0**-24


@dataclass(frozen=True)
class BatchedScanParams(ScanOperatorParams):
    """Parameters of a batched scan.

    algorithm: "scanu", "scanul1", "auto" or "vector" (see the module docstring).
    s: side of the s x s tiles, 16/32/64/128 (the vector baseline always uses CumSum's 128 x 128 tiles).
    exclusive: exclusive instead of inclusive scan of every row.
    dtype: "fp16" (fp32 output) or "int8" (int32 output, wrapping modulo 2^32).
    """

    algorithm: str = "auto"
    s: int = 128
    exclusive: bool = False
    dtype: str = "fp16"

    @property
    def scan(self) -> ScanParams:
        return ScanParams(s=self.s, exclusive=self.exclusive, dtype=self.dtype)



def check(batch: int, length: int, params: BatchedScanParams) -> None:
    """Raise ParamError (naming the option) for a shape or parameters the batched scans do not allow."""
    for name, value in (("batch", batch), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ParamError(name, f"must be a non-negative integer, got {value!r}")
    params.check(ALGORITHMS)
    if params.algorithm == "scanul1" and params.dtype == "int8":
        raise ParamError(
            "dtype",
            "scanul1 supports fp16 only (C1 = A@1 is fed back to the cube); use scanu, "
            "auto or vector for int8",
        )


@dataclass(frozen=True)
class BatchedLayout:
    """How one algorithm lays a (batch, length) problem on the machine.

    tile: elements per tile (s*s; 16384 for the vector baseline); tiles_per_row: ceil(length / tile) (for the
    row-scan-only path: tiles in all, s rows each); short: the row-scan-only path (length <= s); padded: a pad
    pass runs first; workers: the cores (AIVs for the vector baseline) that get work; per_worker: tile steps of
    each worker (a step of scanu covers one tile of both rows of a pair); rows_padded: rows after padding."""

    algorithm: str
    batch: int
    length: int
    tile: int
    tiles_per_row: int
    short: bool
    padded: bool
    rows_padded: int
    per_worker: tuple[int, ...]

    @property
    def workers(self) -> int:
        return len(self.per_worker)


def _round_robin(items: int, workers: int) -> list[int]:
    """Items dealt round-robin to `workers`: worker w gets items w, w + workers, ..."""
    if items <= 0 or workers <= 0:
        return []
    workers = min(workers, items)
    return [items // workers + (1 if w < items % workers else 0) for w in range(workers)]


def layout(
    batch: int, length: int, params: BatchedScanParams, hw: HardwareProfile, algorithm: str
) -> BatchedLayout:
    """The layout of `algorithm` ("scanu", "scanul1" or "vector"; not "auto") for a (batch, length) problem."""
    s = params.s
    if algorithm == "vector":
        return _whole_rows(
            algorithm, batch, length, _CUMSUM_INFO[0] * _CUMSUM_INFO[1], hw.ai_cores * hw.aiv_per_core
        )
    tile = s * s
    if 0 < length <= s:
        tiles = math.ceil(batch / s)
        return BatchedLayout(
            algorithm,
            batch,
            length,
            tile,
            tiles,
            True,
            length != s or batch % s != 0,
            tiles * s,
            tuple(_round_robin(tiles, hw.ai_cores)),
        )
    per_row = math.ceil(length / tile)
    if algorithm == "scanu":
        pairs = math.ceil(batch / 2)
        padded = length % tile != 0 or batch % 2 != 0
        return BatchedLayout(
            algorithm,
            batch,
            length,
            tile,
            per_row,
            False,
            padded,
            2 * pairs,
            tuple(p * per_row for p in _round_robin(pairs, hw.ai_cores)),
        )
    return _whole_rows(algorithm, batch, length, tile, hw.ai_cores)


def _whole_rows(algorithm: str, batch: int, length: int, tile: int, workers: int) -> BatchedLayout:
    """Whole rows dealt round-robin to `workers` (AI cores or AIVs), ceil(length / tile) tiles per row; padded
    when the tile does not divide the row."""
    per_row = math.ceil(length / tile)
    rows = _round_robin(batch, workers)
    return BatchedLayout(
        algorithm,
        batch,
        length,
        tile,
        per_row,
        False,
        length % tile != 0,
        batch,
        tuple(r * per_row for r in rows),
    )


@dataclass
class BatchedSim:
    """A simulated batched scan: the run of the chosen algorithm, its name, and the simulated time in seconds
    of each candidate the auto mode compared (just the one run otherwise)."""

    sim: SimResult
    algorithm: str
    layout: BatchedLayout
    candidates: dict[str, float]


def simulate_batched(
    batch: int,
    length: int,
    params: BatchedScanParams,
    hw: HardwareProfile,
    warm_l2: bool = False,
    force_exact: bool = False,
) -> BatchedSim:
    """Simulated run of the batched scan: time, phases, pipe busy time, counters (extrapolated loops; runs in
    milliseconds at any size). "auto" simulates scanu and (fp16 only) scanul1 and keeps the faster; ties go to
    scanu.

    Raises:
        ParamError: see check. BufferCapacityError: a tile does not fit a buffer of `hw`.
    """
    check(batch, length, params)
    if params.algorithm != "auto":
        sim, lay = _simulate_one(batch, length, params, hw, params.algorithm, warm_l2, force_exact)
        return BatchedSim(sim, params.algorithm, lay, {params.algorithm: sim.time_s})
    names = ["scanu"] if params.dtype == "int8" else ["scanu", "scanul1"]
    runs = {a: _simulate_one(batch, length, params, hw, a, warm_l2, force_exact) for a in names}
    best = min(names, key=lambda a: runs[a][0].time_cycles)  # min keeps the first (scanu) on ties
    return BatchedSim(runs[best][0], best, runs[best][1], {a: r[0].time_s for a, r in runs.items()})


def _simulate_one(
    batch, length, params, hw, algorithm, warm_l2, force_exact
) -> tuple[SimResult, BatchedLayout]:
    lay = layout(batch, length, params, hw, algorithm)
    p = params.scan
    n = batch * length
    launch = fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)
    if n == 0:
        return launch, lay
    # as the papers measured: L2 full of the flush's dirty lines (kernels.scan.l2_start)
    state = l2_start(hw, "warm" if warm_l2 else "flushed")
    parts: list[tuple[SimResult, int]] = [(launch, 1)]
    in_total = n * p.in_bytes
    if lay.padded:
        # the rows copied into the zero-padded workspace (run_pad_batch, kernel_pad_batch.h), then SyncAll,
        # SyncGroup and PipeBarrier<PIPE_ALL> (kernel_scan_batch.h:341-347)
        pad = copy_pass(hw, n, p.in_bytes, p.in_bytes, warm_l2, "pad", force_exact, l2=state)
        parts.append((pad, 1))
        parts.append((fixed_cost(hw, hw.sync_all_cycles, "SyncAll", sync_all=1), 1))
        state = pad.l2_end or state
        x_hit = 2 * in_total <= hw.l2_cache_bytes  # the padded copy was just written
    else:
        x_hit = warm_l2 and in_total <= hw.l2_cache_bytes

    def build(engine: Engine, skip: int) -> None:
        _build(engine, skip, lay, p, x_hit)

    parts.append((simulate(hw, build, max(lay.per_worker), warm_l2=warm_l2, force_exact=force_exact, l2=state), 1))
    return sequence(parts), lay


def _build(engine: Engine, skip: int, lay: BatchedLayout, p: ScanParams, x_hit: bool) -> None:
    hw = engine.hw
    engine.phase = "scan"
    # Every core is simulated (no representative per group of identical cores): these loops are bound by the
    # cube -> flag -> AIV -> flag latency chain, and a weighted representative, whose GM transfers reserve its
    # whole group's bytes at once, would serialise the cores that really run staggered.
    for w, count in enumerate(lay.per_worker):
        if lay.algorithm == "vector":
            unit = f"core{w // hw.aiv_per_core}.aiv{w % hw.aiv_per_core}"
            prog = VecCumSumTile(engine, unit, p, x_hit)
            loop(engine, count, skip, lambda i, prog=prog: prog.tile())
            continue
        aic = f"core{w}.aic"
        aivs = [f"core{w}.aiv{h}" for h in range(hw.aiv_per_core)]
        if lay.short:
            # s rows of length <= s per tile: A @ U_s is the final result, written straight to the output
            # (run_row_scan_kernel, kernel_row_scan.h:192-257)
            cube = CubeRowScan(engine, aic, p, x_hit, True)
            loop(engine, count, skip, lambda i, cube=cube: cube.tile())
            continue
        if lay.algorithm == "scanu":
            _build_scanu_core(engine, skip, lay, p, x_hit, aic, aivs, count)
        else:
            _build_scanul1_core(engine, skip, p, x_hit, aic, aivs[0], count)


def _build_scanu_core(engine: Engine, skip: int, lay: BatchedLayout, p: ScanParams, x_hit: bool, aic: str,
                      aivs: list[str], count: int) -> None:
    """One AI core of the batched ScanU (kernel_scan_batch.h run_scan_batch_kernel, :319-390): for each pair of
    rows it takes (round-robin), the cube loads U_s (LoadBToL0, once per pair) and scans tile t of both rows
    (KernelRowScanBatch::Process, :91-101), then meets its AIVs in a full handshake (SyncGroup FULL), so it
    scans the next tile pair while each AIV finishes its row's tile t (KernelCompleteRowsBatched, :173-300):
    read the tile (queue of depth 1), copy it to a work buffer, then two rows per step: two independent Adds
    (the two views of one buffer, :243-247, let them overlap), one wait for the vector pipe and two scalar
    reads (the updated end of the first row and the raw end of the second, :256-269), and copy the work
    buffer out and store it (:274-283). An AIV sets its flag once its previous store is done."""
    hw = engine.hw
    s, L = p.s, p.s * p.s
    per_row = lay.tiles_per_row
    # the cube's U_s is reloaded for every pair: its L1 and L0B buffers stay allocated
    cube = CubeRowScan(engine, aic, p, x_hit, False)
    for aiv in aivs:
        engine.alloc(aiv, "UB", 3 * L * _ACC_BYTES, f"s={s} fp32 tile (input, output and work buffers)")
    # per AIV: its last store, the one before (the cube's handshake waits for it; at first the flag each AIV
    # sets as it starts) and its last carry loop
    state: dict[str, list] = {aiv: [None, engine.compute(aiv, "SCALAR", 0.0, label="SyncGroup"), None] for aiv in aivs}

    def aiv_tile(aiv: str, done: Op) -> None:
        wr, older, chain = state[aiv]
        rd = engine.gm_read(aiv, "MTE2", L * _ACC_BYTES, l2_hit=True, deps=[engine.flag(done), chain],
                            label="C->UB")
        cp = engine.ub_copy(aiv, L * _ACC_BYTES, deps=[rd])
        ch = engine.vector_chain(aiv, s // 2, s * _ACC_BYTES, "scalar", deps=[cp], label="2 rows += carry",
                                 scalar_reads=2, ops_per_step=2)
        out = engine.ub_copy(aiv, L * _ACC_BYTES, deps=[ch, engine.moved_out(wr) if wr is not None else None],
                             label="work->out")
        store = engine.gm_write(aiv, "MTE3", L * p.out_bytes, writeback=True, aligned=not p.exclusive,
                                deps=[out], label="y->GM")
        state[aiv] = [store, wr or older, ch]

    def emit(i: int) -> None:
        if i % per_row == 0 and i > 0:  # a new pair: LoadBToL0 of U_s again
            u = engine.gm_read(aic, "MTE2", L * p.in_bytes, l2_hit=True, deps=[cube.mm], label="U->L1")
            cube.u_ready = engine.local_move(aic, "MTE1", L * p.in_bytes, hw.l1_to_l0_bytes_per_cycle,
                                             "bytes_l1_to_l0", deps=[u, cube.mm], label="U->L0B")
        # the cube's handshake of the previous tile pair: both AIVs' flags, set once each stored its tile before
        # (the first tile pair waits for nothing)
        cube.tile([engine.flag(state[aiv][1]) for aiv in aivs] if i > 0 else None)
        done = cube.tile()
        for aiv in aivs:
            aiv_tile(aiv, done)

    loop(engine, count, skip, emit)


def _build_scanul1_core(engine: Engine, skip: int, p: ScanParams, x_hit: bool, aic: str, aiv: str,
                        count: int) -> None:
    """One AI core of the batched ScanUL1: its rows one after another, each as the single-core ScanUL1 runs
    (kernels.scan._build_single_core; the batched ScanUL1 kernel is not in the authors' public code)."""
    s, L = p.s, p.s * p.s
    cube = CubeUL1(engine, aic, p, x_hit, False)
    engine.alloc(aiv, "UB", 2 * L * _ACC_BYTES, f"s={s} fp32 tile (input and output queues)")
    state: list = [None, engine.compute(aiv, "SCALAR", 0.0, label="SyncGroup"), None]

    def emit(i: int) -> None:
        wr, older, chain = state
        fp = cube.tile(engine.flag(older) if i > 0 else None)
        rd = engine.gm_read(aiv, "MTE2", L * _ACC_BYTES, l2_hit=True, deps=[engine.flag(fp), chain], label="C->UB")
        cp = engine.ub_copy(aiv, L * _ACC_BYTES, deps=[rd, engine.moved_out(wr) if wr is not None else None])
        ch = engine.vector_chain(aiv, 1, L * _ACC_BYTES, "scalar", deps=[cp], label="tile += carry")
        store = engine.gm_write(aiv, "MTE3", L * p.out_bytes, writeback=True, aligned=not p.exclusive, deps=[ch],
                                label="y->GM")
        state[:] = [store, wr or older, ch]

    loop(engine, count, skip, emit)


def expected_matmuls(batch: int, length: int, params: BatchedScanParams, algorithm: str) -> int:
    """Matrix multiplications of a batched scan (closed form): scanu 2 ceil(batch/2) ceil(length/s^2) (an odd
    batch is padded by one row), scanul1 3 batch ceil(length/s^2), the row-scan-only path (length <= s)
    ceil(batch/s) for both, the vector baseline none."""
    s = params.s
    if algorithm == "vector" or batch * length == 0:
        return 0
    if length <= s:
        return math.ceil(batch / s)
    tiles = math.ceil(length / (s * s))
    return 2 * math.ceil(batch / 2) * tiles if algorithm == "scanu" else 3 * batch * tiles


# ----- function -------------------------------------------------------------------------------------
def _out_np(params: BatchedScanParams):
    return np.int32 if params.dtype == "int8" else np.float32


def _shift(y: np.ndarray) -> np.ndarray:
    """Exclusive from inclusive, per row: the inclusive result written one element further, 0 first."""
    out = np.zeros_like(y)
    out[:, 1:] = y[:, :-1]
    return out


@np.errstate(invalid="ignore", over="ignore")  # NaN/inf propagate as on the hardware; int32 wraps
def compute_batched(
    x: np.ndarray, params: BatchedScanParams, algorithm: str, progress: Callable[[int], None] | None = None
) -> np.ndarray:
    """The batched scan of x computed in `algorithm`'s structure ("scanu", "scanul1" or "vector").

    x: (batch, length) float16 or int8 (as params.dtype). Returns (batch, length) float32 or int32 (int8
    input, wrapping modulo 2^32 like the cube's int32 accumulation). `progress(k)` gets finished elements.
    """
    from ascendbench.kernels import scan_numerics as sn

    x = np.asarray(x)
    batch, length = x.shape
    acc = _out_np(params)
    if batch * length == 0:
        return np.zeros((batch, length), dtype=acc)
    s = params.s
    if algorithm != "vector" and length <= s:
        # row-scan-only path: s rows per tile, one A @ U_s (the exclusive scan is the same product shifted)
        y = np.empty((batch, length), dtype=acc)
        U, _ = sn._constants(s)
        step = max(s, _ROW_BLOCK_ELEMS // s // s * s)
        for r0 in range(0, batch, step):
            r1 = min(batch, r0 + step)
            A = np.zeros((math.ceil((r1 - r0) / s) * s, s), dtype=np.float32)
            A[: r1 - r0, :length] = x[r0:r1]
            C = sn.tile_scans(A.reshape(-1, s, s), "rowscan", U).reshape(-1, s)[: r1 - r0, :length]
            y[r0:r1] = C.astype(acc)
            if progress:
                progress((r1 - r0) * length)
        return _shift(y) if params.exclusive else y
    kind = {"scanu": "rowscan", "scanul1": "ul1", "vector": "cumsum"}[algorithm]
    if kind == "cumsum":
        s = _CUMSUM_INFO[1]
    L = s * s
    tiles = math.ceil(length / L)
    padded_len = tiles * L
    y = np.empty((batch, length), dtype=acc)
    U, Lm = sn._constants(s)
    step = max(1, _ROW_BLOCK_ELEMS // padded_len)
    for r0 in range(0, batch, step):
        r1 = min(batch, r0 + step)
        nb = r1 - r0
        A = np.zeros((nb, padded_len), dtype=np.float32)
        A[:, :length] = x[r0:r1]
        C = sn.tile_scans(A.reshape(nb * tiles, s, s), kind, U, Lm).astype(acc, copy=False)
        if kind == "ul1":
            totals, unit = C[:, -1, -1].reshape(nb, tiles), L
        else:
            totals, unit = C[:, :, -1].reshape(nb, tiles * s), s
        # carries chained per row in the accumulation type, in the order the AIV chains them
        seq = np.zeros_like(totals)
        seq[:, 1:] = totals[:, :-1]
        carries = np.cumsum(seq, axis=1, dtype=acc)
        Y = C.reshape(nb, -1, unit)
        Y += carries[:, :, None]
        y[r0:r1] = Y.reshape(nb, padded_len)[:, :length]
        if progress:
            progress(nb * length)
    return _shift(y) if params.exclusive else y


def reference_batched(x: np.ndarray, exclusive: bool, dtype: str) -> np.ndarray:
    """Plain NumPy per-row scan: float64 for fp16 input, int64 wrapped to int32 values for int8."""
    if dtype == "int8":
        ref = np.cumsum(x, axis=1, dtype=np.int64)
        ref = (ref + 2**31) % 2**32 - 2**31
    else:
        ref = np.cumsum(x, axis=1, dtype=np.float64)
    return _shift(ref) if exclusive else ref


def tolerance_formula(params: BatchedScanParams, algorithm: str) -> str:
    if params.dtype == "int8":
        return "exact (int32 with wrap-around)"
    return "4*sqrt(s+1+i/s)*2^-24*sum|x[row,:i]|" + (
        " + |C1 fp16 rounding effect_i|" if algorithm == "scanul1" else ""
    )


def verify_batched(x: np.ndarray, y: np.ndarray, params: BatchedScanParams, algorithm: str) -> Verification:
    """Check y against the per-row NumPy reference, block of rows by block of rows.

    int8: exact (int64 sums folded to int32). fp16: |y - ref| <= 4 sqrt(d_i) 2^-24 a_i (+ |c_i| for scanul1),
    with i the position in the row, a_i the running sum of |x| along the row, d_i = s + 1 + i/s the longest
    chain of fp32 roundings reaching i, c_i the exact effect of rounding C1 = A @ 1_s to fp16 (as in
    scan_numerics.verify, which also says when the worst-case bound would explain a failure). Where the
    reference is not finite (NaN/inf input) y must carry the same value.
    """
    from ascendbench.kernels.scan_numerics import WORST_CASE_NOTE, rounding_only, worst_case_factor

    x = np.asarray(x)
    formula = tolerance_formula(params, algorithm)
    if y.shape != x.shape:
        return Verification(False, math.inf, math.inf, f"shape {y.shape} != {x.shape}")
    batch, length = x.shape
    if batch * length == 0:
        return Verification(True, 0.0, 0.0, formula)
    int8 = params.dtype == "int8"
    s = _CUMSUM_INFO[1] if algorithm == "vector" else params.s
    ul1 = algorithm == "scanul1" and length > s
    passed, max_abs, max_rel, nonfinite_input, only_rounding = True, 0.0, 0.0, False, None
    step = max(1, _ROW_BLOCK_ELEMS // max(length, 1))
    depth = s + 1 + np.arange(length, dtype=np.float64) / s
    coef = 4 * _U32 * np.sqrt(depth)
    for r0 in range(0, batch, step):
        r1 = min(batch, r0 + step)
        xb, yb = x[r0:r1], y[r0:r1]
        ref = reference_batched(xb, params.exclusive, params.dtype)
        if int8:
            absrun = np.cumsum(np.abs(xb.astype(np.int64)), axis=1)
            diff = np.abs(yb.astype(np.int64) - ref)
            passed &= bool((diff == 0).all())
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / np.maximum(absrun, 1)).max()))
            continue
        absrun = np.cumsum(np.abs(xb.astype(np.float64)), axis=1)
        c1 = np.abs(_c1_effect(xb, s, length)) if ul1 else 0.0

        def bound(factor, absrun=absrun, c1=c1):
            tol = absrun * factor + c1
            return _shift(tol) if params.exclusive else tol

        tol = bound(coef)
        if params.exclusive:
            absrun = _shift(absrun)
        yf = yb.astype(np.float64)
        finite = np.isfinite(ref)
        # the input, not the reference: an exclusive scan's last input of a row is in none of its outputs
        nonfinite_input |= not (finite.all() and np.isfinite(xb[:, -1]).all())
        with np.errstate(invalid="ignore"):
            diff = np.where(finite, np.abs(yf - ref), 0.0)
        same = (np.isnan(ref) & np.isnan(yf)) | (ref == yf)
        finite_diff = bool(np.isfinite(diff).all())
        within = finite_diff and bool((diff <= tol).all())
        if not within:  # can fp32 roundings that add up with a bias explain it? (scan_numerics.verify)
            explained = finite_diff and bool((diff <= bound(worst_case_factor(depth))).all())
            only_rounding = rounding_only(only_rounding, explained)
        passed &= bool(same[~finite].all()) and within
        if finite_diff:
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / np.maximum(absrun, 1e-30)).max()))
        else:
            max_abs = max_rel = math.inf
    if nonfinite_input and not passed:
        formula += (" (the input holds NaN or inf: the cube multiplies them by the zeros of U_s, and 0 x NaN = NaN "
                    "spreads over whole rows of a tile, so a matrix scan cannot match a sequential cumsum there)")
    elif only_rounding and not passed:
        formula += WORST_CASE_NOTE
    return Verification(bool(passed), max_abs, max_rel, formula)


def _c1_effect(xb: np.ndarray, s: int, length: int) -> np.ndarray:
    """Per element, the exact effect of ScanUL1's fp16 rounding of C1 = A @ 1_s on the inclusive scan: row k of
    a tile gets the rounding errors of rows j < k, and each tile's total (carried on) those of all but its
    last row; the chain restarts with every row of the batch."""
    from ascendbench.kernels.scan_numerics import _row_sums_fp32

    nb = xb.shape[0]
    L = s * s
    tiles = math.ceil(length / L)
    A = np.zeros((nb, tiles * L), dtype=np.float32)
    A[:, :length] = xb
    sums = _row_sums_fp32(A.reshape(nb * tiles, s, s)).reshape(nb, tiles, s)
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows: the verdict explains them
        delta = sums.astype(np.float16).astype(np.float64) - sums.astype(np.float64)
    delta[:, :, -1] = 0.0  # the last row's C1 enters no output
    delta = delta.reshape(nb, tiles * s)
    rows = np.zeros_like(delta)
    rows[:, 1:] = np.cumsum(delta[:, :-1], axis=1)
    return np.repeat(rows, s, axis=1)[:, :length]


def ul1_overflow_rows(x: np.ndarray, s: int, block: int = 1 << 22) -> tuple[int, int, float] | None:
    """For a (batch, length) fp16 input of the batched ScanUL1: the first row of s inputs (within a batch row, as
    its tiles lay them) whose sum does not fit the fp16 C1, as (batch row, first element, sum); None when all fit
    (kernels.scan.ul1_overflow for one row)."""
    from ascendbench.kernels.scan import first_overflowing_row

    batch, length = x.shape
    width = math.ceil(length / s) * s
    step = max(1, block // max(width, 1))
    for r0 in range(0, batch, step):
        r1 = min(batch, r0 + step)
        rows = np.zeros((r1 - r0, width), dtype=np.float16)
        rows[:, :length] = x[r0:r1]
        found = first_overflowing_row(rows.reshape(-1, s))
        if found is not None:
            per_row = width // s
            return r0 + found[0] // per_row, found[0] % per_row * s, found[1]
    return None
