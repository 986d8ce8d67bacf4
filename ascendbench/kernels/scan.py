"""The scan family of the scan paper: memcpy, vec-cumsum, ScanU, ScanUL1, MCScan, MCScanUL1.

Timing: each kernel issues, per core, the instructions the measured AscendC kernels issue, in their order and
with their queue depths, synchronisation and scalar reads (the authors' public code, repository
huawei-csl/pytorch-tcuscan; file:line below refers to its src/kernels/), on the simulated machine's pipes.
Every GM transfer names its range (buffers "x" input, "y" output, "ws_x" / "ws_r" padded workspaces, "sums",
"U"), so that L2 decides what hits and what is written back (sim/l2.py). Function: each kernel computes its
output in its own structure (tiles viewed as s x s matrices, multiplied by U_s, L^-_s, 1_s; fp16 inputs with
fp32 accumulation, int8 with int32), vectorised over tiles with NumPy (scan_numerics.py).

Sources: "Parallel Scan on Ascend AI Accelerators" (the scan paper): Algorithm 1 (ScanU), Algorithm 2 and
equation 4.1 (ScanUL1), Algorithm 3 (MCScan), §6.1.1 (L2 cache splitting, MCScanUL1), B.2 (exclusive, int8);
the kernels kernel_scan_single_core.h, kernel_row_scan.h, kernel_scan_multi_core.h, kernel_reduce_tiles.h,
kernel_complete_rows.h, kernel_scan_multi_cube.h, kernel_block_scan.h, kernel_complete_blocks.h,
kernel_pad.h, kernel_simple_pad.h and the entry points scan_multi_core.cpp, scan_multi_cube.cpp.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import ParamError, Verification, register
from ascendbench.kernels.programs import COPY_PIECE as _MEMCPY_PIECE
from ascendbench.kernels.programs import Ring as _Ring
from ascendbench.kernels.programs import aiv_groups, piece_elements
from ascendbench.kernels.programs import loop as _loop
from ascendbench.kernels.programs import split_front as _split
from ascendbench.kernels.scan_params import (
    _ACC_BYTES,
    _COMPLETE_ROWS_MAX_TILE,
    _CUMSUM_INFO,
    _CUMSUM_ROWS_PER_PASS,
    _MAX_EXPLICIT_CHUNKS,
    _RED2_SIZE,
    DTYPES,
    FP16_OVERFLOW,
    L2_STARTS,
    OUT_DTYPES,
    S_VALUES,
    UL1_ALGORITHMS,
    ScanOperatorParams,
    ScanParams,
    auto_chunk,
    chunk_lengths,
    first_overflowing_sum,
    l2_chunk_tiles,
)
from ascendbench.sim.engine import Dep, Engine, Op, gc_paused
from ascendbench.sim.l2 import L2Cache
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate_scaled

__all__ = [
    "DTYPES",
    "FP16_OVERFLOW",
    "L2_STARTS",
    "OUT_DTYPES",
    "SCAN_KERNELS",
    "S_VALUES",
    "UL1_ALGORITHMS",
    "CubeRowScan",
    "CubeUL1",
    "ScanKernel",
    "ScanOperatorParams",
    "ScanParams",
    "VecCumSumTile",
    "aiv_carry_tile",
    "auto_chunk",
    "chunk_lengths",
    "cumsum_last_axis",
    "expected_matmuls",
    "first_overflowing_row",
    "fp16_output_overflow",
    "l2_chunk_tiles",
    "l2_start",
    "simulate_fp32_cumsum",
    "ul1_overflow",
    "ul1_overflow_message",
]

def expected_matmuls(kernel: str, n: int, s: int) -> int:
    """Claim S-W1: ScanU and MCScan issue ceil(n/s^2) matrix multiplications, ScanUL1 3*ceil(n/s^2).
    MCScanUL1 runs ScanUL1 tile scans (3 per tile); memcpy and vec-cumsum issue none."""
    tiles = math.ceil(n / (s * s))
    return {"scanu": tiles, "mcscan": tiles, "scanul1": 3 * tiles, "mcscan-ul1": 3 * tiles}.get(kernel, 0)


def l2_start(hw: HardwareProfile, start: str) -> L2Cache:
    """An L2 in the named start state (L2_STARTS): "flushed" full of foreign dirty lines, otherwise empty (the
    kernels preload their input for "warm").

    Raises:
        ParamError: an unknown state."""
    if start not in L2_STARTS:
        raise ParamError("l2", f"must be one of {', '.join(L2_STARTS)}, got {start!r}")
    return L2Cache(hw.l2_cache_bytes, dirty_fill=hw.l2_cache_bytes if start == "flushed" else 0.0)


def _deps(dep) -> list:
    """A dependency or a list of them, as a list."""
    if dep is None:
        return []
    return list(dep) if isinstance(dep, list) else [dep]


def _region(buf: str, elem: int, elem_bytes: int) -> tuple[str, int]:
    return (buf, elem * elem_bytes)


# ---------------------------------------------------------------------------------------------------
# Cube-side tile programs (shared by the single-core and the multi-core scans)
# ---------------------------------------------------------------------------------------------------
class _CubeTiles:
    """What the cube tile programs share: legacy L2 flags (for the operators that give no GM ranges)."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams, x_hit: bool, y_writeback: bool):
        self.e, self.unit, self.p = engine, unit, p
        self.x_hit, self.y_wb = x_hit, y_writeback
        self.tile_in = p.s * p.s * p.in_bytes
        self.tile_acc = p.s * p.s * _ACC_BYTES

    def _read(self, nbytes: float, region, deps, label) -> Op:
        if region is None:
            return self.e.gm_read(self.unit, "MTE2", nbytes, l2_hit=self.x_hit, deps=deps, label=label)
        return self.e.gm_read(self.unit, "MTE2", nbytes, region=region, deps=deps, label=label)

    def _write(self, nbytes: float, region, deps, label) -> Op:
        if region is None:
            return self.e.gm_write(self.unit, "FIXPIPE", nbytes, writeback=self.y_wb, deps=deps, label=label)
        return self.e.gm_write(self.unit, "FIXPIPE", nbytes, region=region, deps=deps, label=label)

    def _load_constant(self, nbytes: int, region, label: str) -> Op:
        if region is None:
            return self.e.gm_read(self.unit, "MTE2", nbytes, l2_hit=False, label=label)
        return self.e.gm_read(self.unit, "MTE2", nbytes, region=region, label=label)


class CubeRowScan(_CubeTiles):
    """AIC program of ScanU / MCScan: per s*s tile, C = A @ U_s (kernel_row_scan.h KernelRowScan).

    U_s is loaded once (LoadBToL0, kernel_row_scan.h:106); every queue has depth 1 (kernel_row_scan.h:86-91).
    Per tile (CubeIter, :117-131): GM -> L1 (MTE2), L1 -> L0A (MTE1), Mmad, L0C -> GM (FIXPIPE). The scalar
    unit issues them in order and blocks in each DeQue / AllocTensor: the next tile's GM read is issued after
    this tile's Mmad has finished (CopyCL0ToGlobal's DeQue of co1 comes first), so it overlaps only the
    FIXPIPE write; the L1 -> L0A move waits for the previous Mmad (a2 freed), the Mmad for the previous
    FIXPIPE (co1 freed)."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams, x_hit: bool = False, y_writeback: bool = True,
                 u_region=None):
        super().__init__(engine, unit, p, x_hit, y_writeback)
        hw, s = engine.hw, p.s
        engine.alloc(unit, "L0B", self.tile_in, f"U_s (s={s})")
        engine.alloc(unit, "L0A", self.tile_in, f"s={s} input tile")
        engine.alloc(unit, "L0C", self.tile_acc, f"s={s} accumulator tile")
        engine.alloc(unit, "L1", 2 * self.tile_in, f"s={s} input tile and U_s")
        u = self._load_constant(self.tile_in, u_region, "U->L1")
        self.u_ready = engine.local_move(unit, "MTE1", self.tile_in, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                                         deps=[u], label="U->L0B")
        self.m1 = self.mm = self.fp = None

    def tile(self, publish_dep=None, x=None, y=None) -> Op:
        """One tile: x, y are the GM regions (buffer, byte offset) of its input and row scans (None: the legacy
        flags). publish_dep: what the GM read waits for besides the cube itself (the handshakes of the
        single-core and batched kernels; a dependency or a list of them). Returns the FIXPIPE write."""
        e, unit, s, hw = self.e, self.unit, self.p.s, self.e.hw
        m2 = self._read(self.tile_in, x, [self.m1, self.mm, *_deps(publish_dep)], "x->L1")
        self.m1 = e.local_move(unit, "MTE1", self.tile_in, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                               deps=[m2, self.mm], label="x->L0A")
        prev_fp = e.moved_out(self.fp) if self.fp is not None else None
        self.mm = e.cube(unit, s, s, s, self.p.dtype == "int8", deps=[self.m1, prev_fp, self.u_ready], label="A@U")
        self.fp = self._write(self.tile_acc, y, [self.mm], "C->GM")
        return self.fp


class CubeUL1(_CubeTiles):
    """AIC program of ScanUL1 / MCScanUL1: per tile C1 = A@1, C2 = A@U, C2 += L^-@C1 (kernel_block_scan.h
    KernelBlockScan::Process, :142-182). L^- is loaded once into L0A, [1] built in L1 and moved to L0B once,
    U loaded once into L1 (:126-140). Every queue has depth 1 (:100-112) and one L0C buffer serves C1 and C2,
    so a tile runs as a chain: A GM -> L1, A L1 -> L0A, Mmad C1, C1 L0C -> L1 through the FIXPIPE (fp32 ->
    fp16), U L1 -> L0B, Mmad C2, C1 L1 -> L0B, Mmad C2 += L^- C1, C2 L0C -> GM. The next tile's GM read is
    issued once this tile's last Mmad is done (the scalar unit waits in CopyCL0ToGlobal's DeQue first)."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams, x_hit: bool = False, y_writeback: bool = True,
                 u_region=None):
        super().__init__(engine, unit, p, x_hit, y_writeback)
        hw, s = engine.hw, p.s
        half = s * s * 2
        self.half = half
        engine.alloc(unit, "L0A", half + self.tile_in, f"L^-_s and s={s} input tile")
        engine.alloc(unit, "L0B", 2 * half, f"two s={s} right operands (1_s and U_s or C1)")
        engine.alloc(unit, "L0C", self.tile_acc, f"s={s} C1 / C2 accumulator")
        engine.alloc(unit, "L1", self.tile_in + 3 * half, f"s={s} input tile, U_s, 1_s and C1")
        consts = self._load_constant(2 * half, u_region, "U, L^- ->L1")
        self.lminus = engine.local_move(unit, "MTE1", half, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                                        deps=[consts], label="L^- ->L0A")
        self.ones = engine.local_move(unit, "MTE1", half, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                                      deps=[consts], label="1->L0B")
        self.a = self.mm2 = self.mm3 = self.fp = None

    def tile(self, publish_dep=None, x=None, y=None) -> Op:
        """One tile (see CubeRowScan.tile). Returns the FIXPIPE write of C2."""
        e, unit, s, hw = self.e, self.unit, self.p.s, self.e.hw
        int8 = self.p.dtype == "int8"
        rate = hw.l1_to_l0_bytes_per_cycle
        m2 = self._read(self.tile_in, x, [self.a, self.mm3, *_deps(publish_dep)], "x->L1")
        self.a = e.local_move(unit, "MTE1", self.tile_in, rate, "bytes_l1_to_l0", deps=[m2, self.mm2], label="x->L0A")
        prev_fp = e.moved_out(self.fp) if self.fp is not None else None
        mm1 = e.cube(unit, s, s, s, int8, deps=[self.a, self.ones, self.lminus, prev_fp], label="C1=A@1")
        f1 = e.local_move(unit, "FIXPIPE", self.tile_acc, hw.fixpipe_to_l1_bytes_per_cycle, "bytes_l0c_to_l1",
                          deps=[mm1], label="C1->L1 (fp16)")
        bu = e.local_move(unit, "MTE1", self.half, rate, "bytes_l1_to_l0", deps=[f1, self.mm3], label="U->L0B")
        self.mm2 = e.cube(unit, s, s, s, int8, deps=[bu, f1], label="C2=A@U")
        bc = e.local_move(unit, "MTE1", self.half, rate, "bytes_l1_to_l0", deps=[self.mm2], label="C1->L0B")
        self.mm3 = e.cube(unit, s, s, s, int8, deps=[bc, self.mm2], label="C2+=L^-@C1")
        self.fp = self._write(self.tile_acc, y, [self.mm3], "C2->GM")
        return self.fp


# ---------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------
class ScanKernel:
    """One scan kernel of the family (registry name, title, paper source); see the module docstring."""

    def __init__(self, name: str, title: str, source: str, *, cube: str | None, multi_core: bool):
        self.name, self.title, self.source = name, title, source
        self.cube_kind = cube  # None, "rowscan" or "ul1"
        self.multi_core = multi_core

    def __repr__(self) -> str:
        return f"ScanKernel({self.name!r})"

    # ----- parameters --------------------------------------------------------------------------------
    def check(self, n: int, params: ScanParams, hw: HardwareProfile) -> None:
        """Raise ParamError naming the parameter if `params` are not allowed for this kernel.

        Raises:
            ParamError: s not in 16/32/64/128; blocks < 1 or, for the multi-core scans, above the core count;
                chunk < 0; unknown dtype/out_dtype; fp16 output for int8 input; int8 with a ScanUL1 variant (C1 = A@1 would have to be fed back to the cube as int8).
            BufferCapacityError: a tile does not fit a buffer of `hw` (checked by building one tile's program).
        """
        if n < 0:
            raise ParamError("n", f"must be a non-negative integer, got {n}")
        if params.s not in S_VALUES:
            raise ParamError("s", f"must be one of {', '.join(map(str, S_VALUES))}, got {params.s}")
        if params.blocks is not None and params.blocks < 1:
            raise ParamError("blocks", f"must be at least 1, got {params.blocks}")
        if self.multi_core and params.blocks is not None and params.blocks > hw.ai_cores:
            # SyncAll and IBWait need every block resident at once (AscendC API reference, CANN 8.0.0: the
            # logical blockDim must not exceed the core count); the measured wrapper never launches more
            # blocks than AICs (torch_scan.h 198-204), and a launch with more hangs on the chip
            raise ParamError("blocks", f"must be at most {hw.ai_cores} (the AI cores of {hw.name}): {self.name} "
                                       f"synchronises all blocks with SyncAll, which hangs when blocks outnumber "
                                       f"the cores; got {params.blocks}")
        if params.chunk is not None and params.chunk < 0:
            raise ParamError("chunk", f"must be 0 (off), 'auto' or a positive element count, got {params.chunk}")
        if params.dtype not in DTYPES:
            raise ParamError("dtype", f"must be one of {', '.join(DTYPES)}, got {params.dtype!r}")
        allowed = ("int32",) if params.dtype == "int8" else ("fp32", "fp16")
        if params.out not in allowed:
            raise ParamError("out-dtype", f"for {params.dtype} input must be one of {', '.join(allowed)}, "
                                          f"got {params.out!r}")
        if self.cube_kind == "ul1" and params.dtype == "int8":
            raise ParamError("dtype", f"{self.name} supports fp16 only: C1 = A@1 is fed back to the cube and "
                                      "int8 row sums overflow int8; use scanu or mcscan for int8")
        # Buffer capacities: building one small program allocates every buffer the kernel needs.
        tile = params.s**2
        self._builder(hw, replace(params), tile + 1, 0, tile + 1, False)(Engine(hw), 0)

    def tile_elements(self, params: ScanParams) -> int:
        """Elements of the kernel's tile: s^2 (CumSum's 128 x 128 for vec-cumsum, a copy piece for memcpy)."""
        if self.name == "vec-cumsum":
            return _CUMSUM_INFO[0] * _CUMSUM_INFO[1]
        if self.name == "memcpy":
            return _MEMCPY_PIECE
        return params.s**2

    # ----- timing ------------------------------------------------------------------------------------
    def simulate(self, n: int, params: ScanParams, hw: HardwareProfile, warm_l2: bool = False,
                 force_exact: bool = False, l2: str | None = None) -> SimResult:
        """Simulated run of this kernel on n elements: time, phases, pipe busy time, counters, timeline.

        l2: what L2 holds at the start (L2_STARTS; default "flushed", as the papers measured, or "warm" when
        warm_l2). Raises ParamError / BufferCapacityError as `check` does. Runs in milliseconds at any n (long
        loops are extrapolated from a few simulated iterations unless force_exact)."""
        self.check(n, params, hw)
        # one pause over all chunks: between the runs the collector would otherwise scan every run's ops again
        # (the programs hold no reference cycles once run: Engine.unlink)
        with gc_paused():
            return self._simulate(n, params, hw, warm_l2, force_exact, l2)

    def _simulate(self, n: int, params: ScanParams, hw: HardwareProfile, warm_l2: bool = False,
                  force_exact: bool = False, l2: str | None = None) -> SimResult:
        """simulate without its parameter checks (simulate_fp32_cumsum's fp32 input is no scan dtype)."""
        start = l2 if l2 is not None else ("warm" if warm_l2 else "flushed")
        state = l2_start(hw, start)
        launch = fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)
        if n == 0:
            return launch
        tile = self.tile_elements(params)
        size, count, last = chunk_lengths(n, params, hw, tile) if self.multi_core else (n, 1, n)
        warm = start == "warm"
        # Every L2 chunk runs the same program on the next stretch of the vector, from the L2 state the one
        # before left. Full chunks are simulated one after another until one starts with L2 full (from then
        # on every chunk evicts what the one before it wrote: the steady state), and that one is repeated;
        # a shorter last chunk starts from what a full chunk leaves.
        first = self._chunk(hw, params, n, 0, size if count > 1 else last, state, warm, force_exact)
        parts: list[tuple[SimResult, int]] = [(launch, 1), (first, 1)]
        # Between chunks: SyncAll, then every core reads the previous chunk's last output from GM as the
        # next chunk's starting value (scan_multi_core.cpp:73-80; GetGMValue, tcuscan_utils.h:1467-1480:
        # invalidate the line, then a scalar read, which L2 serves). Each chunk after the first starts with
        # it, so that the timeline shows it between the chunks.
        sync = fixed_cost(hw, hw.sync_all_cycles + hw.l2_hit_latency_cycles, "chunk sync", sync_all=1)

        def after_sync(chunk: SimResult) -> SimResult:
            return sequence([(sync, 1), (chunk, 1)])

        done, prev = 1, first
        fulls = count - 1 if last == size else count - 2
        while done <= fulls:
            start = prev.l2_end
            steady = start.used >= start.capacity * (1 - 1e-6) or done >= _MAX_EXPLICIT_CHUNKS
            chunk = self._chunk(hw, params, n, done * size, size, start, False, force_exact)
            repeat = fulls - done + 1 if steady else 1
            parts.append((after_sync(chunk), repeat))
            done, prev = done + repeat, chunk
        if done < count:
            parts.append((after_sync(self._chunk(hw, params, n, done * size, last, prev.l2_end, False, force_exact)),
                          1))
        return sequence(parts)

    def _chunk(self, hw, params, n: int, offset: int, length: int, state: L2Cache, warm: bool,
               force_exact: bool) -> SimResult:
        """One kernel invocation on elements [offset, offset + length) of the vector (a whole single-core
        scan, or one L2 chunk of a multi-core scan), from L2 state `state` (its end state: result.l2_end),
        simulated on smaller instances of the same problem and extrapolated (sim.result.simulate_scaled)."""
        units, resize, window = self._scaling(hw, params, n, length)

        def build(engine: Engine, u: int) -> None:
            # the stretch of the vector scaled too (L2Cache.rescaled scales the addresses of what it holds): the
            # next chunk's instance at any scale starts where the previous chunk's ended, as in the full problem
            self._builder(hw, params, n, offset if u == units else round(offset * u / units), resize(u),
                          warm)(engine, 0)

        def count(engine: Engine) -> None:
            self._builder(hw, params, n, offset, length, warm)(engine, 1 << 62)

        options: dict = {}
        if self.multi_core:
            # Instances of 16 or 24 steps can be short of the steady state (at s = 32 a step is a few hundred
            # cycles): a third instance checks it (simulate_scaled).
            options["steady"] = _STEADY
            if self._aivs_lead(hw, params, n, length):
                # Block b's AIVs start b tiles ahead of its cube, which changes who pays each L2 miss. No smaller
                # instance keeps that lead in proportion (it is b tiles at any size, and odd instances scatter by
                # a few percent per step): up to _EXACT_LEAD steps the invocation runs exactly, beyond that its
                # instances keep the parity of the tiles per block, so that their AIVs lead too.
                options.update(exact_limit=_EXACT_LEAD, keep=(17, 25))
        # Every core is simulated: cores that stream through HBM drift apart and keep it busy together, which
        # one representative moving its whole group's bytes at once cannot show.
        return simulate_scaled(hw, build, units, count, force_exact=force_exact, l2=state, window=window,
                               group_cores=False, **options)

    def _aivs_lead(self, hw, params, n: int, length: int) -> bool:
        """Whether the AIVs' shares of the phase I reduction of an invocation of `length` elements do not start
        where their cube's share does (_layout: MCScanUL1 with an odd number of tiles per block, whose 2B AIVs
        take ceil(t / 2B) tiles each: block b's AIVs start b tiles ahead of its cube). Both shares are the measured
        kernel's GetWorkDistribution (tcuscan_utils.h:1393-1408), over the B cubes and over the 2B AIVs' reduce
        tiles of s^2 (KernelReduceTiles<InputT, 1>(s^2, ...), kernel_scan_multi_cube.h:106)."""
        tile = self.tile_elements(params)
        lay = _layout(params, length, _blocks(hw, params, n, tile), self.cube_kind == "ul1")
        return 2 * lay.reduce[0] * lay.reduce_tile != lay.cube[0] * tile

    def _scaling(self, hw, params, n: int, length: int) -> tuple[int, Callable[[int], int], float]:
        """How one invocation of `length` elements scales (simulate_scaled): its steps (tiles per core of the
        longest loop), the length of the same problem with u steps (the same partial last tile), and for the
        multi-core scans the bytes the cores have in flight at once, twice over (a scaled run's L2 must hold
        them: what one unit reuses from another a step later must still hit; 0 for one core and memcpy)."""
        tile = self.tile_elements(params)
        tail = length % tile
        per_elem = params.in_bytes + _ACC_BYTES
        if self.name == "memcpy":
            pieces = math.ceil(length / tile)
            per = max(_split(pieces, hw.aiv_cores))
            return per, (lambda u: min(length, max(1, round(length * u / per)))), 0.0  # nothing is reused
        if self.multi_core:
            blocks = _blocks(hw, params, n, tile)
            tiles = math.ceil(length / tile)
            per = math.ceil(tiles / blocks)

            def resize(u: int) -> int:
                t = min(tiles, max(1, round(tiles * u / per)))
                return (t - 1) * tile + tail if tail else t * tile

            return per, resize, 4 * blocks * tile * per_elem
        # One core streams through the vector: the scaled instances need no L2 floor (with the floor of what it
        # has in flight they grew to hundreds of steps, 50-2,700 ms, and came out up to 1.1% off the exact run;
        # without it they match the exact run at n = 2e8 in every variant: tests/sim/test_extrapolation.py)
        full = length // tile
        return max(full, 1), (lambda u: min(length, u * tile + tail)), 0.0

    def _builder(self, hw, params, n: int, offset: int, length: int, warm: bool):
        """build(engine, skip) of one invocation (see _chunk)."""

        def build(engine: Engine, skip: int) -> None:
            if self.name == "memcpy":
                _build_memcpy(engine, skip, params, offset, length, warm)
            elif self.name == "vec-cumsum":
                _build_vec_cumsum(engine, skip, params, offset, length, warm)
            elif not self.multi_core:
                _build_single_core(engine, skip, params, offset, length, self.cube_kind, warm)
            else:
                _build_multi_core(engine, skip, params, n, offset, length, self.cube_kind, warm)

        return build

    # ----- function ----------------------------------------------------------------------------------
    def compute(self, x: np.ndarray, params: ScanParams, progress: Callable[[int], None] | None = None,
                hw: HardwareProfile | None = None) -> np.ndarray:
        """The kernel's output for x, computed in the algorithm's structure.

        x: (n,) float16 or int8 (as params.dtype). Returns (n,) float32 (default), float16 (out_dtype fp16)
        or int32 (int8 input; wraps modulo 2^32 like the cube's int32 accumulation). `progress(k)` is
        called with the number of elements finished.
        """
        from ascendbench.kernels import scan_numerics

        return scan_numerics.compute(self.name, x, params, progress, hw)

    def verify(self, x: np.ndarray, y: np.ndarray, params: ScanParams, hw: HardwareProfile | None = None) -> Verification:
        """Compare y with a float64 (int64 for int8, wrapped to int32) NumPy reference; see scan_numerics.verify.
        hw must be the profile compute() used (it fixes the multi-core carry chains)."""
        from ascendbench.kernels import scan_numerics

        return scan_numerics.verify(self.name, x, y, params, hw)


_STEADY = 0.005  # simulate_scaled's steady-state check: the agreement with the exact run asked of an extrapolation
# Invocations whose AIVs lead their cube run exactly up to this many steps: an L2 chunk at s = 32 on the profiles
# (820 to 1,366 steps), whose exact run costs about what the steady-state check spends on it (MCScanUL1 at s = 32,
# fp16 output, 5e7: 0.90M ops exact; the check's odd instances 0.89M, and they agreed by chance, 5.0% off)
_EXACT_LEAD = 1600


def _blocks(hw: HardwareProfile, params: ScanParams, n: int, tile: int) -> int:
    """block_dim of a multi-core launch: min(#AIC, tiles of the whole vector) (torch_scan.h:198-204), or the
    user's --blocks."""
    return max(1, min(params.blocks or hw.ai_cores, math.ceil(n / tile)))


# ----- programs -------------------------------------------------------------------------------------
def _preload_input(engine: Engine, groups: list[tuple[int, int, int]], in_bytes: int) -> None:
    """Warm start: the inputs of the representative units (first element, elements, weight) resident and
    clean, the most recent last, as the kernel that produced the input left them."""
    for first, elems, weight in groups:
        if elems > 0:
            engine.cache.access("x", first * in_bytes, (first + elems) * in_bytes, weight, False)


def _build_memcpy(engine: Engine, skip: int, p: ScanParams, offset: int, n: int, warm: bool) -> None:
    """The memcpy reference (torch.clone): every AIV copies its contiguous share of the vector in pieces of
    COPY_PIECE elements through UB, read and write double-buffered. torch.clone's kernel is not public; this
    is the copy that AscendC's tutorial kernels do."""
    hw = engine.hw
    engine.phase = "copy"
    in_b, out_b = p.in_bytes, p.out_bytes
    piece = piece_elements(hw, in_b, out_b)
    per_aiv = _split(math.ceil(n / piece), hw.aiv_cores)
    firsts = [sum(per_aiv[:w]) for w in range(len(per_aiv))]
    if warm:
        _preload_input(engine, [(offset + firsts[w] * piece, c * piece, 1) for w, c in enumerate(per_aiv)],
                       p.in_bytes)
    for w, unit, count, tail in aiv_groups(engine, per_aiv, n, piece):
        base = offset + firsts[w] * piece
        engine.alloc(unit, "UB", 2 * piece * (p.in_bytes + p.out_bytes), "copy pieces (2 buffers of input and output)")
        ring = _Ring(2)

        def emit(i: int, unit=unit, ring=ring, tail=tail, last=count - 1, base=base) -> None:
            elems = min(tail, piece) if i == last else piece
            first = base + i * piece
            rd = engine.gm_read(unit, "MTE2", elems * in_b, region=_region("x", first, in_b),
                                deps=[ring.wait()], label="in")
            dep = rd
            if in_b != out_b:
                dep = engine.vector(unit, elems * out_b, deps=[rd], label="cast")
            wr = engine.gm_write(unit, "MTE3", elems * out_b, region=_region("y", first, out_b),
                                 deps=[dep], label="out")
            ring.push(engine.moved_out(wr))

        _loop(engine, count, skip, emit)


def cumsum_last_axis(engine: Engine, unit: str, outer: int, inner: int, in_bytes: int,
                     deps: Sequence[Dep] = (), adds_per_row: int = 1, label: str = "CumSum") -> Op:
    """AscendC CumSum along the last axis of an (outer, inner) tile in UB, as asc-devkit implements it
    (impl/aicore/adv_api/detail/math/cumsum/cumsum_common_impl.h). CumSumImpl scans the rows in passes of
    tmp_size / min_tmp_size * 16 rows; the temporary buffer is taken at GetCumSumMaxMinTmpSize's minimum (as
    the public operators that call CumSum pass it, e.g. MoeDistributeDispatchV2's tiling: cumSumUBMinValue),
    so a pass covers _CUMSUM_ROWS_PER_PASS = 16 rows. Each pass (CumSumLastDim) transposes its 16 rows
    (TransDataTo5HD, 2 cycles per repeat: pypto VNCHWCONV), casts fp16 to fp32, adds column after column
    (inner - 1 Adds over the 16 rows, each followed by PipeBarrier<PIPE_V>), casts back, transposes back and
    copies to the destination (Adds of 0); a PipeBarrier<PIPE_V> separates the steps, so each waits for the
    previous result. `adds_per_row` dependent instructions per column (2 for a segmented scan's add and
    select). in_bytes: 2 (fp16, cast to fp32 and back) or 4 (fp32). Returns the last op."""
    rows = min(outer, _CUMSUM_ROWS_PER_PASS)
    last: Op | None = None
    for first in range(0, outer, rows):
        n = min(rows, outer - first) * inner
        step = engine.vector(unit, n * in_bytes, deps=[*deps, last], label=f"{label}: transpose",
                             per_repeat=2.0)
        if in_bytes != _ACC_BYTES:
            step = engine.vector(unit, n * _ACC_BYTES, deps=[step], label=f"{label}: cast")
        step = engine.vector_chain(unit, adds_per_row * (inner - 1), min(rows, outer - first) * _ACC_BYTES,
                                   "barrier", deps=[step], label=f"{label}: Adds")
        passes = 3 if in_bytes != _ACC_BYTES else 2  # (cast back,) transpose back, copy out
        last = engine.vector(unit, n * _ACC_BYTES, deps=[step], label=f"{label}: back", passes=passes)
    return last


class VecCumSumTile:
    """AIV program of the vector-only baseline (scan paper §4.1): AscendC CumSum with CumSumInfo (128, 128) per
    128 x 128 tile (see cumsum_last_axis), then the row carries. The baseline kernel itself is not public: its
    carries are modelled as one dependent Adds and scalar read per row of 128, as the scan kernels' carry loop
    does."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams, x_hit: bool = False, regions: bool = False):
        outer, inner = _CUMSUM_INFO
        self.e, self.unit, self.p, self.x_hit, self.regions = engine, unit, p, x_hit, regions
        self.tile_elems = outer * inner
        # fp32 input (simulate_fp32_cumsum) is scanned as it is: no cast, so no work buffer beside the transpose
        work = 1 if p.in_bytes == _ACC_BYTES else 2
        engine.alloc(unit, "UB", 2 * self.tile_elems * p.in_bytes + work * self.tile_elems * _ACC_BYTES,
                     "CumSum 128x128 tile (2 input buffers, " + ("transpose buffer)" if work == 1 else
                                                                 "work and transpose buffers)"))
        self.ring = _Ring(2)
        self.prev: Op | None = None

    def tile(self, first: int | None = None) -> Op:
        """One tile (its first element `first` when the program gives GM ranges). Returns the write."""
        outer, inner = _CUMSUM_INFO
        e, unit, p, tile = self.e, self.unit, self.p, self.tile_elems
        if self.regions:
            rd = e.gm_read(unit, "MTE2", tile * p.in_bytes, region=_region("x", first, p.in_bytes),
                           deps=[self.ring.wait(), self.prev], label="x->UB")
        else:
            rd = e.gm_read(unit, "MTE2", tile * p.in_bytes, l2_hit=self.x_hit, deps=[self.ring.wait(), self.prev],
                           label="x->UB")
        scan = cumsum_last_axis(e, unit, outer, inner, p.in_bytes, deps=[rd])
        carry = e.vector_chain(unit, outer, inner * _ACC_BYTES, "scalar", deps=[scan, self.prev],
                               label="row carries")
        self.prev = carry
        if self.regions:
            wr = e.gm_write(unit, "MTE3", tile * p.out_bytes, region=_region("y", first, p.out_bytes),
                            aligned=not p.exclusive, deps=[carry], label="y->GM")
        else:
            wr = e.gm_write(unit, "MTE3", tile * p.out_bytes, writeback=True, aligned=not p.exclusive, deps=[carry],
                            label="y->GM")
        self.ring.push(e.moved_out(wr))
        return wr


def simulate_fp32_cumsum(n: int, hw: HardwareProfile, *, l2: str = "flushed") -> SimResult:
    """Simulated vector-only CumSum of n float32 inputs to float32 outputs: vec-cumsum's program (AscendC
    CumSum, CumSumInfo (128, 128), on one AIV, scan paper §4.1) with 4-byte input, which CumSum scans as it is
    (cumsum_last_axis skips the casts to and from fp32; the measured kernels call CumSum<float> on fp32 tiles
    as they are: pytorch-tcuscan src/kernels/kernel_seg_scan_vec_single_core.h:116-121). For operators on fp32
    data (top-p on fp32 probabilities, whose reference sums the sorted probabilities in their own dtype:
    scripts/profiling/profile_tcuscan_ops.py:391-392): the cube scans have no fp32 model here (the profiles give the cube's fp16 and int8 rates
    only), and `run scan` has no fp32 dtype.

    Args:
        n: elements (>= 0). hw: the profile. l2: what L2 holds at the start (L2_STARTS).

    Returns:
        SimResult (time in cycles, phases, counters).

    Raises:
        ParamError: n < 0 or an unknown l2; BufferCapacityError: the tile does not fit the profile's UB.
    """
    if n < 0:
        raise ParamError("n", f"must be a non-negative integer, got {n}")
    if l2 not in L2_STARTS:
        raise ParamError("l2", f"must be one of {', '.join(L2_STARTS)}, got {l2!r}")
    return SCAN_KERNELS["vec-cumsum"]._simulate(n, ScanParams(dtype="fp32"), hw, l2=l2)


def _build_vec_cumsum(engine: Engine, skip: int, p: ScanParams, offset: int, n: int, warm: bool) -> None:
    """Vector-only baseline (scan paper §4.1) on one AIV; see VecCumSumTile."""
    engine.phase = "scan"
    tile = _CUMSUM_INFO[0] * _CUMSUM_INFO[1]
    if warm:
        _preload_input(engine, [(offset, n, 1)], p.in_bytes)
    prog = VecCumSumTile(engine, "core0.aiv0", p, regions=True)
    tiles = math.ceil(n / tile)

    _loop(engine, tiles, skip, lambda i: prog.tile(offset + i * tile))


def aiv_carry_tile(engine: Engine, aiv: str, p: ScanParams, cube_kind: str, cube_done: Op, prev: Op | None) -> Op:
    """AIV side of ScanU / ScanUL1 for one s*s tile the cube wrote to GM (op `cube_done`), for the operators
    that give no GM ranges: wait for its flag and for the previous tile (`prev`), read it, add the carry (per
    row of s for ScanU, once per tile for ScanUL1), write it back in place. Returns the write."""
    s, L = p.s, p.s * p.s
    rd = engine.gm_read(aiv, "MTE2", L * _ACC_BYTES, l2_hit=True, deps=[engine.flag(cube_done), prev],
                        label="C->UB")
    cp = engine.ub_copy(aiv, L * _ACC_BYTES, deps=[rd])
    if cube_kind == "rowscan":
        vec = engine.vector_chain(aiv, s, s * _ACC_BYTES, "scalar", deps=[cp], label="rows += carry")
    else:
        vec = engine.vector_chain(aiv, 1, L * _ACC_BYTES, "scalar", deps=[cp], label="tile += carry")
    return engine.gm_write(aiv, "MTE3", L * p.out_bytes, writeback=True, aligned=not p.exclusive, deps=[vec],
                           label="y->GM")


def _simple_pad(engine: Engine, aiv: str, p: ScanParams, first: int, tail: int, L: int) -> Op:
    """KernelSimplePad (kernel_simple_pad.h:57-74) on AIV 0 of block 0: the tail of the vector (fewer than s^2
    elements) is copied through UB into the zero-filled workspace tile (the host zeroed it,
    torch_scan.h:76-79). Queues of depth 1."""
    rd = engine.gm_read(aiv, "MTE2", tail * p.in_bytes, region=_region("x", first, p.in_bytes), label="tail->UB")
    cp = engine.ub_copy(aiv, L * p.in_bytes, deps=[rd])
    return engine.gm_write(aiv, "MTE3", tail * p.in_bytes, region=("ws_x", 0), deps=[cp], label="tail->workspace")


def _build_single_core(engine: Engine, skip: int, p: ScanParams, offset: int, n: int, cube_kind: str,
                       warm: bool) -> None:
    """ScanU (Algorithm 1) / ScanUL1 (Algorithm 2) on core 0 (kernel_scan_single_core.h run_scan_single_core,
    :193-244).

    The aligned part: the cube scans tile after tile (KernelRowScan<SyncAfter>, or for ScanUL1 the block scan
    KernelBlockScan<SyncAfter>, kernel_block_scan.h, whose single-core entry point is not public) and after
    each tile meets AIV0 in a full handshake (SyncGroup FULL, tcuscan_utils.h:1215-1227: the AIC sets its
    flag from the FIXPIPE once the tile is written and blocks until the AIVs' flags; each AIV sets its flag
    from MTE3 once its previous tile is stored and blocks until the AIC's). So the cube scans tile i + 1 while
    AIV0 finishes tile i. AIV0 per tile (KernelCompleteRows, :84-120; queues of depth 1): read the tile, copy
    it to the output buffer in UB, then per row of s Adds the carry and GetValue of the row's last element
    (ScanU; ScanUL1: one Adds of the whole tile and one GetValue), PipeBarrier<PIPE_ALL>, store. AIV1 only
    takes part in the handshakes. A tail of n mod s^2 elements is first padded into a workspace tile
    (KernelSimplePad) and scanned last, through the workspace (:221-243).
    """
    s, L = p.s, p.s * p.s
    aic, aiv = "core0.aic", "core0.aiv0"
    ul1 = cube_kind == "ul1"
    engine.phase = "scan"
    tiles, tail = n // L, n % L
    if warm:
        _preload_input(engine, [(offset, n, 1)], p.in_bytes)
    cube = (CubeUL1 if ul1 else CubeRowScan)(engine, aic, p, u_region=("U", 0))
    engine.alloc(aiv, "UB", 2 * L * _ACC_BYTES, f"s={s} fp32 tile (input and output queues)")
    pad = _simple_pad(engine, aiv, p, offset + tiles * L, tail, L) if tail else None
    # AIV0's flag of its first handshake goes out as it starts (nothing stored yet)
    started = engine.compute(aiv, "SCALAR", 0.0, deps=[pad], label="SyncGroup")
    # the AIV's last store and carry loop, and its store before that (the cube's handshake waits for it)
    state: dict[str, Op | None] = {"wr": None, "chain": None, "older": started}

    def aiv_tile(cube_done: Op, src, dst, elems: int) -> None:
        # the scalar unit issues the read once the handshake is done and the previous carry loop is over
        rd = engine.gm_read(aiv, "MTE2", L * _ACC_BYTES, region=src, deps=[engine.flag(cube_done), state["chain"]],
                            label="C->UB")
        prev_wr = engine.moved_out(state["wr"]) if state["wr"] is not None else None
        cp = engine.ub_copy(aiv, L * _ACC_BYTES, deps=[rd, prev_wr])
        if ul1:
            ch = engine.vector_chain(aiv, 1, L * _ACC_BYTES, "scalar", deps=[cp], label="tile += carry")
        else:
            ch = engine.vector_chain(aiv, s, s * _ACC_BYTES, "scalar", deps=[cp], label="rows += carry")
        state["older"], state["chain"] = state["wr"] or state["older"], ch
        state["wr"] = engine.gm_write(aiv, "MTE3", elems * p.out_bytes, region=dst, aligned=not p.exclusive,
                                      deps=[ch], label="y->GM")

    def emit(i: int) -> None:
        first = offset + i * L
        # The AIC scans tile i after its handshake of tile i - 1, whose AIV flag goes out once AIV0 has stored
        # tile i - 2 (tile 0 waits for nothing but the pad).
        wait = engine.flag(state["older"]) if i > 0 else pad
        fp = cube.tile(wait, x=_region("x", first, p.in_bytes), y=_region("y", first, _ACC_BYTES))
        aiv_tile(fp, _region("y", first, _ACC_BYTES), _region("y", first, p.out_bytes), L)

    if tiles:
        _loop(engine, tiles, skip, emit)
    if tail:
        engine.phase = "tail"
        wait = engine.flag(state["wr"]) if state["wr"] is not None else pad
        fp = cube.tile(wait, x=("ws_x", 0), y=("ws_r", 0))
        aiv_tile(fp, ("ws_r", 0), _region("y", offset + tiles * L, p.out_bytes), tail)


@dataclass(frozen=True)
class _Layout:
    """How one invocation of a multi-core scan lays its m elements on B blocks (the work distributions of the
    measured kernels, GetWorkDistribution, tcuscan_utils.h:1393-1408: ceil(tiles / workers) tiles per worker
    from the front)."""

    m: int  # elements of the invocation
    padded: bool  # m is not a multiple of s^2: the padded path (kernel_scan_multi_core.h:84-118)
    blocks: int
    cube: list[int]  # tiles of s^2 per block
    reduce_tile: int  # elements per phase I reduce tile
    reduce: list[int]  # reduce tiles per AIV
    reduce_len: int  # elements the reduction covers
    add_tile: int  # elements per phase II tile
    add_rows: int  # rows of s per phase II tile (1 row of s^2 for MCScanUL1)
    add: list[int]  # phase II tiles per AIV
    pad: list[int]  # pad pieces (s^2 elements) per AIV


def _layout(p: ScanParams, m: int, blocks: int, ul1: bool) -> _Layout:
    s, L = p.s, p.s * p.s
    padded = m % L != 0
    m_c = -(-m // L) * L  # padded_vec_len_c
    aivs = 2 * blocks
    cube = _split(m_c // L, blocks)
    if ul1:
        reduce_tile, reduce_len = L, m_c  # KernelReduceTiles<InputT, 1>(s^2, ...) (kernel_scan_multi_cube.h:106)
        add_tile, add_rows = L, 1  # KernelCompleteBlocks(vec_len, s^2, s^2) (:115)
    else:
        reduce_tile = L // 2  # KernelReduceTiles(s^2 / 2, padded_vec_len_v) (kernel_scan_multi_core.h:105)
        reduce_len = -(-m // reduce_tile) * reduce_tile if padded else m
        add_rows = min(s // 2, -(-_COMPLETE_ROWS_MAX_TILE // s))  # kernel_complete_rows.h:49-50
        add_tile = s * add_rows
    reduce = _split(-(-reduce_len // reduce_tile), aivs)
    add = _split(-(-m // add_tile), aivs)
    pad = _split(-(-m // L), aivs) if padded else [0] * aivs
    return _Layout(m, padded, blocks, cube, reduce_tile, reduce, reduce_len, add_tile, add_rows, add, pad)


def _reduce_tile(engine: Engine, aiv: str, p: ScanParams, elems: int, deps: list) -> Op:
    """The vector work of one phase I reduce tile after its read (kernel_reduce_tiles.h:88-132): fp16 -> fp32
    Cast, ReduceSum of the tile and `sum += GetAccVal()` (a scalar read after the vector pipe), one op per
    step; int8: Cast int8 -> half -> int32 (the vector unit has no direct cast) and ReduceVecAdd into a
    512-element accumulator, one dependent Add per 512 elements (tcuscan_utils.h:1657-1675)."""
    hw = engine.hw
    if p.dtype == "int8":
        c1 = engine.vector(aiv, elems * 2, deps=deps, label="Cast int8->half")
        c2 = engine.vector(aiv, elems * _ACC_BYTES, deps=[c1], label="Cast half->int32")
        red1 = max(elems // 16, 1) if elems // 16 > _RED2_SIZE else max(elems // 4, 1)
        return engine.vector_chain(aiv, max(1, elems // red1), red1 * _ACC_BYTES, "barrier", deps=[c2],
                                   label="ReduceVecAdd")
    cast = engine.vector(aiv, elems * _ACC_BYTES, deps=deps, label="Cast fp16->fp32")
    # ReduceSum over `elems` fp32: whole-repeat reductions (64 -> 1 per repeat) level after level
    levels, left = 0, elems
    issue = 0.0
    while left > 1:
        repeats = math.ceil(left * _ACC_BYTES / hw.vector_bytes_per_repeat)
        issue += repeats * hw.vector_reduce_cycles_per_repeat
        levels += 1
        left = repeats
    lat = hw.vector_reduce_latency_cycles
    red = engine.compute(aiv, "VECTOR", issue + (levels - 1) * (lat + hw.vector_barrier_cycles), deps=[cast],
                         label="ReduceSum", latency=lat)
    engine._count(aiv, (("vector_instructions", levels), ("vector_barriers", max(levels - 1, 0))))
    return engine.compute(aiv, "SCALAR", hw.vector_scalar_sync_cycles + hw.scalar_op_cycles, deps=[red],
                          label="sum += GetAccVal")


def _aiv(q: int) -> str:
    """Unit name of physical AIV q of a multi-core scan (two per AI core: vec_cube_ratio 2,
    kernel_scan_batch.h)."""
    return f"core{q // 2}.aiv{q % 2}"


def _working(aiv_reps: list[tuple[int, int]], waves: list[list[int]], counts: list[int]):
    """(v, unit, count) of the logical AIVs with work in a loop of `counts` iterations per logical AIV, on the
    representative physical AIVs (waves[q]: the logical AIVs physical AIV q runs, in order)."""
    for q, _weight in aiv_reps:
        for v in waves[q]:
            if counts[v]:
                yield v, _aiv(q), counts[v]


def _build_multi_core(engine: Engine, skip: int, p: ScanParams, n: int, offset: int, m: int, cube_kind: str,
                      warm: bool) -> None:
    """MCScan (Algorithm 3, kernel_scan_multi_core.h) / MCScanUL1 (§6.1.1, kernel_scan_multi_cube.h) on one
    invocation of m elements (an L2 chunk or the whole vector), the chunk starting at element `offset`.

    Padded path (m not a multiple of s^2, :84-118): all AIVs copy the chunk into a zero-padded workspace
    (KernelPad, kernel_pad.h: pieces of s^2 elements through UB, double-buffered), SyncAll; the cube scans the
    workspace into a second workspace; phase II writes the output from there. Otherwise (:119-151) phase II
    works in place on the output.

    Phase I, concurrently: every block's cube scans its tiles (CubeRowScan / CubeUL1) while the 2B AIVs
    reduce the input (KernelReduceTiles: tiles of s^2 / 2 elements and a queue of depth 2 for MCScan, s^2 and
    depth 1 for MCScanUL1; each AIV writes its sum to GM). The scalar unit waits for each tile's reduction
    (GetAccVal) before it issues the next read. SyncAll.

    Phase II (AIVs): each AIV reads the sums (all 2B for MCScan, one per s^2 tile for MCScanUL1), adds those
    of the lower-numbered AIVs with the scalar unit, then walks its tiles: read (depth 2 / 1), copy to the
    output buffer in UB, the carry loop (per row of s: Adds and GetValue, kernel_complete_rows.h:144-161;
    MCScanUL1: one Adds per s^2 tile and one GetValue, kernel_complete_blocks.h:164-179), store. The
    scalar unit is blocked in the carry loop, so the next tile's read is issued only after it.

    More blocks than AI cores (--blocks; the measured wrapper never launches them, torch_scan.h:198-204):
    block b runs on core b % cores and its AIVs 2b, 2b + 1 on that core's two AIVs, in waves: in every phase
    a core's later block starts when its earlier block has finished the phase. On the chip such a launch
    hangs (SyncAll and IBWait need the logical blockDim <= the cores, AscendC API reference, CANN 8.0.0:
    multi-round scheduling inserts abnormal synchronisation); the model times it as if it ran.
    """
    hw = engine.hw
    s, L = p.s, p.s * p.s
    ul1 = cube_kind == "ul1"
    blocks = _blocks(hw, p, n, L)
    lay = _layout(p, m, blocks, ul1)
    cores = hw.ai_cores
    in_b, out_b = p.in_bytes, p.out_bytes
    x_buf, x0 = ("ws_x", 0) if lay.padded else ("x", offset)  # what the cube and the reduction read
    # where the row scans go: in place in the output, or a workspace when padded or exclusive (:124-125)
    r_buf, r0 = ("ws_r", 0) if lay.padded or p.exclusive else ("y", offset)
    shift = 1 if p.exclusive else 0
    aivs = 2 * blocks
    rmax = max(lay.reduce) if lay.reduce else 0
    amax = max(lay.add) if lay.add else 0
    cmax = max(lay.cube)
    pmax = max(lay.pad)
    # Block b runs on core b % cores, its AIVs 2b, 2b + 1 on that core's two AIVs (waves when there are more
    # blocks than cores: a core's later block starts a phase's work when its earlier one has finished it).
    # Units with the same program are simulated once, weighted; AIVs are grouped by all their loops.
    core_blocks = [[b for b in range(blocks) if b % cores == c] for c in range(min(cores, blocks))]
    cube_reps = engine.groups([tuple(lay.cube[b] for b in bl) for bl in core_blocks])
    waves = [[2 * b + q % 2 for b in core_blocks[q // 2]] for q in range(2 * len(core_blocks))]
    aiv_reps = engine.groups([(q % 2, *((lay.reduce[v], lay.add[v], lay.pad[v], v == aivs - 1) for v in wave))
                              for q, wave in enumerate(waves)])
    for c, w in cube_reps:
        engine.set_weight(f"core{c}.aic", w)
    for q, w in aiv_reps:
        engine.set_weight(_aiv(q), w)
    if warm:
        _preload_input(engine, [(offset + b * cmax * L, lay.cube[b] * L, w) for b, w in cube_reps], in_b)
    # UB: each phase's TPipe is released when the phase ends, so an AIV needs the largest of them: pad (2 + 2
    # pieces), reduce (input queue, fp32 work buffer, int8: the half buffer), carry (input and output queues)
    rt, at = lay.reduce_tile, lay.add_tile
    depth = 1 if ul1 else 2
    ub = max(4 * L * in_b if lay.padded else 0,
             depth * rt * in_b + rt * _ACC_BYTES + (rt * 2 if in_b == 1 else 0),
             2 * depth * at * _ACC_BYTES)
    for q, _ in aiv_reps:
        engine.alloc(_aiv(q), "UB", ub, f"s={s} pad, reduce and carry tiles (the largest)")
    last: list[Op] = []

    # ----- padded path: the copy into the workspace (kernel_pad.h KernelPad) -----
    if lay.padded:
        engine.phase = "pad"
        after: dict[str, Op] = {}  # the last op of the earlier block on a unit (waves)
        for v, aiv, count in _working(aiv_reps, waves, lay.pad):
            base = v * pmax * L
            inq, outq = _Ring(2), _Ring(2)
            ops: list[Op] = []

            def emit_pad(i: int, aiv=aiv, base=base, inq=inq, outq=outq, ops=ops,
                         prior=after.get(aiv)) -> None:
                first = base + i * L
                elems = min(L, m - first)
                rd = engine.gm_read(aiv, "MTE2", elems * in_b, region=_region("x", offset + first, in_b),
                                    deps=[inq.wait(), prior if i == 0 else None], label="x->UB")
                cp = engine.ub_copy(aiv, L * in_b, deps=[rd, outq.wait()])
                inq.push(cp)
                wr = engine.gm_write(aiv, "MTE3", elems * in_b, region=_region("ws_x", first, in_b), deps=[cp],
                                     label="x->workspace")
                if elems < L:  # Duplicate zeros for the rest of the tile, then write them (kernel_pad.h:84-105)
                    z = engine.vector(aiv, (L - elems) * in_b, deps=[cp], label="Duplicate 0")
                    wr = engine.gm_write(aiv, "MTE3", (L - elems) * in_b,
                                         region=_region("ws_x", first + elems, in_b), deps=[z, wr], label="pad")
                outq.push(engine.moved_out(wr))
                ops.append(wr)

            _loop(engine, count, skip, emit_pad)
            last.append(ops[-1])
            after[aiv] = ops[-1]
        # SyncAll, SyncGroup, PipeBarrier<PIPE_ALL> (kernel_scan_multi_core.h:92-94)
        pad_sync = engine.sync_all(last)
        last = []
    else:
        pad_sync = None

    # ----- phase I -----
    engine.phase = "phase I"
    for c, _ in cube_reps:
        aic = f"core{c}.aic"
        cube = (CubeUL1 if ul1 else CubeRowScan)(engine, aic, p, u_region=("U", 0))
        for b in core_blocks[c]:
            count = lay.cube[b]
            if not count:
                continue
            base = b * cmax
            ops = []

            def emit_cube(i: int, cube=cube, base=base, ops=ops) -> None:
                t = base + i
                ops.append(cube.tile(pad_sync, x=_region(x_buf, x0 + t * L, in_b),
                                     y=_region(r_buf, r0 + t * L, _ACC_BYTES)))

            _loop(engine, count, skip, emit_cube)
            last.append(ops[-1])
    after = {}
    for v, aiv, count in _working(aiv_reps, waves, lay.reduce):
        base = v * rmax * rt
        inq = _Ring(depth)
        state: dict[str, Op | None] = {"issue": after.get(aiv, pad_sync)}

        def emit_reduce(i: int, aiv=aiv, base=base, inq=inq, state=state) -> None:
            first = base + i * rt
            elems = min(rt, lay.reduce_len - first)
            rd = engine.gm_read(aiv, "MTE2", elems * in_b, region=_region(x_buf, x0 + first, in_b),
                                deps=[inq.wait(), state["issue"]], label="x->UB")
            done = _reduce_tile(engine, aiv, p, elems, [rd])
            inq.push(done)
            state["issue"] = done

        _loop(engine, count, skip, emit_reduce)
        dep = state["issue"]
        if p.dtype == "int8":
            # the second level: ReduceVecAdd of the 512-element accumulator into 8 (one dependent Add per 8
            # elements), then 8 scalar reads (kernel_reduce_tiles.h:127-132)
            red1 = rt // 16 if rt // 16 > _RED2_SIZE else rt // 4
            dep = engine.vector_chain(aiv, max(1, red1 // _RED2_SIZE), _RED2_SIZE * _ACC_BYTES, "barrier",
                                      deps=[dep], label="ReduceVecAdd to 8")
            dep = engine.compute(aiv, "SCALAR", hw.vector_scalar_sync_cycles
                                 + _RED2_SIZE * (hw.scalar_load_cycles + hw.scalar_op_cycles), deps=[dep],
                                 label="ReduceScalarAdd")
        # CopyScalarToGm: SetValue, then a 4-byte DataCopyPad (tcuscan_utils.h:1075-1094)
        last.append(engine.gm_write(aiv, "MTE3", 4, region=("sums", v * 4), deps=[dep], label="sum->GM"))
        after[aiv] = last[-1]
    barrier = engine.sync_all(last)

    # ----- phase II -----
    engine.phase = "phase II"
    sums_len = m // L if ul1 else aivs  # ScanReducedTiles / ScanReducedBlocks read sums_len_ values
    after = {}
    for v, aiv, count in _working(aiv_reps, waves, lay.add):
        rd_s = engine.gm_read(aiv, "MTE2", max(sums_len, 8) * _ACC_BYTES, region=("sums", 0),
                              deps=[barrier, after.get(aiv)], label="sums->UB")
        # ReduceScalarAdd of the sums of the lower AIVs: one UB read and add per AIV (tcuscan_utils.h:1688)
        start = engine.compute(aiv, "SCALAR", hw.vector_scalar_sync_cycles
                               + v * (hw.scalar_load_cycles + hw.scalar_op_cycles), deps=[rd_s],
                               label="carry = sum of lower sums")
        base = v * amax * at
        inq, outq = _Ring(depth), _Ring(depth)
        state = {"issue": start}

        def emit_add(i: int, aiv=aiv, base=base, inq=inq, outq=outq, state=state) -> None:
            first = base + i * at
            elems = min(at, m - shift - first) if first < m - shift else 0
            elems = max(elems, 1)
            rd = engine.gm_read(aiv, "MTE2", elems * _ACC_BYTES, region=_region(r_buf, r0 + first, _ACC_BYTES),
                                deps=[inq.wait(), state["issue"]], label="C->UB")
            cp = engine.ub_copy(aiv, at * _ACC_BYTES, deps=[rd, outq.wait()])
            inq.push(cp)
            if ul1:
                ch = engine.vector_chain(aiv, 1, elems * _ACC_BYTES, "scalar", deps=[cp], label="tile += carry")
            else:
                ch = engine.vector_chain(aiv, lay.add_rows, s * _ACC_BYTES, "scalar", deps=[cp],
                                         label="rows += carry")
            wr = engine.gm_write(aiv, "MTE3", elems * out_b, region=_region("y", offset + first + shift, out_b),
                                 aligned=not p.exclusive, deps=[ch], label="y->GM")
            outq.push(engine.moved_out(wr))
            state["issue"] = ch
            state["last"] = wr

        _loop(engine, count, skip, emit_add)
        after[aiv] = state["last"]


SCAN_KERNELS = {
    k.name: register(k)
    for k in (
        ScanKernel("mcscan-ul1", "MCScanUL1: multi-core scan with ScanUL1 tile scans",
                   "scan paper §6.1.1 (Algorithm 3 with Algorithm 2 in phase I)", cube="ul1", multi_core=True),
        ScanKernel("mcscan", "MCScan: multi-core scan", "scan paper Algorithm 3", cube="rowscan", multi_core=True),
        ScanKernel("scanu", "ScanU: single-core cube + vector scan", "scan paper Algorithm 1", cube="rowscan",
                   multi_core=False),
        ScanKernel("scanul1", "ScanUL1: single-core scan by equation 4.1", "scan paper Algorithm 2",
                   cube="ul1", multi_core=False),
        ScanKernel("vec-cumsum", "Vector-only CumSum (CumSumInfo 128, 128) on one AIV", "scan paper §4.1",
                   cube=None, multi_core=False),
        ScanKernel("memcpy", "Copy kernel on all AIVs (reference for fraction of memcpy bandwidth)",
                   "scan paper §6.1 (torch.clone reference)", cube=None, multi_core=False),
    )
}


def first_overflowing_row(rows: np.ndarray) -> tuple[int, float] | None:
    """rows: (r, s) fp16 values, each row one row of an s x s tile. The first row whose float32 sum rounds to
    inf in fp16 although all its values are finite, as (row index, its sum); None when every row fits."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf rows are non-finite input, not overflow
        return first_overflowing_sum(rows.sum(axis=1, dtype=np.float32), rows)


def ul1_overflow(read, n: int, s: int, block: int = 1 << 22) -> tuple[int, float] | None:
    """The first row of s inputs (row r: elements r*s ... r*s + s - 1, as the tiles lay them) whose sum does not
    fit the fp16 C1 of the ScanUL1 variants, as (row, sum); None when all fit. read(lo, hi): the input's
    elements [lo, hi) as fp16. One pass over the input in blocks (a float32 row sum per s elements)."""
    step = max(s, block // s * s)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        x = np.asarray(read(lo, hi))
        full = (hi - lo) // s * s
        rows = x[:full].reshape(-1, s)
        if full < hi - lo:
            tail = np.zeros((1, s), dtype=x.dtype)
            tail[0, : hi - lo - full] = x[full:]
            rows = np.concatenate([rows, tail])
        found = first_overflowing_row(rows)
        if found is not None:
            return lo // s + found[0], found[1]
    return None


def ul1_overflow_message(algorithm: str, s: int, row: int, total: float, where: str | None = None) -> str:
    """Why a ScanUL1 variant cannot scan this input (for errors and for the note of the default's choice); where:
    the row's place in words (default "row R (elements a to b)" of a 1-D input)."""
    where = where or f"row {row:,} (elements {row * s:,} to {row * s + s - 1:,})"
    return (f"{algorithm} rounds each row's sum of s = {s} inputs to fp16 (C1 = A @ 1_s on its way to L1), and "
            f"{where} sums to {total:,.6g}, past fp16's 65504: its output would be NaN / inf")


def fp16_output_overflow(read, n: int, exclusive: bool, block: int = 1 << 22) -> tuple[int, float] | None:
    """The first output element of a scan with fp16 output that rounds to inf (|value| >= 65520, fp16's largest
    being 65504), as (index, float64 value); None when every output fits. read(lo, hi): the input's elements
    [lo, hi). Non-finite inputs are left to the verification (their output is not finite anyway). One pass of
    float64 running sums, stopping at the first element that does not fit."""
    carry = 0.0
    for lo in range(0, n, block):
        x = np.asarray(read(lo, min(n, lo + block)), dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            run = np.cumsum(x) + carry
        if not np.isfinite(run[-1]):
            return None  # a non-finite input: the verification says so
        out = run - x if exclusive else run  # the exclusive output is the running sum before the element
        big = np.flatnonzero(np.abs(out) >= FP16_OVERFLOW)
        if big.size:
            return lo + int(big[0]), float(out[big[0]])
        carry = float(run[-1])
    return None
