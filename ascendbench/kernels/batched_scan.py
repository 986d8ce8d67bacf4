"""Batched scan (scan paper appendix B.1): x of shape (batch, length), every row scanned along the last axis.

Algorithms:
- "scanu": built on ScanU (Algorithm 1) with the 2:1 vector/cube scheduling of Figure B.1: block_dim =
  min(#AIC, ceil(batch/2)); each AI core takes pairs of rows round-robin; its cube row-scans tile t of both
  rows of a pair, and each of its two AIVs finishes one of the two rows (carry per row of s, Algorithm 1).
- "scanul1": built on ScanUL1 (Algorithm 2): one AI core per row (rows round-robin over min(#AIC, batch)
  cores), each row run as the public single-cube ScanUL1 runs its vector (seg_sum_single_cube.cpp:49-62):
  both AIVs pad the row into a workspace, SyncGroup, then the block scan reloads L^-, [1] and U and runs
  equation 4.1 per s*s tile with a SyncGroup after each, AIV0 adding one carry per tile (_UL1Core).
- "auto": whichever of the two the timing model finds faster (recorded); fp16 only for scanul1, so int8
  always resolves to scanu.
- "vector": the vector-only baseline: AscendC CumSum (CumSumInfo 128, 128), rows round-robin over all AIVs.

As the measured kernels do (KERNELS.md, "Batched scan"): for scanu and the vector baseline, rows that are not
a multiple of s*s (16384 for the vector baseline), or an odd batch for scanu, are first copied into a
zero-padded workspace (a pad pass on all AIVs); rows no longer than s take a row-scan-only path where one
s x s tile holds s rows and a single A @ U_s (A @ (U_s - I) for exclusive) gives their scans with no carry.

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
from ascendbench.kernels.programs import Ring, clamp_skip, copy_pass, loop
from ascendbench.kernels.scan import (
    _ACC_BYTES,
    _CUMSUM_INFO,
    CubeRowScan,
    CubeUL1,
    _CubeTiles,
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
    # scanul1: each row padded by its core, whatever its length (seg_sum_single_cube.cpp:49)
    return _whole_rows(algorithm, batch, length, tile, hw.ai_cores, padded=True)


def _whole_rows(algorithm: str, batch: int, length: int, tile: int, workers: int,
                padded: bool = False) -> BatchedLayout:
    """Whole rows dealt round-robin to `workers` (AI cores or AIVs), ceil(length / tile) tiles per row; padded
    when the tile does not divide the row (or `padded`)."""
    per_row = math.ceil(length / tile)
    rows = _round_robin(batch, workers)
    return BatchedLayout(
        algorithm,
        batch,
        length,
        tile,
        per_row,
        False,
        padded or length % tile != 0,
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
    if lay.algorithm == "scanul1" and not lay.short:  # every row padded by its own core (_UL1Core)
        x_hit = warm_l2 and in_total <= hw.l2_cache_bytes
        parts.append((_simulate_scanul1(lay, p, hw, x_hit, warm_l2, force_exact, state), 1))
        return sequence(parts), lay
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
        _build_scanu_core(engine, skip, lay, p, x_hit, aic, aivs, count)


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


class _RowBlockScan(CubeUL1):
    """The cube of one core of the batched ScanUL1: a KernelBlockScan<T, SyncAfter=true> constructed for
    every row (seg_sum_single_cube.cpp:53-57), whose Process loads L^- (GM -> L1 -> L0A), fills [1] in L1
    and moves it to L0B, and loads U into L1 on every call (kernel_block_scan.h:126-140) before its tiles (CubeUL1.tile,
    :142-183). The tiles read the padded copy of the row the AIVs have just written (an L2 hit); the filling
    of [1] (InitConstL1) is not costed, as in CubeUL1."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams):
        _CubeTiles.__init__(self, engine, unit, p, True, False)
        s = p.s
        self.half = s * s * 2
        engine.alloc(unit, "L0A", self.half + self.tile_in, f"L^-_s and s={s} input tile")
        engine.alloc(unit, "L0B", 2 * self.half, f"two s={s} right operands (1_s and U_s or C1)")
        engine.alloc(unit, "L0C", self.tile_acc, f"s={s} C1 / C2 accumulator")
        engine.alloc(unit, "L1", self.tile_in + 3 * self.half, f"s={s} input tile, U_s, 1_s and C1")
        self.a = self.mm2 = self.mm3 = self.fp = self.lminus = self.ones = None

    def load_constants(self, sync: Op) -> list:
        """Process's loads of L^-, [1] and U after the row's SyncGroup; returns what the row's first tile waits
        for (its A reuses L^-'s A1 queue and is read after U on MTE2). L^- and U are the same GM ranges for every
        row and core, so all but the first reads hit L2."""
        e, unit, rate = self.e, self.unit, self.e.hw.l1_to_l0_bytes_per_cycle
        lm = e.gm_read(unit, "MTE2", self.half, region=("ul1_lower", 0), deps=[sync, self.mm3],
                       label="L^- ->L1")
        self.lminus = e.local_move(unit, "MTE1", self.half, rate, "bytes_l1_to_l0", deps=[lm, self.mm3],
                                   label="L^- ->L0A")
        u = e.gm_read(unit, "MTE2", self.half, region=("ul1_upper", 0), deps=[sync], label="U->L1")
        self.ones = e.local_move(unit, "MTE1", self.half, rate, "bytes_l1_to_l0", deps=[sync, self.lminus],
                                 label="1->L0B")
        return [self.lminus, e.moved_out(u)]  # the A1 queue L^- freed; U's read, the one before on MTE2


class _UL1Core:
    """One AI core of the batched ScanUL1 running its rows one after another, each as the public single-cube
    entry point runs its vector (seg_sum_single_cube.cpp:49-62; the batched ScanUL1 kernel itself is not in
    the authors' public code):
    1. pad (run_pad_kernel, kernel_pad.h:66-106, unconditional): both AIVs copy the row GM -> UB -> GM into a
       zero-padded workspace, tile by tile (s*s elements, queues of depth 2), AIV0 the first ceil(m/2) of the
       row's m tiles (GetWorkDistribution, tcuscan_utils.h:1393-1407), the partial last tile followed by a
       Duplicate of zeros and its write; the workspace is rewritten by every row, so it never reaches HBM;
    2. SyncGroup FULL (tcuscan_utils.h:1215-1227): each AIV sets its flag from MTE3 once its pad writes are
       out, the AIC waits for both (cross_core_flag_cycles each; no SyncAll);
    3. KernelBlockScan<T, true>: the constants reloaded (_RowBlockScan), then per tile the three Mmads and a
       SyncGroup after the tile (SyncAfter, :180-182), AIV0 adding the tile's carry as in the single-core
       ScanUL1 (kernels.scan._build_single_core) while the cube scans the next tile;
    so a row's pipeline drains at its end: the cube waits for AIV0's last carry and store and the next row's
    pad, AIV0 for the next row's first tile."""

    def __init__(self, engine: Engine, w: int, p: ScanParams, length: int, x_hit: bool):
        hw = engine.hw
        self.e, self.p, self.length, self.x_hit = engine, p, length, x_hit
        self.L = p.s * p.s
        self.aic = f"core{w}.aic"
        self.aivs = [f"core{w}.aiv{h}" for h in range(hw.aiv_per_core)]
        self.cube = _RowBlockScan(engine, self.aic, p)
        # the carry's queues; the pad's buffers belong to its own TPipe, released before the block scan's
        engine.alloc(self.aivs[0], "UB", 2 * self.L * _ACC_BYTES,
                     f"s={p.s} fp32 tile (input and output queues)")
        self.wr = self.older = self.chain = None
        self.aiv_free = [None] * len(self.aivs)  # what each AIV's next pad waits for
        self.first_tile: list = []

    def pad_tile(self, aiv: str, elems: int, ring: Ring, start) -> Op:
        """One tile of KernelPad::Process: the row's elements in, out, and for a partial tile the zeros."""
        e, b = self.e, self.p.in_bytes
        rd = e.gm_read(aiv, "MTE2", elems * b, l2_hit=self.x_hit, deps=[ring.wait(), start], label="pad in")
        wr = e.gm_write(aiv, "MTE3", elems * b, writeback=False, deps=[rd], label="pad out")
        if elems < self.L:
            z = e.vector(aiv, (self.L - elems) * b, deps=[rd], label="Duplicate 0")
            wr = e.gm_write(aiv, "MTE3", (self.L - elems) * b, writeback=False, deps=[z, wr],
                            label="pad zeros")
        ring.push(e.moved_out(wr))
        return wr

    def start_row(self, tiles: list[int], skipped_full: int = 0) -> None:
        """The pad of the row's tiles `tiles` (their element counts, split between the AIVs as KernelPad does)
        and the SyncGroup; `skipped_full` full tiles left out of a truncated row add their pad counters."""
        e = self.e
        half = math.ceil(len(tiles) / len(self.aivs))
        ends = []
        for h, aiv in enumerate(self.aivs):
            ring, last = Ring(2), self.aiv_free[h]
            for k, elems in enumerate(tiles[h * half:(h + 1) * half]):
                if skipped_full and h == 0 and k == 1:
                    snap = e.snapshot()
                    last = self.pad_tile(aiv, elems, ring, self.aiv_free[h])
                    e.add_counters(e.delta_since(snap), skipped_full)
                else:
                    last = self.pad_tile(aiv, elems, ring, self.aiv_free[h])
            if not tiles[h * half:(h + 1) * half]:  # no pad tile: its flag goes out as it reaches SyncGroup
                last = e.compute(aiv, "SCALAR", 0.0, deps=[self.aiv_free[h]], label="SyncGroup")
            ends.append(last)
        sync = e.compute(self.aic, "SCALAR", 0.0, deps=[e.flag(x) for x in ends] + [self.cube.fp],
                         label="SyncGroup")
        self.first_tile = [sync, *self.cube.load_constants(sync)]
        # AIV0's handshake before the row's first tile goes out once its pad is written
        self.wr, self.older = None, ends[0]

    def tile(self, j: int, elems: int) -> None:
        """Tile j of the row: the cube's three Mmads (after the SyncAfter of tile j - 1), AIV0's carry."""
        e, L = self.e, self.L
        wait = self.first_tile if j == 0 else e.flag(self.older)
        fp = self.cube.tile(wait)
        rd = e.gm_read(self.aivs[0], "MTE2", L * _ACC_BYTES, l2_hit=True, deps=[e.flag(fp), self.chain],
                       label="C->UB")
        prev = e.moved_out(self.wr) if self.wr is not None else None
        cp = e.ub_copy(self.aivs[0], L * _ACC_BYTES, deps=[rd, prev])
        ch = e.vector_chain(self.aivs[0], 1, L * _ACC_BYTES, "scalar", deps=[cp], label="tile += carry")
        store = e.gm_write(self.aivs[0], "MTE3", elems * self.p.out_bytes, writeback=True,
                           aligned=not self.p.exclusive, deps=[ch], label="y->GM")
        self.older, self.wr, self.chain = self.wr or self.older, store, ch

    def end_row(self) -> None:
        """What the AIVs' next pads wait for: AIV0 its last store's data out of UB, the others the cube's flag
        of the row's last tile (their last handshake)."""
        others = [self.e.flag(self.cube.fp, count=False)] * (len(self.aivs) - 1)
        self.aiv_free = [self.e.moved_out(self.wr), *others]

    def row_tiles(self) -> list[int]:
        """Elements of the row in each of its tiles."""
        per_row = math.ceil(self.length / self.L)
        return [self.L] * (per_row - 1) + [self.length - (per_row - 1) * self.L]


UL1_ROW_TILES = 24  # rows of up to this many tiles are simulated whole, the row being the loop's iteration


def _ul1_keep(per_row: int) -> tuple[tuple[int, int], int]:
    """Rows kept in the two truncated runs and the row count simulated exactly, for rows of per_row tiles
    (about 48 tiles kept per core)."""
    if per_row <= 2:
        return (16, 24), 40
    k2 = max(5, 48 // per_row)
    return (k2 - max(2, k2 // 3), k2), k2 + k2 // 2


def _build_scanul1_rows(engine: Engine, skip: int, lay: BatchedLayout, p: ScanParams, x_hit: bool,
                        rows: list[int]) -> None:
    """Every core's rows, a row per loop iteration (rows of at most UL1_ROW_TILES tiles)."""
    engine.phase = "scan"
    for w, count in enumerate(rows):
        core = _UL1Core(engine, w, p, lay.length, x_hit)
        tiles = core.row_tiles()

        def emit(r: int, core=core, tiles=tiles) -> None:
            core.start_row(tiles)
            for j, elems in enumerate(tiles):
                core.tile(j, elems)
            core.end_row()

        loop(engine, count, skip, emit)


def _build_scanul1_round(engine: Engine, skip: int, lay: BatchedLayout, p: ScanParams, x_hit: bool,
                         cores: int) -> None:
    """One row on each of `cores` cores, the tile loop truncated by `skip` (rows of more than UL1_ROW_TILES
    tiles): the pad covers the tiles kept, the full tiles skipped add their pad counters."""
    engine.phase = "scan"
    for w in range(cores):
        core = _UL1Core(engine, w, p, lay.length, x_hit)
        tiles = core.row_tiles()
        skipped = clamp_skip(len(tiles), skip)
        core.start_row(tiles[:2] + tiles[2 + skipped:], skipped)
        loop(engine, len(tiles), skip, lambda j, core=core, tiles=tiles: core.tile(j, tiles[j]))


def _simulate_scanul1(lay: BatchedLayout, p: ScanParams, hw, x_hit: bool, warm_l2: bool, force_exact: bool,
                      state) -> SimResult:
    """The batched ScanUL1's rows (_UL1Core). Rows of at most UL1_ROW_TILES tiles: all cores simulated
    together, the row being the loop's iteration. Longer rows, whose per-row costs are spread over many
    tiles: one row on every core simulated (its tile loop extrapolated), repeated once per row of a core,
    plus a last round on the cores that take one row more (a core's rows are separated by its pad and
    SyncGroup, so the cores, doing the same rows, run in step)."""
    rows = [c // lay.tiles_per_row for c in lay.per_worker]
    if lay.tiles_per_row <= UL1_ROW_TILES:
        keep, exact = _ul1_keep(lay.tiles_per_row)

        def build(engine: Engine, skip: int) -> None:
            _build_scanul1_rows(engine, skip, lay, p, x_hit, rows)

        return simulate(hw, build, max(rows), warm_l2=warm_l2, force_exact=force_exact, l2=state, keep=keep,
                        exact_limit=exact)
    parts = []
    for cores, times in ((len(rows), min(rows)), (rows.count(max(rows)), max(rows) - min(rows))):
        if times:
            def build(engine: Engine, skip: int, cores=cores) -> None:
                _build_scanul1_round(engine, skip, lay, p, x_hit, cores)

            run = simulate(hw, build, lay.tiles_per_row, warm_l2=warm_l2, force_exact=force_exact, l2=state)
            state = run.l2_end or state
            parts.append((run, times))
    return sequence(parts)


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
