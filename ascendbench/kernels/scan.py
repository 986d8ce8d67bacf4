"""The scan family of the scan paper: memcpy, vec-cumsum, ScanU, ScanUL1, MCScan, MCScanUL1.

Timing: each kernel emits, per core, the instructions the measured AscendC kernels issue (KERNELS.md) on the
simulated machine's pipes. Function: each kernel computes its output in its own structure (tiles viewed as
s x s matrices, multiplied by U_s, L^-_s, 1_s; fp16 inputs with fp32 accumulation, int8 with int32),
vectorised over tiles with NumPy.

Sources: "Parallel Scan on Ascend AI Accelerators" (the scan paper): Algorithm 1 (ScanU), Algorithm 2 and
equation 4.1 (ScanUL1), Algorithm 3 (MCScan), §6.1.1 (L2 cache splitting, MCScanUL1), B.2 (exclusive, int8).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import ParamError, Verification, register
from ascendbench.kernels.partition import PARTITION_LIMIT, chunk_plan
from ascendbench.kernels.programs import COPY_PIECE as _MEMCPY_PIECE
from ascendbench.kernels.programs import Ring as _Ring
from ascendbench.kernels.programs import clamp_skip as _clamp
from ascendbench.kernels.programs import copy_pass as _copy_pass
from ascendbench.kernels.programs import copy_program as _copy_program
from ascendbench.kernels.programs import depth as _depth
from ascendbench.kernels.programs import loop as _loop
from ascendbench.kernels.programs import split_front as _split
from ascendbench.sim.engine import Engine, Op
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate

__all__ = [
    "DTYPES", "SCAN_KERNELS", "S_VALUES", "CubeRowScan", "CubeUL1", "ScanKernel", "ScanOperatorParams", "ScanParams",
    "VecCumSumTile",
    "aiv_carry_tile", "auto_chunk", "expected_matmuls", "l2_chunk_tiles",
]

S_VALUES = (16, 32, 64, 128)
DTYPES = {"fp16": np.float16, "int8": np.int8}
OUT_DTYPES = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32}
_IN_BYTES = {"fp16": 2, "int8": 1}
_OUT_BYTES = {"fp32": 4, "fp16": 2, "int32": 4}
_ACC_BYTES = 4  # L0C accumulates fp16 in fp32 and int8 in int32
_CUMSUM_INFO = (128, 128)  # AscendC CumSum (outter, inner) of the vector-only baseline, scan paper §4.1


@dataclass(frozen=True)
class ScanParams:
    """Parameters of a scan kernel.

    s: side of the s x s tiles, one of 16/32/64/128 (ignored by memcpy and vec-cumsum).
    blocks: number of blocks for the multi-core scans (None: all AI cores); more blocks than cores run in waves.
    chunk: elements per L2 chunk for the multi-core scans: None = the paper's rule (split only when the
        problem exceeds L2, chunks of L2 / (input + output bytes) rounded up to 256), 0 = off, else the size
        (rounded up to whole s*s tiles).
    exclusive: exclusive instead of inclusive scan (the inclusive result written one element further).
    dtype: input "fp16" or "int8".
    out_dtype: "fp32" (default for fp16), "fp16" (fp16 input only) or "int32" (the only one for int8).
    """

    s: int = 128
    blocks: int | None = None
    chunk: int | None = None
    exclusive: bool = False
    dtype: str = "fp16"
    out_dtype: str | None = None

    @property
    def out(self) -> str:
        if self.out_dtype is not None:
            return self.out_dtype
        return "int32" if self.dtype == "int8" else "fp32"

    @property
    def in_bytes(self) -> int:
        return _IN_BYTES[self.dtype]

    @property
    def out_bytes(self) -> int:
        return _OUT_BYTES[self.out]

    def to_dict(self) -> dict:
        return {"s": self.s, "blocks": self.blocks, "chunk": self.chunk, "exclusive": self.exclusive,
                "dtype": self.dtype, "out_dtype": self.out}


class ScanOperatorParams:
    """What the params of the operators built on the scans (batched, segmented) share: the fields algorithm,
    s, exclusive and dtype (fp16 -> fp32 output, int8 -> int32), their output dtype and their JSON form."""

    algorithm: str
    s: int
    exclusive: bool
    dtype: str

    @property
    def out(self) -> str:
        return ScanParams(s=self.s, dtype=self.dtype).out

    def to_dict(self) -> dict:
        return {"algorithm": self.algorithm, "s": self.s, "exclusive": self.exclusive, "dtype": self.dtype,
                "out_dtype": self.out}

    def check(self, algorithms) -> None:
        """Raise ParamError naming the option when algorithm, s or dtype is not allowed."""
        if self.algorithm not in algorithms:
            raise ParamError("algorithm", f"must be one of {', '.join(algorithms)}, got {self.algorithm!r}")
        if self.s not in S_VALUES:
            raise ParamError("s", f"must be one of {', '.join(map(str, S_VALUES))}, got {self.s}")
        if self.dtype not in DTYPES:
            raise ParamError("dtype", f"must be one of {', '.join(DTYPES)}, got {self.dtype!r}")


def auto_chunk(hw: HardwareProfile, params: ScanParams) -> int:
    """The paper's chunk length (§6.1.1, KERNELS.md): L2 / (input + output bytes), rounded up to 256."""
    per = params.in_bytes + params.out_bytes
    return int(math.ceil(hw.l2_bytes / per / 256) * 256)


def l2_chunk_tiles(n: int, params: ScanParams, hw: HardwareProfile, tile: int,
                   limit: int = PARTITION_LIMIT) -> int:
    """Tiles per L2 chunk of the multi-core scans (scan paper §6.1.1): params.chunk (None = the paper's rule:
    split only when input + output exceed L2, chunks of auto_chunk; 0 = off), in whole tiles, at least one.
    A chunk never exceeds the streaming partition limit (2**31 - 1 elements by default) so that every offset
    inside a chunk fits int32: L2 chunks and streaming partitions are one chunk plan (kernels/partition.py).
    Shared by the timing model (ScanKernel.plan) and the functional path (scan_numerics)."""
    tiles = max(1, math.ceil(n / tile))
    chunk = params.chunk
    if chunk is None:
        chunk = auto_chunk(hw, params) if n * (params.in_bytes + params.out_bytes) > hw.l2_bytes else 0
        # The rule's chunk is meant to fit L2: whole tiles are taken rounding down (rounding up pushed the
        # int8 chunk, 5 bytes per element, just past L2, and it lost all reuse).
        chunk_tiles = tiles if chunk == 0 else max(1, min(tiles, chunk // tile))
    else:
        chunk_tiles = tiles if chunk == 0 else max(1, min(tiles, math.ceil(chunk / tile)))
    return max(1, min(chunk_tiles, limit // tile))


def expected_matmuls(kernel: str, n: int, s: int) -> int:
    """Claim S-W1: ScanU and MCScan issue ceil(n/s^2) matrix multiplications, ScanUL1 3*ceil(n/s^2).
    MCScanUL1 runs ScanUL1 tile scans (3 per tile); memcpy and vec-cumsum issue none."""
    tiles = math.ceil(n / (s * s))
    return {"scanu": tiles, "mcscan": tiles, "scanul1": 3 * tiles, "mcscan-ul1": 3 * tiles}.get(kernel, 0)


# ---------------------------------------------------------------------------------------------------
# Cube-side tile programs (shared by the single-core and the multi-core scans)
# ---------------------------------------------------------------------------------------------------
class _CubeRowScan:
    """AIC program of ScanU / MCScan: per s*s tile, C = A @ U_s (Algorithm 1 lines 6-8)."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams, x_hit: bool, y_writeback: bool):
        hw, s = engine.hw, p.s
        self.e, self.unit, self.p, self.x_hit, self.y_wb = engine, unit, p, x_hit, y_writeback
        tile_in, tile_acc = s * s * p.in_bytes, s * s * _ACC_BYTES
        self.tile_in, self.tile_acc = tile_in, tile_acc
        d_a = _depth(2 * tile_in + 0 <= hw.l0a_bytes)
        d_c = _depth(2 * tile_acc <= hw.l0c_bytes)
        engine.alloc(unit, "L0B", tile_in, f"U_s (s={s})")
        engine.alloc(unit, "L0A", d_a * tile_in, f"s={s} input tile ({d_a} buffer(s))")
        engine.alloc(unit, "L0C", d_c * tile_acc, f"s={s} accumulator tile ({d_c} buffer(s))")
        engine.alloc(unit, "L1", 2 * tile_in + tile_in, f"s={s} input tiles (2 buffers) and U_s")
        self.l1, self.l0a, self.l0c = _Ring(2), _Ring(d_a), _Ring(d_c)
        # U_s is loaded once into L0B and stays there (KERNELS.md).
        u = engine.gm_read(unit, "MTE2", tile_in, l2_hit=False, label="load U")
        self.u_ready = engine.local_move(unit, "MTE1", tile_in, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                                         deps=[u], label="U->L0B")

    def tile(self, publish_dep=None) -> Op:
        e, unit, s, hw = self.e, self.unit, self.p.s, self.e.hw
        m2 = e.gm_read(unit, "MTE2", self.tile_in, l2_hit=self.x_hit, deps=[self.l1.wait()], label="x->L1")
        m1 = e.local_move(unit, "MTE1", self.tile_in, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                          deps=[m2, self.l0a.wait()], label="x->L0A")
        self.l1.push(m1)
        mm = e.cube(unit, s, s, s, self.p.dtype == "int8", deps=[m1, self.l0c.wait(), self.u_ready], label="A@U")
        self.l0a.push(mm)
        fp = e.gm_write(unit, "FIXPIPE", self.tile_acc, writeback=self.y_wb, deps=[mm, publish_dep],
                        label="C->GM")
        self.l0c.push(fp)
        return fp


class _CubeUL1:
    """AIC program of ScanUL1 / MCScanUL1: per tile C1 = A@1, C2 = A@U, C2 += L^-@C1 (Algorithm 2 lines 6-13).
    C1 goes L0C -> L1 through the FIXPIPE rounded to fp16; L^- stays in L0A, U and 1 in L1."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams, x_hit: bool, y_writeback: bool):
        hw, s = engine.hw, p.s
        self.e, self.unit, self.p, self.x_hit, self.y_wb = engine, unit, p, x_hit, y_writeback
        half = s * s * 2
        tile_in, tile_acc = s * s * p.in_bytes, s * s * _ACC_BYTES
        self.tile_in, self.tile_acc, self.half = tile_in, tile_acc, half
        d_a = _depth(half + 2 * tile_in <= hw.l0a_bytes)
        d_c = _depth(4 * tile_acc <= hw.l0c_bytes)
        engine.alloc(unit, "L0A", half + d_a * tile_in, f"L^-_s and s={s} input tile ({d_a} buffer(s))")
        engine.alloc(unit, "L0B", 2 * half, f"two s={s} right operands (1_s / U_s / C1)")
        engine.alloc(unit, "L0C", d_c * 2 * tile_acc, f"s={s} C1 and C2 accumulators ({d_c} buffer(s))")
        engine.alloc(unit, "L1", 2 * tile_in + 3 * half + half, f"s={s} input tiles, U_s, L^-_s, 1_s and C1")
        self.l1, self.l0a, self.l0b = _Ring(2), _Ring(d_a), _Ring(2)
        self.c1, self.c2 = _Ring(d_c), _Ring(d_c)
        consts = engine.gm_read(unit, "MTE2", 3 * half, l2_hit=False, label="load U, L^-, 1")
        self.lminus = engine.local_move(unit, "MTE1", half, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                                        deps=[consts], label="L^- ->L0A")

    def _l0b(self, deps, label) -> Op:
        e, hw = self.e, self.e.hw
        return e.local_move(self.unit, "MTE1", self.half, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                            deps=[*deps, self.l0b.wait()], label=label)

    def tile(self, publish_dep=None) -> Op:
        e, unit, s, hw = self.e, self.unit, self.p.s, self.e.hw
        int8 = self.p.dtype == "int8"
        m2 = e.gm_read(unit, "MTE2", self.tile_in, l2_hit=self.x_hit, deps=[self.l1.wait()], label="x->L1")
        a = e.local_move(unit, "MTE1", self.tile_in, hw.l1_to_l0_bytes_per_cycle, "bytes_l1_to_l0",
                         deps=[m2, self.l0a.wait()], label="x->L0A")
        self.l1.push(a)
        b1 = self._l0b([], "1->L0B")
        mm1 = e.cube(unit, s, s, s, int8, deps=[a, b1, self.c1.wait(), self.lminus], label="C1=A@1")
        self.l0b.push(mm1)
        f1 = e.local_move(unit, "FIXPIPE", self.tile_acc, hw.fixpipe_to_l1_bytes_per_cycle, "bytes_l0c_to_l1",
                          deps=[mm1], label="C1->L1 (fp16)")
        self.c1.push(f1)
        bu = self._l0b([], "U->L0B")
        mm2 = e.cube(unit, s, s, s, int8, deps=[a, bu, self.c2.wait()], label="C2=A@U")
        self.l0b.push(mm2)
        self.l0a.push(mm2)
        bc = self._l0b([f1], "C1->L0B")
        mm3 = e.cube(unit, s, s, s, int8, deps=[bc, mm2], label="C2+=L^-@C1")
        self.l0b.push(mm3)
        fp = e.gm_write(unit, "FIXPIPE", self.tile_acc, writeback=self.y_wb, deps=[mm3, publish_dep],
                        label="C2->GM")
        self.c2.push(fp)
        return fp


# Public names for the kernels built from the same program pieces (batched and segmented scans).
CubeRowScan = _CubeRowScan
CubeUL1 = _CubeUL1


# ---------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Plan:
    """Sizes of one run: tiles, padding, chunks and what L2 holds (reuse-distance model)."""

    n: int
    tile: int
    tiles: int
    padded: bool
    chunk_tiles: int
    chunks: int
    last_chunk_tiles: int
    x_first_hit: bool
    fits_l2: bool  # one chunk's input + output stay resident, so re-reads hit and rewrites are not written back


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
            ParamError: s not in 16/32/64/128; blocks < 1; chunk < 0; unknown dtype/out_dtype; fp16 output for
                int8 input; int8 with a ScanUL1 variant (C1 = A@1 would have to be fed back to the cube as int8).
            BufferCapacityError: a tile does not fit a buffer of `hw` (checked by simulating one tile).
        """
        if n < 0:
            raise ParamError("n", f"must be a non-negative integer, got {n}")
        if params.s not in S_VALUES:
            raise ParamError("s", f"must be one of {', '.join(map(str, S_VALUES))}, got {params.s}")
        if params.blocks is not None and params.blocks < 1:
            raise ParamError("blocks", f"must be at least 1, got {params.blocks}")
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
        # Buffer capacities: building one tile's program allocates every buffer it needs.
        engine = Engine(hw)
        self._build(engine, 0, replace(params), _Plan(1, params.s**2, 1, False, 1, 1, 1, False, True), [1])

    # ----- timing ------------------------------------------------------------------------------------
    def plan(self, n: int, params: ScanParams, hw: HardwareProfile, warm_l2: bool) -> _Plan:
        tile = _CUMSUM_INFO[0] * _CUMSUM_INFO[1] if self.name == "vec-cumsum" else params.s**2
        if self.name == "memcpy":
            tile = _MEMCPY_PIECE
        tiles = math.ceil(n / tile)
        padded = n % tile != 0 and self.name != "memcpy"
        in_total = n * params.in_bytes
        chunk_tiles = l2_chunk_tiles(n, params, hw, tile) if self.multi_core else max(tiles, 1)
        cp = chunk_plan(max(tiles, 1), chunk_tiles)
        chunk_tiles, chunks, last = cp.size, cp.count, cp.last
        if padded:
            x_first_hit = 2 * in_total <= hw.l2_bytes
        else:
            x_first_hit = warm_l2 and in_total <= hw.l2_bytes
        chunk_bytes = chunk_tiles * tile * (params.in_bytes + _ACC_BYTES)
        return _Plan(n, tile, tiles, padded, chunk_tiles, chunks, last, x_first_hit, chunk_bytes <= hw.l2_bytes)

    def simulate(self, n: int, params: ScanParams, hw: HardwareProfile, warm_l2: bool = False,
                 force_exact: bool = False) -> SimResult:
        """Simulated run of this kernel on n elements: time, phases, pipe busy time, counters, timeline.

        Raises ParamError / BufferCapacityError as `check` does. Runs in milliseconds at any n (long loops
        are extrapolated from a few simulated iterations unless force_exact)."""
        self.check(n, params, hw)
        plan = self.plan(n, params, hw, warm_l2)
        launch = fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)
        if n == 0:
            return launch
        if self.name == "memcpy":
            copy = _copy_pass(hw, n, params.in_bytes, params.out_bytes, warm_l2, "copy", force_exact)
            return sequence([(launch, 1), (copy, 1)])
        parts: list[tuple[SimResult, int]] = [(launch, 1)]
        if plan.padded:
            parts.append((_copy_pass(hw, n, params.in_bytes, params.in_bytes, warm_l2, "pad", force_exact), 1))
            parts.append((fixed_cost(hw, hw.sync_all_cycles, "pad", sync_all=1), 1))
        # Every chunk is the same program (the first chunk reads a zero carry), so only the full chunk and the
        # last, shorter one need simulating.
        cache: dict = {}
        full = self._simulate_chunk(hw, params, plan, plan.chunk_tiles, warm_l2, force_exact, cache)
        if plan.last_chunk_tiles == plan.chunk_tiles:
            parts.append((full, plan.chunks))
        else:
            parts.append((full, plan.chunks - 1))
            parts.append((self._simulate_chunk(hw, params, plan, plan.last_chunk_tiles, warm_l2, force_exact, cache), 1))
        if plan.chunks > 1:
            parts.append((fixed_cost(hw, hw.sync_all_cycles, "chunk sync", sync_all=1), plan.chunks - 1))
        return sequence(parts)

    def _simulate_chunk(self, hw, params, plan: _Plan, tiles: int, warm_l2, force_exact, cache) -> SimResult:
        if self.multi_core:
            blocks = min(params.blocks or hw.ai_cores, tiles)
            per_block = _split(tiles, blocks)
        else:
            per_block = [tiles]
        iterations = max(per_block)

        def build(engine: Engine, skip: int) -> None:
            self._build(engine, skip, params, plan, per_block)

        def key(skip: int) -> tuple:
            return tuple(c - _clamp(c, skip) for c in per_block)

        return simulate(hw, build, iterations, warm_l2=warm_l2, force_exact=force_exact, cache=cache, cache_key=key)

    def _build(self, engine: Engine, skip: int, p: ScanParams, plan: _Plan, per_block: list[int]) -> None:
        if self.name == "memcpy":
            engine.phase = "copy"
            _copy_program(engine, skip, [1], plan.tile, p.in_bytes, p.out_bytes, False)
        elif self.name == "vec-cumsum":
            _build_vec_cumsum(engine, skip, p, plan, per_block[0])
        elif not self.multi_core:
            _build_single_core(engine, skip, p, plan, per_block[0], self.cube_kind)
        else:
            _build_multi_core(engine, skip, p, plan, per_block, self.cube_kind)

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


# ----- programs -------------------------------------------------------------------------------------
class VecCumSumTile:
    """AIV program of the vector-only baseline (scan paper §4.1): AscendC CumSum with CumSumInfo (128, 128).
    Per 128 x 128 tile: cast to the accumulation type and transpose (3 passes), the inner-axis cumsum as
    127 dependent adds of 128 elements with a vector pipe barrier between them, then the row carries (and
    the tile carry) as 128 dependent adds, each followed by a scalar read of the row's last element."""

    def __init__(self, engine: Engine, unit: str, p: ScanParams, x_hit: bool):
        outer, inner = _CUMSUM_INFO
        self.e, self.unit, self.p, self.x_hit = engine, unit, p, x_hit
        self.tile_elems = outer * inner
        engine.alloc(unit, "UB", 2 * self.tile_elems * p.in_bytes + 2 * self.tile_elems * _ACC_BYTES,
                     "CumSum 128x128 tile (2 input buffers, work and transpose buffers)")
        self.ring = _Ring(2)
        self.prev: Op | None = None

    def tile(self) -> Op:
        outer, inner = _CUMSUM_INFO
        e, unit, p, tile = self.e, self.unit, self.p, self.tile_elems
        rd = e.gm_read(unit, "MTE2", tile * p.in_bytes, l2_hit=self.x_hit, deps=[self.ring.wait()], label="x->UB")
        prep = e.vector(unit, tile * _ACC_BYTES, deps=[rd], label="cast+transpose", passes=3)
        scan = e.vector_chain(unit, inner - 1, outer * _ACC_BYTES, "barrier", deps=[prep], label="CumSum")
        carry = e.vector_chain(unit, outer, inner * _ACC_BYTES, "scalar", deps=[scan, self.prev],
                               label="row carries")
        self.prev = carry
        wr = e.gm_write(unit, "MTE3", tile * p.out_bytes, writeback=True, aligned=not p.exclusive,
                        deps=[carry], label="y->GM")
        self.ring.push(wr)
        return wr


def _build_vec_cumsum(engine: Engine, skip: int, p: ScanParams, plan: _Plan, tiles: int) -> None:
    """Vector-only baseline (scan paper §4.1) on one AIV; see VecCumSumTile."""
    engine.phase = "scan"
    prog = VecCumSumTile(engine, "core0.aiv0", p, plan.x_first_hit)
    _loop(engine, tiles, skip, lambda i: prog.tile())


def aiv_carry_tile(engine: Engine, aiv: str, p: ScanParams, cube_kind: str, cube_done: Op, prev: Op | None) -> Op:
    """AIV side of ScanU / ScanUL1 for one s*s tile the cube wrote to GM (op `cube_done`): wait for its flag
    and for the previous tile (`prev`), read it, add the carry (per row of s for ScanU, Algorithm 1 lines 10-14;
    once per tile for ScanUL1, Algorithm 2 lines 15-18), write it back in place. Returns the write."""
    s, L = p.s, p.s * p.s
    rd = engine.gm_read(aiv, "MTE2", L * _ACC_BYTES, l2_hit=True, deps=[engine.flag(cube_done), prev],
                        label="C->UB")
    if cube_kind == "rowscan":
        vec = engine.vector_chain(aiv, s, s * _ACC_BYTES, "scalar", deps=[rd], label="rows += carry")
    else:
        vec = engine.vector_chain(aiv, 1, L * _ACC_BYTES, "scalar", deps=[rd], label="tile += carry")
    return engine.gm_write(aiv, "MTE3", L * p.out_bytes, writeback=True, aligned=not p.exclusive, deps=[vec],
                           label="y->GM")


def _build_single_core(engine: Engine, skip: int, p: ScanParams, plan: _Plan, tiles: int, cube_kind: str) -> None:
    """ScanU (Algorithm 1) / ScanUL1 (Algorithm 2) on core 0: its AIC and AIV0, a flag handshake per tile,
    the cube one tile ahead of the vector core."""
    s, L = p.s, p.s * p.s
    aic, aiv = "core0.aic", "core0.aiv0"
    engine.phase = "scan"
    # y tiles are rewritten by the AIV right after the cube wrote them: the first write never reaches HBM.
    cube = (_CubeRowScan if cube_kind == "rowscan" else _CubeUL1)(engine, aic, p, plan.x_first_hit, False)
    engine.alloc(aiv, "UB", L * _ACC_BYTES, f"s={s} fp32 tile (in place)")
    done: list[Op] = []

    def emit(i: int) -> None:
        publish = engine.flag(done[-1]) if done else None  # AIV finished tile i-1
        fp = cube.tile(publish)
        done.append(aiv_carry_tile(engine, aiv, p, cube_kind, fp, done[-1] if done else None))

    _loop(engine, tiles, skip, emit)


def _build_multi_core(engine: Engine, skip: int, p: ScanParams, plan: _Plan, per_block: list[int],
                      cube_kind: str) -> None:
    """MCScan (Algorithm 3) / MCScanUL1 (§6.1.1) on one chunk: phase I (cube tile scans; the AIVs reduce the
    input per core-half), SyncAll, phase II (each AIV adds the carry to its half in place)."""
    hw = engine.hw
    s, L = p.s, p.s * p.s
    cores = hw.ai_cores
    ul1 = cube_kind == "ul1"
    half_elems = L // 2
    # UB: phase I reduce buffers and phase II carry-add buffers share the UB; the larger phase decides.
    reduce_tile = L if ul1 else half_elems
    add_tile = L if ul1 else half_elems
    ub_phase1 = (1 if ul1 else 2) * reduce_tile * (p.in_bytes + _ACC_BYTES)
    ub_phase2 = 2 * add_tile * _ACC_BYTES
    last_ops: dict[str, Op] = {}
    cubes: dict[int, object] = {}
    # Block b runs on core b % cores (waves when there are more blocks than cores); cores with the same
    # block sizes run the same program and are simulated once, weighted.
    core_blocks = [[b for b in range(len(per_block)) if b % cores == c] for c in range(min(cores, len(per_block)))]
    reps = engine.groups([tuple(per_block[b] for b in blocks) for blocks in core_blocks])
    rep_blocks = [(b, per_block[b]) for core, _ in reps for b in core_blocks[core]]
    for core, weight in reps:
        for unit in [f"core{core}.aic"] + [f"core{core}.aiv{h}" for h in range(hw.aiv_per_core)]:
            engine.set_weight(unit, weight)
    engine.phase = "phase I"
    for b, count in rep_blocks:
        core = b % cores
        aic = f"core{core}.aic"
        if core not in cubes:
            cls = _CubeUL1 if ul1 else _CubeRowScan
            cubes[core] = cls(engine, aic, p, plan.x_first_hit, not plan.fits_l2)
            for h in range(hw.aiv_per_core):
                engine.alloc(f"core{core}.aiv{h}", "UB", max(ub_phase1, ub_phase2),
                             f"s={s} reduce/carry tiles ({'1' if ul1 else '2'} + 2 buffers)")
        cube = cubes[core]

        def emit_cube(i: int, cube=cube, aic=aic) -> None:
            last_ops[aic] = cube.tile()

        _loop(engine, count, skip, emit_cube)
        # The AIVs of this core reduce the block's input, one core-half each.
        for h in range(hw.aiv_per_core):
            aiv = f"core{core}.aiv{h}"
            if ul1:
                share = _split(count, hw.aiv_per_core)[h]
                share_skip = _split(_clamp(count, skip), hw.aiv_per_core)[h]
                depth = 1
            else:
                share, share_skip, depth = count, skip, 2
            ring = _Ring(depth)

            def emit_reduce(i: int, aiv=aiv, ring=ring) -> None:
                rd = engine.gm_read(aiv, "MTE2", reduce_tile * p.in_bytes, l2_hit=plan.fits_l2, deps=[ring.wait()],
                                    label="x->UB")
                red = engine.vector(aiv, reduce_tile * _ACC_BYTES, deps=[rd], label="ReduceSum", passes=2)
                ring.push(red)
                last_ops[aiv] = red

            if share:
                _loop(engine, share, share_skip, emit_reduce)
                last_ops[aiv] = engine.gm_write(aiv, "MTE3", 4, writeback=True, deps=[last_ops[aiv]], label="r->GM")
    barrier = engine.sync_all(last_ops.values())

    engine.phase = "phase II"
    for b, count in rep_blocks:
        core = b % cores
        shares = _split(count, hw.aiv_per_core) if ul1 else [count] * hw.aiv_per_core
        skips = (_split(_clamp(count, skip), hw.aiv_per_core) if ul1
                 else [skip] * hw.aiv_per_core)
        for h in range(hw.aiv_per_core):
            if shares[h] == 0:
                continue
            aiv = f"core{core}.aiv{h}"
            # The carry: partial sums of lower-numbered core-halves and the previous chunk's last output.
            rd_r = engine.gm_read(aiv, "MTE2", 4 * len(per_block) * hw.aiv_per_core + 4,
                                  l2_hit=True, deps=[barrier], label="r->UB")
            start = engine.compute(aiv, "SCALAR", hw.scalar_op_cycles * (b * hw.aiv_per_core + h + 1),
                                   deps=[rd_r], label="carry = sum r[<i]")
            ring = _Ring(2)
            chain: list[Op] = [start]

            def emit_add(i: int, aiv=aiv, ring=ring, chain=chain) -> None:
                rd = engine.gm_read(aiv, "MTE2", add_tile * _ACC_BYTES, l2_hit=plan.fits_l2, deps=[ring.wait(), barrier],
                                    label="C->UB")
                if ul1:
                    vec = engine.vector_chain(aiv, 1, add_tile * _ACC_BYTES, "scalar", deps=[rd, chain[-1]],
                                              label="tile += carry")
                else:
                    vec = engine.vector_chain(aiv, s // 2, s * _ACC_BYTES, "scalar", deps=[rd, chain[-1]],
                                              label="rows += carry")
                chain.append(vec)
                wr = engine.gm_write(aiv, "MTE3", add_tile * p.out_bytes, writeback=True, aligned=not p.exclusive,
                                     deps=[vec], label="y->GM")
                ring.push(wr)

            _loop(engine, shares[h], skips[h], emit_add)


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
