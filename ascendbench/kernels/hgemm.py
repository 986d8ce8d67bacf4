"""HGEMM on the simulated NPU: C = alpha * A @ B + beta * C in fp16 (fp32 accumulation in L0C).

Two variants:
- "proposed": the HGEMM paper's dual-stream design (Algorithm 1). The AIVs pad A and B to 512-byte aligned
  copies in a GM workspace; the AIC loads panels GM -> L1 (double-buffered, prefetching the next panel),
  blocks L1 -> L0A/L0B, accumulates ceil(K/K0) Mmads in L0C and writes C1 to GM as fp16 through the
  FIXPIPE; the AIVs compute beta*C, wait for the AIC's flag, compute alpha*C1 and the sum, and write C.
  Options: padding, double buffering, ShuffleK (§4.3.2), SplitK (§4.3.3), tile sizes M0, N0, K0.
- "gemm-example": CATLASS's basic matmul as the paper's baseline: L1 tile 128 x 256 x 256, L0 tile
  128 x 256 x 64, ping-pong, no padding, no SplitK or ShuffleK (every core starts its K loop at 0), blocks
  in GemmIdentityBlockSwizzle<3, 0> order when M > N and <3, 1> otherwise; the AIC writes A @ B, and a
  separate element-wise pass applies alpha and beta when they are not (1, 0).

Mechanisms behind each option (no factors): without padding, GM reads of rows that are not 512-byte aligned
run at the profile's unaligned rate, and the panel loads (GM -> L1 with on-the-fly ND2NZ conversion) of rows
that are not 256-byte aligned at its much lower nd2nz_unaligned_efficiency; without double buffering every
buffer has one slot, so loads wait for the previous block's compute; without ShuffleK, cores that work on blocks sharing a panel read the same
512-byte ranges at the same time and are served one after another; SplitK divides each block's K range over
more cores, which then add their partial C blocks atomically.

Source: "Efficient Low-Precision GEMM on Ascend NPU: HGEMM's Synergy of Pipeline Scheduling, Tiling, and
Memory Optimization" (the HGEMM paper) §3-§4; CATLASS examples/00_basic_matmul for the baseline.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from operator import sub
from typing import Any

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import ParamError, Verification
from ascendbench.kernels.hgemm_tiling import NoTileFits, TilingDecision, select_tiling
from ascendbench.kernels.programs import Ring, copy_pass
from ascendbench.sim.engine import BufferCapacityError, Engine, Op, Parts, core_groups, gc_paused
from ascendbench.sim.result import RunCache, SimResult, fixed_cost, sequence, simulate_2d

__all__ = [
    "GEMM_EXAMPLE_TILE",
    "RUN_CACHE",
    "VARIANTS",
    "GemmShape",
    "HgemmParams",
    "Tiling",
    "compute_hgemm",
    "equivalent_params",
    "example_block",
    "example_swizzle_direction",
    "fp16_overflow",
    "hgemm_counters",
    "paper_selection",
    "resolve_tiling",
    "simulate_hgemm",
    "simulated_seconds",
    "tile_misfit",
    "verify_hgemm",
]

VARIANTS = ("proposed", "gemm-example")
# CATLASS basic matmul: L1 tile M1 x N1 x K1 and L0 tile M0 x N0 x K0 (HARDWARE.md, CATLASS example 00).
GEMM_EXAMPLE_TILE = {"m1": 128, "n1": 256, "k1": 256, "m0": 128, "n0": 256, "k0": 64}
MAX_DIM = 2**40  # M, N, K and batch each: the model runs at any size, but no device holds more
_FP16 = 2
_FP32 = 4
_PAD_ALIGN_BYTES = 512  # the proposed kernel pads A and B rows to 512 bytes (HGEMM paper §4.1)
_ALIGN_ELEMS = _PAD_ALIGN_BYTES // _FP16  # elements of a padded fp16 row: a multiple of 256
_FP16_MAX = 65504.0  # largest finite fp16
_EXAMPLE_SWIZZLE = 3  # GemmExample's block swizzle offset (GemmIdentityBlockSwizzle<3, direction>)
# Slow-down per extra core reading the same 512-byte ranges at the same time: CANN's hardware-constraints page
# (Ascend C guide, "硬件约束", canncommercial 8.5.0, atlas_ascendc_10_00048) gives 10%-20% for such accesses,
# which the guide's same-address sample ("避免同地址访问", atlas_ascendc_best_practices_10_00013) produces with
# 16 cores reading every 512-byte row in lockstep: the midpoint, 15%, over the 15 cores that queue.
_SAME_RANGE_COST = 0.15 / 15
_KEEP_TASKS = (4, 8)  # tasks per core of the truncated runs (simulate_2d)
# Measurements of truncated GEMM runs by program (_GemmProgram), shared by all shapes of a process: shapes of
# a workload often share them; and the tuner's times of whole runs (simulated_seconds). Entries are numbers
# only (a few kB each); clearing it makes the model cold.
RUN_CACHE = RunCache(maxsize=8192)


@dataclass(frozen=True)
class GemmShape:
    """M x N x K GEMM, `batch` independent problems of the same shape (elements; any size >= 0)."""

    m: int
    n: int
    k: int
    batch: int = 1

    @property
    def flops(self) -> int:
        """2 M N K per problem, times batch (the papers' TFLOPS numerator)."""
        return 2 * self.m * self.n * self.k * self.batch


@dataclass(frozen=True)
class HgemmParams:
    """Options of the HGEMM kernel.

    variant: "proposed" or "gemm-example". m0, n0, k0: tile sizes (None: the selector's choice, §4.2.3; M0, N0
    multiples of 16, K0 a multiple of 8 so that Fig 5's K0 = 8 can be run). split_k: K split over this many
    cores (1, 2, 4, 8, ...). shuffle_k, padding, double_buffer: the paper's optimisations (all on by
    default, as the paper evaluated; gemm-example has neither ShuffleK nor padding, and ignores both).
    alpha, beta: the BLAS scalars.
    """

    variant: str = "proposed"
    m0: int | None = None
    n0: int | None = None
    k0: int | None = None
    split_k: int = 1
    shuffle_k: bool = True
    padding: bool = True
    double_buffer: bool = True
    alpha: float = 1.0
    beta: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "m0": self.m0, "n0": self.n0, "k0": self.k0, "split_k": self.split_k,
                "shuffle_k": self.shuffle_k, "padding": self.padding, "double_buffer": self.double_buffer,
                "alpha": self.alpha, "beta": self.beta}


@dataclass(frozen=True)
class Tiling:
    """The tile sizes a run uses and where they came from ("selector", "fallback", "user", "gemm-example")."""

    m0: int
    n0: int
    k0: int
    k1: int  # K extent of one L1 panel load (a multiple of K0)
    source: str
    decision: TilingDecision | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"m0": self.m0, "n0": self.n0, "k0": self.k0, "k1": self.k1, "source": self.source}
        if self.decision is not None:
            out["selector"] = self.decision.to_dict()
        return out


def check_params(shape: GemmShape, params: HgemmParams) -> None:
    """Raise ParamError naming the option for invalid sizes, scalars or options (see HgemmParams)."""
    for name, value in (("m", shape.m), ("n", shape.n), ("k", shape.k)):
        if not isinstance(value, (int, np.integer)) or not 0 <= value <= MAX_DIM:
            raise ParamError(name, f"must be an integer from 0 to 2**40, got {value!r}")
    if not 1 <= shape.batch <= MAX_DIM:
        raise ParamError("batch", f"must be from 1 to 2**40, got {shape.batch}")
    if params.variant not in VARIANTS:
        raise ParamError("variant", f"must be one of {', '.join(VARIANTS)}, got {params.variant!r}")
    for name in ("alpha", "beta"):
        value = getattr(params, name)
        if not math.isfinite(value):
            raise ParamError(name, f"must be a finite number, got {value}")
        if abs(value) > _FP16_MAX:  # the kernel scales in fp16: a larger factor would be inf
            raise ParamError(name, f"must be representable in fp16 (|{name}| <= 65504), got {value:g}")
    if params.split_k < 1:
        raise ParamError("split-k", f"must be at least 1, got {params.split_k}")
    if params.variant == "gemm-example":
        for name in ("m0", "n0", "k0"):
            if getattr(params, name) is not None:
                raise ParamError(name, "gemm-example uses CATLASS's fixed tiles (L1 128x256x256, L0 128x256x64)")
        if params.split_k != 1:
            raise ParamError("split-k", "gemm-example has no SplitK (it is the paper's baseline)")
    for name, multiple in (("m0", 16), ("n0", 16), ("k0", 8)):
        value = getattr(params, name)
        if value is not None and (value < multiple or value % multiple):
            raise ParamError(name, f"must be a positive multiple of {multiple}, got {value}")


def resolve_tiling(shape: GemmShape, params: HgemmParams, hw: HardwareProfile) -> Tiling:
    """The tile sizes of a run: the user's, else the paper's selector (paper_selection: threshold the
    profile's AI cores, tiles that do not fit its buffers passed over), with the L1 panel depth K1 the largest
    multiple of K0 whose panels fit L1 (two slots if double-buffered). Where the user gives some of M0, N0, K0,
    the selector gives the others without a fit check (the user's sizes decide what fits).

    Raises:
        ParamError: invalid options (SplitK above the K0 blocks of K, ceil(K / K0): a split would be empty);
        BufferCapacityError: a block that does not fit L0A, L0B, L0C, L1 or UB, or no tile of the selector fits.
    """
    check_params(shape, params)
    if params.variant == "gemm-example":
        t = GEMM_EXAMPLE_TILE
        return Tiling(t["m0"], t["n0"], t["k0"], t["k1"], "gemm-example")
    decision = None
    user = params.m0 is not None or params.n0 is not None or params.k0 is not None
    if not user:
        try:
            decision = paper_selection(shape, params, hw)
        except NoTileFits as exc:  # as a tile that does not fit: the buffer named first
            raise BufferCapacityError(f"{exc.why.split(' ', 1)[0]}: none of the {exc.tried} tile(s) the HGEMM "
                                      f"paper's selector tries fits {hw.name} (the smallest, {exc.smallest}: "
                                      f"{exc.why}); give --m0, --n0 and --k0") from None
    elif params.m0 is None or params.n0 is None or params.k0 is None:  # the user's sizes decide what fits
        decision = select_tiling(max(shape.m, 1), max(shape.n, 1), max(shape.k, 1), shape.batch, hw.ai_cores)
    m0 = params.m0 or decision.m0
    n0 = params.n0 or decision.n0
    k0 = params.k0 or decision.k0
    tiling = _tiling(m0, n0, k0, "user" if user else decision.source, decision, shape, params, hw)
    k_blocks = max(1, math.ceil(shape.k / k0))  # a split takes whole K0 blocks: more splits than blocks run empty
    if params.split_k > k_blocks:
        raise ParamError("split-k", f"must be at most {k_blocks} for K = {shape.k:,} with K0 = {k0} (its ceil(K / "
                                    f"K0) K blocks: more splits would be empty; a smaller --k0 allows more), got "
                                    f"{params.split_k:,}")
    _check_buffers(tiling, params, hw)
    return tiling


def paper_selection(shape: GemmShape, params: HgemmParams, hw: HardwareProfile) -> TilingDecision:
    """The HGEMM paper's selector (hgemm_tiling.select_tiling) for this problem on `hw`: threshold the
    profile's AI cores, tiles that do not fit its buffers (tile_misfit) passed over.

    Raises:
        NoTileFits: no tile the selector tries fits the profile's buffers.
    """
    return select_tiling(max(shape.m, 1), max(shape.n, 1), max(shape.k, 1), shape.batch, hw.ai_cores,
                         fits=lambda m0, n0, k0: tile_misfit(m0, n0, k0, shape, params, hw))


def tile_misfit(m0: int, n0: int, k0: int, shape: GemmShape, params: HgemmParams,
                hw: HardwareProfile) -> str | None:
    """Why an M0 x N0 x K0 tile (elements) cannot run this problem on `hw`: the first buffer it overflows, in
    the order resolve_tiling checks them, e.g. "UB needs 49,152 B, 32,768 B on <profile>"; None when it fits."""
    tiling = _tiling(m0, n0, k0, "check", None, shape, params, hw)
    for name, (need, capacity) in _block_bytes(tiling, hw).items():
        if need > capacity:  # one slot: _buffer_depths drops to one where two do not fit
            return f"{name} needs {need:,} B, {capacity:,} B on {hw.name}"
    return None


def _tiling(m0: int, n0: int, k0: int, source: str, decision: TilingDecision | None, shape: GemmShape,
            params: HgemmParams, hw: HardwareProfile) -> Tiling:
    """The tiling with its L1 panel depth K1: the largest multiple of K0 whose panels fit L1 (two slots if
    double-buffered), no deeper than one task's K range."""
    slots = 2 if params.double_buffer else 1
    per_k = slots * (m0 + n0) * _FP16  # L1 bytes per unit of K1
    k1 = (hw.l1_bytes // per_k) // k0 * k0
    k_task = max(k0, math.ceil(max(shape.k, 1) / params.split_k))
    k1 = max(k0, min(k1, math.ceil(k_task / k0) * k0)) if k1 >= k0 else k0
    return Tiling(m0, n0, k0, k1, source, decision)


def _block_bytes(tiling: Tiling, hw: HardwareProfile) -> dict[str, tuple[int, int]]:
    """Bytes of one slot of each buffer the tiling uses and the buffer's capacity, in _check_buffers' order."""
    m0, n0, k0 = tiling.m0, tiling.n0, tiling.k0
    return {"L0A": (m0 * k0 * _FP16, hw.l0a_bytes), "L0B": (k0 * n0 * _FP16, hw.l0b_bytes),
            "L0C": (m0 * n0 * _FP32, hw.l0c_bytes), "L1": ((m0 + n0) * tiling.k1 * _FP16, hw.l1_bytes),
            "UB": (3 * math.ceil(m0 / 2) * n0 * _FP16, hw.ub_bytes)}


def _buffer_depths(tiling: Tiling, params: HgemmParams, hw: HardwareProfile) -> dict[str, int]:
    """Slots per buffer: two where double buffering is on and two copies fit, else one."""
    want = 2 if params.double_buffer else 1
    return {name: (want if want * need <= cap else 1) for name, (need, cap) in _block_bytes(tiling, hw).items()}


def _k_splits(tiling: Tiling, params: HgemmParams, hw: HardwareProfile) -> int:
    """Mmads per K0 block: 2 when double buffering is on but L0A or L0B holds only one M0 x K0 (K0 x N0)
    block, as with the paper's largest tiles (256 x 128 x 128 fills L0A): the block is then moved and
    multiplied in two K0/2 halves, ping-ponging within the buffer. 1 otherwise."""
    depths = _buffer_depths(tiling, params, hw)
    single = depths["L0A"] == 1 or depths["L0B"] == 1
    return 2 if params.double_buffer and single and tiling.k0 % 32 == 0 else 1


def _check_buffers(tiling: Tiling, params: HgemmParams, hw: HardwareProfile) -> None:
    depths = _buffer_depths(tiling, params, hw)
    if all(depths[name] * need <= capacity for name, (need, capacity) in _block_bytes(tiling, hw).items()):
        return  # everything fits (the tuner checks every point of a grid): no engine needed for the message
    engine = Engine(hw)
    m0, n0, k0 = tiling.m0, tiling.n0, tiling.k0
    what = f"{m0}x{n0}x{k0} tiling"
    engine.alloc("core0.aic", "L0A", depths["L0A"] * m0 * k0 * _FP16, f"{what}: A block M0 x K0 fp16 ({depths['L0A']} slot(s))")
    engine.alloc("core0.aic", "L0B", depths["L0B"] * k0 * n0 * _FP16, f"{what}: B block K0 x N0 fp16 ({depths['L0B']} slot(s))")
    engine.alloc("core0.aic", "L0C", depths["L0C"] * m0 * n0 * _FP32, f"{what}: C block M0 x N0 fp32 ({depths['L0C']} slot(s))")
    engine.alloc("core0.aic", "L1", depths["L1"] * (m0 + n0) * tiling.k1 * _FP16,
                 f"{what}: A and B panels of K1={tiling.k1} ({depths['L1']} slot(s))")
    engine.alloc("core0.aiv0", "UB", depths["UB"] * 3 * math.ceil(m0 / 2) * n0 * _FP16,
                 f"{what}: C, C1 and result half-blocks fp16 ({depths['UB']} slot(s))")


@dataclass(frozen=True)
class _Layout:
    """How the work falls on the cores, and what the memory system sees."""

    tasks: int  # (C blocks x split_k)
    split: int
    blocks_per_task: int  # K0 blocks one task accumulates
    per_core: list[int]
    m_eff: int
    n_eff: int
    k_eff: int
    serial_a: float  # cores reading the same 512-byte ranges of an A (B) panel at the same time
    serial_b: float
    hit_a: float
    hit_b: float
    aligned_a: bool
    aligned_b: bool
    aligned_c: bool
    nd2nz_unaligned_a: bool  # rows of A (B) as loaded are not nd2nz_alignment_bytes aligned: slow ND2NZ loads
    nd2nz_unaligned_b: bool
    # With a warm L2 (repeated runs) and A, B and C fitting in L2 together, C is read from L2 and its writes
    # stay there as dirty lines that the next run overwrites: no HBM traffic for C.
    c_resident: bool = False
    # Where the fast direction's panels stay in L2, each is fetched from HBM once, by the first wave of tasks
    # that reads it (its readers in that wave share the fetch); later reads hit. first_reads names that
    # panel ("a" or "b"), the blocks per batch and fast-direction count that locate its first reads, and
    # the last task index (per core) holding one; None: the misses stay spread over all reads (hit_a, hit_b).
    first_reads: tuple[str, int, int, int] | None = None

    def fast_hit(self, panel: str, members: list[int], index: int, cores: int, default: float,
                 waves: dict | None = None) -> float:
        """L2 hit share of `panel`'s reads in task `index` (0-based) of the cores `members` (a group that one
        representative stands for). `waves`: where the readers of each wave's panels are kept between calls
        (by task index; an empty dict to start)."""
        if self.first_reads is None or self.first_reads[0] != panel:
            return default
        _, per_batch, fast_count, last = self.first_reads
        if index > last:
            return 1.0
        blocks = self.tasks // self.split

        def key(t: int) -> tuple[int, int, int]:  # (split, batch, fast panel) of task t
            b = t % blocks
            return t // blocks, b // per_batch, (b % per_batch) % fast_count

        miss = 0.0
        readers = None  # tasks of this wave per panel, counted once
        for c in members:
            t = c + index * cores
            if t >= self.tasks:
                continue
            split, batch, f = key(t)
            first = split * blocks + batch * per_batch + f  # the first task that reads this panel
            if first // cores == index:
                if readers is None:
                    readers = waves.get(index) if waves is not None else None
                    if readers is None:
                        wave = range(index * cores, min(self.tasks, (index + 1) * cores))
                        readers = Counter(key(u) for u in wave)
                        if waves is not None:
                            waves[index] = readers
                miss += 1.0 / readers[(split, batch, f)]
        return 1.0 - miss / len(members)


def _layout(shape: GemmShape, params: HgemmParams, tiling: Tiling, hw: HardwareProfile, warm_l2: bool) -> _Layout:
    m, n, k, batch = shape.m, shape.n, shape.k, shape.batch
    bm, bn = math.ceil(m / tiling.m0), math.ceil(n / tiling.n0)
    blocks = bm * bn * batch
    split = params.split_k
    tasks = blocks * split
    acc = math.ceil(k / tiling.k0)
    per_task = max(1, math.ceil(acc / split))
    cores = hw.ai_cores
    per_core = [tasks // cores + (c < tasks % cores) for c in range(min(cores, tasks))]  # tasks c, c + cores, ...
    # Tasks run in waves of `cores`; task t is split t // blocks of block t % blocks. Blocks are swizzled:
    # the direction with fewer blocks varies fastest, so a wave's cores share panels (and L2 serves them).
    wave = min(cores, tasks)

    example = params.variant == "gemm-example"
    direction = example_swizzle_direction(m, n)

    def block_of(t: int) -> tuple[int, int, int]:
        b = t % blocks
        p, r = divmod(b, bm * bn)
        if example:
            return (p, *example_block(r, bm, bn, direction))
        i, j = (r % bm, r // bm) if bm <= bn else (r // bn, r % bn)
        return p, i, j

    first = [(*block_of(t), t // blocks) for t in range(wave)]  # (batch, panel A, panel B, split)
    # mean over the wave's tasks of how many share its panel: the sum of each panel's readers squared
    share_a = sum(c * c for c in Counter((p, i, s) for p, i, _, s in first).values()) / wave
    share_b = sum(c * c for c in Counter((p, j, s) for p, _, j, s in first).values()) / wave
    if params.shuffle_k and not example:  # CATLASS's basic matmul has no ShuffleK: its cores start at K = 0
        # ShuffleK starts each core at a different K block: sharers collide only when there are fewer
        # K blocks than cores sharing the panel.
        serial_a, serial_b = max(1.0, share_a / per_task), max(1.0, share_b / per_task)
    else:
        serial_a, serial_b = share_a, share_b  # cores in lockstep read the same ranges together
    # L2 (reuse distance): with the swizzle, a panel of the direction with more blocks (the "slow" one) is
    # read by the few consecutive tasks that share it, so only its first read misses. A panel of the other
    # ("fast") direction is read again each time the slow index advances: it hits if all fast panels plus
    # the slow panels of one wave stay in L2, else only the cores of one wave share it.
    padded_a, padded_b = _padded(shape, params)
    k_task = min(k, per_task * tiling.k0)
    panel_a, panel_b = tiling.m0 * k_task * _FP16, k_task * tiling.n0 * _FP16
    fast_is_a = bm <= bn
    fast_count, slow_count = (bm, bn) if fast_is_a else (bn, bm)
    fast_panel, slow_panel = (panel_a, panel_b) if fast_is_a else (panel_b, panel_a)
    share_fast, share_slow = (share_a, share_b) if fast_is_a else (share_b, share_a)
    slow_per_wave = max(1, math.ceil(wave / fast_count))
    working_set = fast_count * fast_panel + slow_per_wave * slow_panel
    fast_resident = working_set <= hw.l2_cache_bytes
    hit_slow = 1 - 1 / fast_count if fast_count <= wave else 1 - 1 / max(share_slow, 1.0)
    # A working set larger than L2 keeps the part that fits (resident share L2 / working set): those fast
    # panels hit as if all were resident, the rest are shared by one wave's cores only. Without this the hit
    # rate fell from 1 - 1/slow_count to 1 - 1/share_fast at one byte past L2 (a 3x step per flop between
    # 8192^3 and 10240^3 on a 24-core 192 MiB L2). Estimate: the replacement policy of the 910B's L2 is not
    # public; pure LRU would keep none of a cyclic stream, a policy that keeps a fixed part of it (random,
    # adaptive insertion) keeps this share.
    resident = 1.0 if fast_resident else hw.l2_cache_bytes / working_set  # K = 0 moves no panel: resident
    hit_fast = resident * (1 - 1 / slow_count) + (1 - resident) * (1 - 1 / max(share_fast, 1.0))
    hit_a, hit_b = (hit_fast, hit_slow) if fast_is_a else (hit_slow, hit_fast)
    if example:
        # GemmIdentityBlockSwizzle<3, 0>: a band's (at most 3) A panels are read along the whole band and stay
        # in L2, so each is fetched once; a B panel is fetched once for the band's M blocks, which read it
        # together, and again by the next band unless all of B stays in L2. <3, 1>: the same with A and B
        # exchanged (bands of 3 N blocks).
        if direction == 0:
            b_resident = k_task * n * _FP16 + _EXAMPLE_SWIZZLE * panel_a <= hw.l2_cache_bytes
            hit_a = 1 - 1 / bn
            hit_b = 1 - 1 / (bm if b_resident else min(bm, _EXAMPLE_SWIZZLE))
        else:
            a_resident = m * k_task * _FP16 + _EXAMPLE_SWIZZLE * panel_b <= hw.l2_cache_bytes
            hit_b = 1 - 1 / bm
            hit_a = 1 - 1 / (bn if a_resident else min(bn, _EXAMPLE_SWIZZLE))
        fast_resident = False
    footprint = (m * k + k * n) * _FP16 * batch
    c_resident = _c_resident(shape, params, hw, warm_l2)
    warm_a = footprint <= hw.l2_cache_bytes and (warm_l2 or padded_a)
    warm_b = footprint <= hw.l2_cache_bytes and (warm_l2 or padded_b)
    if warm_a:
        hit_a = 1.0  # the padding pass (or a previous kernel) left A in L2
    if warm_b:
        hit_b = 1.0
    first_reads = None
    if fast_resident and not (warm_a if fast_is_a else warm_b) and slow_count > 1:
        # The first reads must fall in the tasks every truncated run keeps (one fewer for the shorter
        # group), else the extrapolation would lose them: a core's first tasks only (one batch, no SplitK).
        last = ((split - 1) * blocks + (batch - 1) * bm * bn + fast_count - 1) // cores  # the last first read
        if last < _KEEP_TASKS[0] - 1 or max(per_core) <= _KEEP_TASKS[1]:
            first_reads = ("a" if fast_is_a else "b", bm * bn, fast_count, last)
    rates = row_rates(shape, params, hw.gm_alignment_bytes, hw.nd2nz_alignment_bytes)
    return _Layout(
        tasks, split, per_task, per_core, min(tiling.m0, m), min(tiling.n0, n), min(tiling.k0, k),
        serial_a, serial_b, hit_a, hit_b,
        aligned_a=rates["A"] == "full", aligned_b=rates["B"] == "full", aligned_c=rates["C"] == "full",
        nd2nz_unaligned_a=rates["A"] == "nd2nz", nd2nz_unaligned_b=rates["B"] == "nd2nz",
        c_resident=c_resident, first_reads=first_reads,
    )


def example_swizzle_direction(m: int, n: int) -> int:
    """The SwizzleDirection of GemmExample's GemmIdentityBlockSwizzle<3, direction> for an M x N output
    (elements): 0 when M > N, else 1, as hicann/catlass examples/00_basic_matmul/basic_matmul.cpp chose it
    from ba00df1a (2025-01) to ef8be58d (2025-05), the CANN 8.0.0 era of the HGEMM paper's baseline (later
    versions always use <3, 0>)."""
    return 0 if m > n else 1


def example_block(r: int, bm: int, bn: int, direction: int = 0) -> tuple[int, int]:
    """(M block, N block) of GemmExample's task `r` (0-based, within one batch of bm x bn blocks): CATLASS's
    GemmIdentityBlockSwizzle<3, direction>::GetBlockCoord (include/catlass/gemm/block/block_swizzle.hpp).
    direction 0 ("Zn"): bands of 3 M blocks (fewer in the last band), M fastest within a band, and the N order
    reversed in every odd band; direction 1 ("Nz"): bands of 3 N blocks, N fastest, the M order reversed in
    every odd band.

    Raises:
        ValueError: direction other than 0 or 1.
    """
    if direction not in (0, 1):
        raise ValueError(f"swizzle direction must be 0 or 1, got {direction!r}")
    slow, fast = (bm, bn) if direction == 0 else (bn, bm)  # banded direction, and the one walked along a band
    band, inside = divmod(r, _EXAMPLE_SWIZZLE * fast)
    width = min(_EXAMPLE_SWIZZLE, slow - band * _EXAMPLE_SWIZZLE)
    banded, along = band * _EXAMPLE_SWIZZLE + inside % width, inside // width
    if band % 2:
        along = fast - 1 - along
    return (banded, along) if direction == 0 else (along, banded)


def simulate_hgemm(shape: GemmShape, params: HgemmParams, hw: HardwareProfile, warm_l2: bool = False,
                   force_exact: bool = False, every_core: bool = False) -> tuple[SimResult, Tiling]:
    """Simulated run of one (batched) GEMM: time, phases ("launch", "padding", "gemm", "epilogue"), pipe busy
    time and counters; and the tiling used. Milliseconds of host time at any size: the task and K-block loops
    are extrapolated from truncated runs (force_exact: every iteration) and cores with the same task count
    are simulated once, weighted (every_core: each core; HBM and L2 then serve whole transfers first come,
    first served, where the weighted representative sees its group's transfers served together).

    Raises ParamError / BufferCapacityError as resolve_tiling does."""
    with gc_paused():  # the engine's ops are freed without the collector (see gc_paused)
        return _simulate_hgemm(shape, params, hw, warm_l2, force_exact, every_core)


def simulated_seconds(shape: GemmShape, params: HgemmParams, hw: HardwareProfile,
                      every_core: bool = False) -> float:
    """simulate_hgemm(shape, params, hw, every_core=every_core)'s time in seconds (cold L2), kept in RUN_CACHE
    by shape, equivalent_params, profile and every_core: options that simulate the same run (e.g. padding on
    or off where nothing is padded) are simulated once per process, as the tuner meets them.

    Raises ParamError / BufferCapacityError as resolve_tiling does (nothing is kept then)."""
    key = ("seconds", shape, equivalent_params(shape, params), hw, every_core)
    seconds = RUN_CACHE.get(key)
    if seconds is None:
        # the result (and its ops) is dropped before the collector runs again, which then has nothing to scan
        with gc_paused():
            seconds = simulate_hgemm(shape, params, hw, every_core=every_core)[0].time_s
        RUN_CACHE.put(key, seconds)
    return seconds


def _simulate_hgemm(shape: GemmShape, params: HgemmParams, hw: HardwareProfile, warm_l2: bool, force_exact: bool,
                    every_core: bool) -> tuple[SimResult, Tiling]:
    tiling = resolve_tiling(shape, params, hw)
    launch = fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)
    parts: list[tuple[SimResult, int]] = [(launch, 1)]
    m, n, k = shape.m, shape.n, shape.k
    if m == 0 or n == 0:
        return sequence(parts), tiling
    ab = params.alpha != 0 and k > 0
    layout = _layout(shape, params, tiling, hw, warm_l2)
    pad_elems, pad_out = _padding(shape, params)
    if pad_elems:
        # The padded copies are read by the AIC right after; while they fit L2 they are not written back.
        resident = pad_out * _FP16 <= hw.l2_cache_bytes
        parts.append((copy_pass(hw, pad_elems, _FP16, _FP16 * pad_out / pad_elems, warm_l2, "padding",
                                force_exact, writeback=not resident), 1))
        parts.append((fixed_cost(hw, hw.cross_core_flag_cycles, "padding", cross_core_flags=1), 1))
    if ab:
        epilogue_inline = params.variant == "proposed"

        programs: dict[tuple[int, int, bool], _GemmProgram] = {}
        groups: dict[tuple[int, bool], tuple[_CoreGroup, ...]] = {}

        def program(skip: int, kept_blocks: int, group_cores: bool) -> _GemmProgram:
            key = (skip, kept_blocks, group_cores)
            if key not in programs:
                if (skip, group_cores) not in groups:
                    groups[(skip, group_cores)] = _core_groups(skip, layout, hw, group_cores)
                programs[key] = _gemm_program(groups[(skip, group_cores)], kept_blocks, layout, tiling, params, hw,
                                              epilogue_inline)
            return programs[key]

        def build(engine: Engine, skip: int, kept_blocks: int) -> None:
            _build_gemm(engine, program(skip, kept_blocks, engine.group_cores))

        # Exact runs are one-off checks of the extrapolation: they are not cached.
        gemm = simulate_2d(hw, build, max(layout.per_core), layout.blocks_per_task, warm_l2=warm_l2,
                           keep_tasks=_KEEP_TASKS, keep_blocks=_keep_blocks(tiling), force_exact=force_exact,
                           every_core=every_core, prefix=True, cache=None if force_exact else RUN_CACHE,
                           cache_key=lambda skip, kept_blocks: program(skip, kept_blocks, not every_core))
        parts.append((gemm, 1))
        if not epilogue_inline and (params.alpha != 1 or params.beta != 0):
            parts.append((_elementwise_pass(hw, shape, params, layout.c_resident, force_exact), 1))
    else:
        parts.append((_elementwise_pass(hw, shape, params, layout.c_resident, force_exact), 1))
    result = sequence(parts)
    result.counters.update(hgemm_counters(shape, params, tiling, _k_splits(tiling, params, hw)))
    return result, tiling


def _keep_blocks(tiling: Tiling) -> tuple[int, int]:
    """Inner (K block) counts of the truncated runs: whole L1 panels, at least 8 blocks."""
    per_l1 = max(1, tiling.k1 // tiling.k0)
    first = per_l1 * math.ceil(8 / per_l1)
    return (first, 2 * first)


def _elementwise_pass(hw, shape: GemmShape, params: HgemmParams, resident: bool, force_exact: bool) -> SimResult:
    """C = beta * C (+ alpha * C1 for gemm-example) on all AIVs: read C (and C1) and write C; from and to
    L2 only where they are resident (_c_resident)."""
    elems = shape.m * shape.n * shape.batch
    reads = (1 if params.beta != 0 else 0) + (1 if params.alpha != 0 and shape.k > 0 else 0)
    return copy_pass(hw, elems, _FP16 * max(reads, 0) or 1e-9, _FP16, resident, "epilogue", force_exact,
                     writeback=not resident)


def row_rates(shape: GemmShape, params: HgemmParams, gm_alignment_bytes: int,
              nd2nz_alignment_bytes: int) -> dict[str, str]:
    """The rate each operand's GM rows move at, {"A", "B", "C"} -> "full", "unaligned" (rows not
    gm_alignment_bytes-aligned: the profile's unaligned_efficiency) or "nd2nz" (A or B panels loaded GM -> L1
    with ND2NZ from rows not nd2nz_alignment_bytes-aligned: nd2nz_unaligned_efficiency, which replaces the
    other). The proposed kernel's padding (on by default) makes A's and B's rows full-rate; C is never padded.
    Alignments in bytes, as the profile gives them (passed apart so that a result's constants serve too)."""
    rates = {}
    for name, row, padded in zip("AB", (shape.k, shape.n), _padded(shape, params), strict=True):
        if padded:
            rates[name] = "full"
        elif (row * _FP16) % nd2nz_alignment_bytes:
            rates[name] = "nd2nz"
        else:
            rates[name] = "unaligned" if (row * _FP16) % gm_alignment_bytes else "full"
    rates["C"] = "unaligned" if (shape.n * _FP16) % gm_alignment_bytes else "full"
    return rates


def _padded(shape: GemmShape, params: HgemmParams) -> tuple[bool, bool]:
    """Whether the proposed kernel (padding on) pads A, and B: their rows are not 512-byte aligned."""
    on = params.padding and params.variant == "proposed"
    return on and (shape.k * _FP16) % _PAD_ALIGN_BYTES != 0, on and (shape.n * _FP16) % _PAD_ALIGN_BYTES != 0


def equivalent_params(shape: GemmShape, params: HgemmParams) -> HgemmParams:
    """`params` with the options that cannot change this shape's run set to their defaults, so that options
    that simulate the same program compare equal (the tuner evaluates one of them): padding where neither A
    nor B would be padded (rows of K and N elements already 512-byte aligned) or for gemm-example, which has
    no padding, and shuffle_k for gemm-example, which has no ShuffleK."""
    out = params
    if not params.padding and _padded(shape, replace(params, padding=True)) == (False, False):
        out = replace(out, padding=True)
    if params.variant == "gemm-example" and not params.shuffle_k:
        out = replace(out, shuffle_k=True)
    return out


def _padding(shape: GemmShape, params: HgemmParams) -> tuple[int, int]:
    """Elements the pad pass reads and writes (A and B as _padded says, when A and B are read at all);
    (0, 0) when nothing is padded."""
    m, n, k, batch = shape.m, shape.n, shape.k, shape.batch
    if params.alpha == 0 or k == 0:
        return 0, 0
    pad_a, pad_b = _padded(shape, params)
    elems, out = 0, 0
    if pad_a:
        elems, out = elems + m * k, out + m * math.ceil(k / _ALIGN_ELEMS) * _ALIGN_ELEMS
    if pad_b:
        elems, out = elems + k * n, out + k * math.ceil(n / _ALIGN_ELEMS) * _ALIGN_ELEMS
    return elems * batch, out * batch


def _c_resident(shape: GemmShape, params: HgemmParams, hw: HardwareProfile, warm_l2: bool) -> bool:
    """With a warm L2 (back-to-back runs), whether everything a run touches fits L2 together, so that C is
    read from L2 and its writes stay there: C, and where A and B are read, A, B, their padded copies and
    (gemm-example) the A @ B workspace."""
    m, n, k, batch = shape.m, shape.n, shape.k, shape.batch
    if not warm_l2:
        return False
    elems = m * n * batch
    if params.alpha != 0 and k > 0:
        elems += (m * k + k * n) * batch + _padding(shape, params)[1]
        if params.variant == "gemm-example":
            elems += m * n * batch
    return elems * _FP16 <= hw.l2_cache_bytes


@dataclass(frozen=True)
class _CoreGroup:
    """One representative core of a truncated run and what differs between representatives."""

    core: int  # its index (names its units)
    weight: int  # cores with the same task count that it stands for
    first_task: int  # Engine.task of its first kept task
    hits: tuple[tuple[float, float], ...]  # L2 hit share of the A and B panel reads, per kept task


@dataclass(frozen=True)
class _GemmProgram:
    """Everything _build_gemm emits for one truncated run, and nothing else: two runs with equal programs
    measure the same, so this is the key of the run cache (RUN_CACHE). Block sizes are the effective ones
    (min(tile, size)); depths are the slots of L1, L0A, L0B, L0C and UB."""

    hw: HardwareProfile
    groups: tuple[_CoreGroup, ...]
    kept_blocks: int
    m0: int
    n0: int
    k0: int
    per_l1: int  # K0 blocks per L1 panel
    splits: int  # Mmads per K0 block (_k_splits)
    depths: tuple[int, int, int, int, int]
    l0c_halves: bool
    epilogue_inline: bool
    beta: bool  # beta != 0: the AIVs read C
    atomic: bool  # SplitK: C is accumulated atomically
    aligned_a: bool
    aligned_b: bool
    aligned_c: bool
    nd2nz_unaligned_a: bool
    nd2nz_unaligned_b: bool
    c_resident: bool  # C stays in L2 (warm L2, A + B + C fit): read from L2, not written back
    serial_a: float
    serial_b: float


def _core_groups(skip: int, lay: _Layout, hw: HardwareProfile, group_cores: bool) -> tuple[_CoreGroup, ...]:
    """The representative cores of the truncated run that drops `skip` tasks from every core: one per group of
    cores with the same task count (every core where group_cores is off)."""
    counts = lay.per_core
    cores = hw.ai_cores
    max_kept = max(max(c - skip, min(c, 1)) for c in counts)
    groups = []
    waves: dict = {}  # fast_hit's readers per wave, shared by the groups
    # tasks after the last first read of a fast panel (_Layout.first_reads) all read with the same hit shares
    varying = lay.first_reads[3] + 1 if lay.first_reads is not None else 0
    for core, weight in core_groups(counts, group_cores):
        members = [c for c in range(len(counts)) if counts[c] == counts[core]] if weight > 1 else [core]
        kept_tasks = max(counts[core] - skip, min(counts[core], 1))
        hits = tuple((lay.fast_hit("a", members, task, cores, lay.hit_a, waves),
                      lay.fast_hit("b", members, task, cores, lay.hit_b, waves))
                     for task in range(min(kept_tasks, varying + 1)))
        hits += hits[-1:] * (kept_tasks - len(hits))
        # Tasks are numbered so that every core's last task has the same number, as truncating drops the
        # same count from every core (a core with fewer tasks starts at a higher number).
        groups.append(_CoreGroup(core, weight, max_kept - kept_tasks, hits))
    return tuple(groups)


def _gemm_program(groups: tuple[_CoreGroup, ...], kept_blocks: int, lay: _Layout, tiling: Tiling,
                  params: HgemmParams, hw: HardwareProfile, epilogue_inline: bool) -> _GemmProgram:
    """The program of the truncated run of the representative cores `groups` (_core_groups) that keeps
    `kept_blocks` K blocks per task."""
    depths = _buffer_depths(tiling, params, hw)
    return _GemmProgram(
        hw, groups, kept_blocks, lay.m_eff, lay.n_eff, lay.k_eff, max(1, tiling.k1 // tiling.k0),
        _k_splits(tiling, params, hw), (depths["L1"], depths["L0A"], depths["L0B"], depths["L0C"], depths["UB"]),
        l0c_halves=params.variant == "proposed" and params.double_buffer and depths["L0C"] == 1,
        epilogue_inline=epilogue_inline, beta=params.beta != 0, atomic=params.split_k > 1,
        aligned_a=lay.aligned_a, aligned_b=lay.aligned_b, aligned_c=lay.aligned_c,
        nd2nz_unaligned_a=lay.nd2nz_unaligned_a, nd2nz_unaligned_b=lay.nd2nz_unaligned_b, c_resident=lay.c_resident,
        serial_a=lay.serial_a, serial_b=lay.serial_b,
    )


def _build_gemm(engine: Engine, prog: _GemmProgram) -> None:
    """Per representative core and task: panels to L1, blocks to L0A/L0B, Mmads into L0C, C1 to GM; the two
    AIVs finish the block (Algorithm 1 lines 12-33). Reads nothing but `prog` (it is the run cache's key)."""
    hw = prog.hw
    m0, n0, k0, per_l1, kept_blocks = prog.m0, prog.n0, prog.k0, prog.per_l1, prog.kept_blocks
    l1_depth, l0a_depth, l0b_depth, l0c_depth, ub_depth = prog.depths
    l0c_halves, epilogue_inline = prog.l0c_halves, prog.epilogue_inline
    # Invariants of the block loop, computed once.
    move_bytes = (m0 + n0) * k0 * _FP16
    l1_to_l0 = hw.l1_to_l0_bytes_per_cycle
    panels: dict[int, tuple[int, int, float, float]] = {}  # K extent -> bytes and serialisation of A, B
    for span in {min(per_l1, kept_blocks - kb) * k0 for kb in range(0, kept_blocks, per_l1)}:
        bytes_a, bytes_b = m0 * span * _FP16, span * n0 * _FP16
        panels[span] = (bytes_a, bytes_b, _serialised(prog.serial_a), _serialised(prog.serial_b))
    # rows of the C block each AIV finishes (the first takes the larger half)
    halves = [math.ceil(m0 / 2) if h == 0 else m0 - math.ceil(m0 / 2) for h in range(hw.aiv_per_core)]
    parts = 2 if l0c_halves else 1
    c_bytes = m0 * n0 * _FP16 / parts
    for group in prog.groups:
        core = group.core
        aic = f"core{core}.aic"
        aivs = [f"core{core}.aiv{h}" for h in range(hw.aiv_per_core)]
        for unit in [aic, *aivs]:
            engine.set_weight(unit, group.weight)
        l1 = Ring(l1_depth)
        l0c, c1_slots = Ring(l0c_depth), Ring(2)
        chain = _PanelChain(aic, move_bytes, l1_to_l0, engine.cube_cycles(m0, n0, k0), hw.cube_latency_cycles,
                            min(l0a_depth, l0b_depth), prog.splits == 2)
        # A block that fills L0C is double-buffered by halves in the proposed kernel: the FIXPIPE drains it
        # half by half, and the next block's first Mmads reuse each half as soon as it is drained.
        drained: list = []
        ub = [Ring(ub_depth) for _ in aivs]
        # The transfers' kinds (Engine.transfer), looked up once: panel reads by K extent and hit shares, the
        # FIXPIPE's write, and per AIV its reads of C and C1 and its write of C.
        panel_kinds: dict[tuple[int, float, float], tuple] = {}
        if epilogue_inline:
            fp_kind = engine.write_kind(c_bytes, writeback=False)
        else:
            fp_kind = engine.write_kind(c_bytes, writeback=not prog.c_resident, aligned=prog.aligned_c)
        epilogue = []
        for rows in halves:
            half = rows * n0 * _FP16
            epilogue.append((
                half,
                engine.read_kind(half, l2_hit=prog.c_resident, aligned=prog.aligned_c) if prog.beta else None,
                engine.read_kind(half, l2_hit=True),
                engine.write_kind(2 * half if prog.atomic else half, writeback=not prog.c_resident,
                                  aligned=prog.aligned_c)))
        engine.phase = "gemm"
        for task, (hit_a, hit_b) in enumerate(group.hits):
            engine.task = group.first_task + task
            c_slot = None if l0c_halves else l0c.wait()
            mm = None
            for kb0 in range(0, kept_blocks, per_l1):
                # The panels GM -> L1, then the panel's blocks L1 -> L0A/L0B and their Mmads as one composite
                # op (_PanelChain): they touch no shared server, so the engine need not schedule them one by one.
                blocks = min(per_l1, kept_blocks - kb0)
                kinds = panel_kinds.get((blocks, hit_a, hit_b))
                if kinds is None:
                    bytes_a, bytes_b, serial_a, serial_b = panels[blocks * k0]
                    kinds = panel_kinds[(blocks, hit_a, hit_b)] = (
                        engine.read_kind(bytes_a, l2_hit=hit_a, aligned=prog.aligned_a, serial=serial_a,
                                         nd2nz_unaligned=prog.nd2nz_unaligned_a),
                        engine.read_kind(bytes_b, l2_hit=hit_b, aligned=prog.aligned_b, serial=serial_b,
                                         nd2nz_unaligned=prog.nd2nz_unaligned_b))
                slot = l1.wait()
                panel_a = engine.transfer(aic, "MTE2", kinds[0], [slot], "panel A->L1")
                panel_b = engine.transfer(aic, "MTE2", kinds[1], [slot], "panel B->L1")
                # L0C: the task's first block waits for its slot; a block that fills L0C waits, block by block,
                # for the halves of the previous task's C to drain.
                slots = [(kb, drained[kb] if l0c_halves and kb < len(drained) else (c_slot if kb == 0 else None))
                         for kb in range(kb0, kb0 + min(blocks, 2))]
                mm = chain.panel(engine, blocks, (panel_a, panel_b),
                                 [(kb - kb0, dep) for kb, dep in slots if dep is not None])
                l1.push(mm)
            # An L0C slot (or half) is free once the FIXPIPE has moved it out, before the GM write completes.
            drained = []
            fp = mm
            for _part in range(parts):
                if epilogue_inline:
                    fp = engine.transfer(aic, "FIXPIPE", fp_kind, [mm, c1_slots.wait(), fp], "C1->GM (fp16)")
                else:
                    fp = engine.transfer(aic, "FIXPIPE", fp_kind, [mm, fp], "C->GM (fp16)")
                drained.append(engine.moved_out(fp))
            l0c.push(drained[-1])
            if not epilogue_inline:
                continue
            ready = engine.flag(fp)
            reads = []
            for h, aiv in enumerate(aivs):
                if halves[h] <= 0:
                    continue
                half, c_kind, c1_kind, write_kind = epilogue[h]
                engine.phase = "epilogue"
                deps = [ub[h].wait()]
                if prog.beta:
                    rc = engine.transfer(aiv, "MTE2", c_kind, deps, "C->UB")
                    deps = [engine.vector(aiv, half, deps=[rc], label="beta*C")]
                rd = engine.transfer(aiv, "MTE2", c1_kind, [*deps, ready], "C1->UB")
                reads.append(rd)
                vec = engine.vector(aiv, half, deps=[rd], label="alpha*C1 + beta*C", passes=2 if prog.beta else 1)
                wr = engine.transfer(aiv, "MTE3", write_kind, [vec],
                                     "C += (atomic)" if prog.atomic else "C->GM")
                ub[h].push(wr)
                engine.phase = "gemm"
            if reads:
                c1_slots.push(reads[-1])


def _dep_time(dep) -> float:
    """When a dependency (Op, (Op, delay) or (Op, None): Engine.run's forms) lets an op start."""
    if dep.__class__ is Op:
        return dep.end
    return dep[0].release if dep[1] is None else dep[0].end + dep[1]


class _PanelChain:
    """The MTE1 -> Mmad chain of one AIC: per K0 block, one MTE1 op moves the A and the B block L1 -> L0A/L0B
    and one Mmad accumulates them in L0C. Each L1 panel's blocks are one composite op (Engine.composite) whose
    schedule applies Engine.run's rule op by op (an op starts after its pipe's previous op has released it
    and every dependency is met), with the dependencies the ops had as separate ops:
    - a move: the panel's GM -> L1 loads (the panel's first move); a free L0A/L0B slot, i.e. the Mmad
      `depth` blocks before has ended (L0A and L0B hold the same blocks and are freed by the same Mmad, so
      the ring with fewer slots decides); with `halves` (the block moved and multiplied in two K0/2 halves,
      _k_splits) instead the previous Mmad being half done: its end minus half its cycles;
    - a Mmad: its move (with `halves`, the move's first half: its end minus half its cycles), its L0C slot
      (the task's first blocks) and the previous Mmad's end (it accumulates into the same L0C block).
    The chain carries the last move's release and the Mmads' ends from one panel to the next (across tasks)."""

    def __init__(self, unit: str, move_bytes: int, l1_to_l0: float, fractals: int, latency: float, depth: int,
                 halves: bool):
        self.unit, self.move_bytes, self.fractals, self.latency = unit, move_bytes, fractals, latency
        self.move_cycles = move_bytes / l1_to_l0
        self.depth, self.halves = depth, halves
        self.mm_label = "Mmad (two K0/2 halves)" if halves else "Mmad"
        # Set as the composites run, in program order. Before the first move and Mmad: 0, as for an op with
        # no predecessor on its pipe (times are never negative, so these bind nothing). mm_ends: the ends of
        # the last two Mmads, the older first (L0A and L0B hold at most two blocks).
        self.move_release = 0.0
        self.mm_release = 0.0
        self.mm_ends = (0.0, 0.0)

    def panel(self, engine: Engine, blocks: int, panels: tuple[Op, Op], slots: list[tuple[int, Any]]) -> Op:
        """The composite of one panel's `blocks` moves and Mmads; `slots`: (block, L0C slot dependency)."""
        unit = self.unit
        engine.count(unit, (("bytes_l1_to_l0", self.move_bytes * blocks), ("matmuls", blocks),
                            ("cube_fractals", self.fractals * blocks)))

        def schedule(op: Op) -> float:
            move, fractals, latency, depth, halves = self.move_cycles, self.fractals, self.latency, self.depth, \
                self.halves
            ready = max(panels[0].end, panels[1].end)
            slot_at = [None, None]
            for b, d in slots:
                slot_at[b] = _dep_time(d)
            move_rel, mm_rel = self.move_release, self.mm_release
            mm_end2, mm_end = self.mm_ends
            half_mm, half_move = -fractals / 2, -move / 2
            # each op's start and release (its end: release + latency, a move's latency being 0)
            move_starts: list[float] = []
            move_releases: list[float] = []
            mm_starts: list[float] = []
            mm_releases: list[float] = []
            # The first two blocks (which wait for the panels and the L0C slots), or with halves every block,
            # by the rule as written; the others in the loop below.
            head = blocks if halves else min(blocks, 2)
            for b in range(head):
                t = move_rel
                if b == 0 and ready > t:
                    t = ready
                e = mm_end + half_mm if halves else (mm_end if depth == 1 else mm_end2)
                if e > t:
                    t = e
                move_rel = t + move
                move_starts.append(t)
                move_releases.append(move_rel)
                move_end = move_rel + 0.0
                t = mm_rel
                e = move_end + half_move if halves else move_end
                if e > t:
                    t = e
                if b < 2:
                    e = slot_at[b]
                    if e is not None and e > t:
                        t = e
                if mm_end > t:
                    t = mm_end
                mm_rel = t + fractals
                mm_end2, mm_end = mm_end, mm_rel + latency
                mm_starts.append(t)
                mm_releases.append(mm_rel)
            if head < blocks:
                # Past the first two blocks, without halves: a move waits for its L0A/L0B slot (the Mmad
                # `depth` blocks before ended), a Mmad for its move and the previous Mmad's end (which is not
                # before that Mmad's release): the same maxima as above, fewer comparisons.
                add_move, add_move_release = move_starts.append, move_releases.append
                add_mm, add_mm_release = mm_starts.append, mm_releases.append
                for _ in range(blocks - head):
                    e = mm_end if depth == 1 else mm_end2
                    t = e if e > move_rel else move_rel
                    move_rel = t + move
                    add_move(t)
                    add_move_release(move_rel)
                    t = mm_end if mm_end > move_rel else move_rel
                    mm_rel = t + fractals
                    mm_end2, mm_end = mm_end, mm_rel + latency
                    add_mm(t)
                    add_mm_release(mm_rel)
                move_end = move_rel + 0.0
            self.move_release, self.mm_release, self.mm_ends = move_rel, mm_rel, (mm_end2, mm_end)
            mte1, cube, move_label, mm_label = "MTE1", "CUBE", "A->L0A, B->L0B", self.mm_label

            def spans() -> list[tuple[str, str, float, float, float]]:
                out = []
                for t0, r0, t1, r1 in zip(move_starts, move_releases, mm_starts, mm_releases, strict=True):
                    out.append((mte1, move_label, t0, r0, r0 + 0.0))
                    out.append((cube, mm_label, t1, r1, r1 + latency))
                return out

            # moves and Mmads each end later and later: the latest end is the last of either
            op.parts = Parts(spans, [(mte1, list(map(sub, move_releases, move_starts))),
                                     (cube, list(map(sub, mm_releases, mm_starts)))], max(move_end, mm_end))
            op.start, op.latency = move_starts[0], latency
            return mm_rel

        deps = [*panels, *(d for _, d in slots)]
        return engine.composite(unit, "CUBE", f"{blocks} x (A->L0A, B->L0B; {self.mm_label})", deps, schedule)


def _serialised(sharers: float) -> float:
    """Slow-down (>= 1) of a panel read whose 512-byte ranges `sharers` cores read at the same time: requests
    to one range are served one after another (HGEMM paper §4.3.2; CANN "避免同地址访问"), each extra sharer
    adding _SAME_RANGE_COST of queueing to every range, so 1 + 0.01 (sharers - 1). sharers <= 1: 1."""
    return 1.0 + _SAME_RANGE_COST * (max(sharers, 1.0) - 1.0)


def hgemm_counters(shape: GemmShape, params: HgemmParams, tiling: Tiling, splits: int = 1) -> dict[str, float]:
    """Closed-form work counts: matmuls (Mmad instructions: one per M0 x N0 x K0 block, or `splits` when a
    block is multiplied in K0/2 halves, see _k_splits), cube_fractals (16x16x16 fractal cycles over the actual
    block sizes), aicore_num (C blocks x split_k), acc_loop (K0 blocks per C block and split)."""
    m, n, k, batch = shape.m, shape.n, shape.k, shape.batch
    if m == 0 or n == 0 or k == 0 or params.alpha == 0:
        return {"matmuls": 0, "cube_fractals": 0, "aicore_num": 0, "acc_loop": 0}

    def fractal_sum(size: int, tile: int, step: int) -> tuple[int, int]:
        full, rest = divmod(size, tile)
        count = full + (1 if rest else 0)
        return count, full * math.ceil(tile / step) + (math.ceil(rest / step) if rest else 0)

    bm, fm = fractal_sum(m, tiling.m0, 16)
    bn, fn = fractal_sum(n, tiling.n0, 16)
    bk, fk = fractal_sum(k, tiling.k0, 16)
    return {
        "matmuls": bm * bn * bk * batch * splits,
        "cube_fractals": fm * fn * fk * batch,
        "aicore_num": bm * bn * batch * params.split_k,
        "acc_loop": math.ceil(bk / params.split_k),
    }


# ----- function ---------------------------------------------------------------------------------------
def compute_hgemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, params: HgemmParams,
                  tiling: Tiling) -> np.ndarray:
    """The kernel's output, in its own arithmetic: per K split, C1 = A @ B accumulated in fp32 and written as
    fp16 (FIXPIPE); the AIVs compute beta * C and alpha * C1 in fp16 and add in fp16 (SplitK partials are
    added to C one after another, as the atomic adds do).

    a: (batch, M, K) float16; b: (batch, K, N) float16; c: (batch, M, N) float16 or None (beta == 0: C is
    not read). Returns (batch, M, N) float16. alpha == 0 does not read A and B; K == 0 gives beta * C.
    """
    batch, m, k = a.shape
    n = b.shape[2]
    alpha = np.float16(params.alpha)
    beta = np.float16(params.beta)
    with np.errstate(over="ignore", invalid="ignore"):
        if params.beta != 0 and c is not None:
            out = (beta * c.astype(np.float16)).astype(np.float16)
        else:
            out = np.zeros((batch, m, n), dtype=np.float16)
        if params.alpha == 0 or k == 0 or m == 0 or n == 0:
            return out
        split = params.split_k if params.variant == "proposed" else 1
        acc = math.ceil(k / tiling.k0)
        per = math.ceil(acc / split) * tiling.k0
        for s0 in range(0, k, per):
            s1 = min(k, s0 + per)
            c1 = np.matmul(a[:, :, s0:s1].astype(np.float32), b[:, s0:s1, :].astype(np.float32)).astype(np.float16)
            out = (out + (alpha * c1).astype(np.float16)).astype(np.float16)
    return out


def fp16_overflow(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, out: np.ndarray,
                  params: HgemmParams) -> tuple[str, tuple[int, int, int], float] | None:
    """Where compute_hgemm's fp16 arithmetic overflowed although the inputs it read are finite: None, or
    (stage, (batch, row, column) of the first inf/NaN element of `out`, the float64 value there). stage "ab":
    the cube's fp16 C1 = A @ B (over all of K) passes 65504 before alpha scales it; "scaled": alpha * A @ B,
    beta * C or their sum does. Inputs holding NaN or inf return None (verify_hgemm reports them).

    a: (batch, M, K), b: (batch, K, N), c: (batch, M, N) or None, out: (batch, M, N), all float16."""
    if out.size == 0 or np.isfinite(out).all():
        return None
    reads_ab = params.alpha != 0 and a.shape[2] > 0
    read = ([a, b] if reads_ab else []) + ([c] if params.beta != 0 and c is not None else [])
    if not all(np.isfinite(x).all() for x in read):
        return None
    where = tuple(int(i) for i in np.argwhere(~np.isfinite(out))[0])
    bi, i, j = where
    ab = float(np.dot(a[bi, i, :].astype(np.float64), b[bi, :, j].astype(np.float64))) if reads_ab else 0.0
    value = params.alpha * ab if reads_ab else 0.0
    if params.beta != 0 and c is not None:
        value += params.beta * float(c[bi, i, j])
    if abs(ab) > _FP16_MAX:
        return "ab", where, ab
    return "scaled", where, value


def verify_hgemm(a, b, c, out: np.ndarray, params: HgemmParams) -> Verification:
    """Compare with alpha * A @ B + beta * C in float64. Tolerance per element, from fp16 rounding:
    (split_k + 3) u16 (|alpha| |A||B| + |beta| |C|) + 4 sqrt(K) u32 |alpha| |A||B|, u16 = 2^-11, u32 = 2^-24
    (C1, alpha*C1, beta*C and the sums are each rounded to fp16; fp32 accumulation over K).

    An input holding NaN or inf (A or B with alpha != 0, C with beta != 0) fails, and the tolerance text names
    the operand and how many such elements it holds (the reference and the tile sums then hold NaN or inf)."""
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf inputs are reported, not warned about
        return _verify_hgemm(a, b, c, out, params)


def _verify_hgemm(a, b, c, out: np.ndarray, params: HgemmParams) -> Verification:
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    k = a.shape[2]
    ref = np.zeros(out.shape)
    scale = np.zeros(out.shape)
    if params.alpha != 0 and k > 0:
        ref += params.alpha * np.matmul(a64, b64)
        scale += abs(params.alpha) * np.matmul(np.abs(a64), np.abs(b64))
    cterm = np.zeros(out.shape)
    if params.beta != 0 and c is not None:
        ref += params.beta * c.astype(np.float64)
        cterm = abs(params.beta) * np.abs(c.astype(np.float64))
    split = params.split_k if params.variant == "proposed" else 1
    tol = (split + 3) * 2.0**-11 * (scale + cterm) + 4 * math.sqrt(max(k, 1)) * 2.0**-24 * scale + 2.0**-24
    got = out.astype(np.float64)
    diff = np.abs(got - ref)
    if diff.size == 0:
        return Verification(True, 0.0, 0.0, "empty")
    finite = np.isfinite(got).all()
    rel = float(np.max(diff / np.maximum(np.abs(ref), 1e-30))) if finite else math.inf
    passed = bool(finite and (diff <= tol).all())
    tolerance = "(split_k+3)*2^-11*(|alpha||A||B| + |beta||C|) + 4*sqrt(K)*2^-24*|alpha||A||B|"
    operands = [("A", a), ("B", b)] if params.alpha != 0 and k > 0 else []
    operands += [("C", c)] if params.beta != 0 and c is not None else []
    bad = [f"{name}: {int(x.size - np.count_nonzero(np.isfinite(x))):,} of {x.size:,}" for name, x in operands
           if not np.isfinite(x).all()]
    if bad:
        return Verification(False, math.inf, math.inf, f"{tolerance}; not checked: the input holds NaN or inf "
                            f"({', '.join(bad)} elements), which the fp16 cube spreads over its tiles")
    return Verification(passed, float(diff.max()) if finite else math.inf, rel, tolerance)
