"""Split (SplitInd) and compress: the scan paper's §5.1 and §5.2, functional and on the simulated machine.

Public API (other operators build on it):

- ``split_ind(values, flags, *, indices=None) -> SplitResult(values, indices, n_true)``
- ``compress(values, mask) -> np.ndarray`` (equals ``values[mask != 0]``)
- ``exclusive_flag_scan(flags) -> np.ndarray`` (the int8 MCScan's exclusive scan result: int32, int64 beyond 2**31 - 1)
- ``simulate_split(n, dtype, hw, *, variant="splitind", with_indices=True, predicate=False, warm_l2=False,
  indices_in=False, resident=False, n_true=None) -> SimResult``
- ``simulate_compress(n, dtype, hw, *, variant="mcscan", n_true=None, warm_l2=False) -> SimResult``
- ``simulate_flag_scan(n, hw, *, variant="mcscan", warm_l2=False) -> SimResult``

Function: SplitInd runs an exclusive scan of the 0/1 flags stored as int8 (the int8 MCScan, int32 output); the
scan gives each true element its output position; false elements go to ``n_true + i - scan[i]`` (the exclusive
scan of the inverted flags). Both are scattered in one vectorised NumPy step. The scan is an integer scan, so
NumPy's cumsum gives exactly the int32 words the int8 MCScan writes.

Timing (what the simulated machine runs, per the scan paper §5.1/§5.2 and KERNELS.md):
  1. (predicate=True) a vector pass on all AIVs evaluates the predicate on the values and writes the int8 mask;
  2. the exclusive int8 MCScan of the mask (kernels/scan.py "mcscan", s = 128) -- variant "splitind"; the
     baseline variant "vector" replaces it by a vector-only multi-core scan (every AIV reduces its part, SyncAll,
     every AIV scans its 128 x 128 tiles with AscendC CumSum as the single-core vec-cumsum does);
  3. SyncAll, then the gather on the AIVs only (the cube idles): 2d AIVs, d = the largest divisor of
     ceil(n / s^2) not above the AI-core count, each on tiles of s^2 / 2 elements: read mask, values (and
     indices), read the tile's offset from the scan, turn the mask into a bitmask, GatherMask the ones, invert,
     GatherMask the zeros, write both runs (not 512-byte aligned: the offsets are data-dependent).
  KERNELS.md says the authors' split kernel reduces the mask to per-core counts instead of running a full scan;
  we follow the paper's description (an MCScan of the mask), which is also what makes the cube matter for
  claim S-11.

Compress: the same scan, the host reads the count to size the output (a second kernel launch), then the
gather of the ones only. Baseline ("scalar"): masked_select on the scalar units only (the scan paper §6.2 says
the baseline uses neither vector nor cube units): every AIV moves pieces into UB with its MTEs and walks them
element by element on the SCALAR pipe, ``MASKED_SELECT_SCALAR_OPS`` scalar operations per element at the
profile's ``scalar_op_cycles``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels import contract
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.partition import PARTITION_LIMIT, index_bytes, offset_dtype, partitions
from ascendbench.kernels.programs import Ring, aiv_groups, copy_pass, loop, split_front
from ascendbench.kernels.scan import SCAN_KERNELS, ScanParams, cumsum_last_axis
from ascendbench.sim.engine import Engine
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate

__all__ = [
    "COMPRESS_VARIANTS",
    "FLAG_DTYPES",
    "MASKED_SELECT_SCALAR_OPS",
    "SPLIT_VARIANTS",
    "VALUE_BYTES",
    "SplitResult",
    "compress",
    "compress_partitioned",
    "exclusive_flag_scan",
    "gather_workers",
    "index_dtype",
    "simulate_compress",
    "simulate_flag_scan",
    "simulate_split",
    "split_ind",
    "split_ind_partitioned",
]

SPLIT_VARIANTS = ("splitind", "vector")
COMPRESS_VARIANTS = ("mcscan", "scalar")
FLAG_DTYPES = (np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8))
# Bytes per value of the dtypes the operators accept (NumPy names and the short names of the CLI).
VALUE_BYTES = {
    "fp16": 2, "float16": 2, "fp32": 4, "float32": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
    "int32": 4, "uint32": 4, "bool": 1,
}
INDEX_BYTES = 4  # int32 indices, as the measured SplitInd moves them (KERNELS.md); int64 (8) beyond 2**31 - 1
SCAN_S = 128  # the tile side of the scan and of the gather tiles (s^2 / 2 elements), KERNELS.md
# Scalar operations per element of the scalar-only masked_select: load the mask byte, compare-and-branch, load
# the value, store it (and bump the output pointer, folded into the store). Estimate from the loop's structure:
# there is no public instruction count for torch_npu's masked_select.
MASKED_SELECT_SCALAR_OPS = 4
_MASKED_SELECT_PIECE = 16384  # elements per UB piece of the scalar baseline (as the copy kernel's pieces)
_CUMSUM_TILE = (128, 128)  # AscendC CumSum (outer, inner) of the vector-only scan, as kernels/scan.py vec-cumsum
_ACC_BYTES = 4


def index_dtype(n: int) -> type:
    """int32 indices while every index fits (n <= 2**31 - 1), else int64 (CUB's offset-type rule;
    partition.offset_dtype)."""
    return offset_dtype(n)


@dataclass(frozen=True)
class SplitResult:
    """Output of SplitInd: `values` (n,) in the input dtype, true-flag elements first, both parts in input order;
    `indices` (n,) the original position of each output element (int32, int64 when n > 2**31 - 1); `n_true` the
    number of true flags."""

    values: np.ndarray
    indices: np.ndarray
    n_true: int


def _check_pair(values: np.ndarray, flags: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(values)
    flags = np.asarray(flags)
    if values.ndim != 1:
        raise ValueError(f"values: must be 1-D, got shape {tuple(values.shape)}")
    if flags.ndim != 1 or flags.shape[0] != values.shape[0]:
        raise ValueError(f"{name}: must be 1-D of the same length as values ({values.shape[0]}), "
                         f"got shape {tuple(flags.shape)}")
    if flags.dtype not in FLAG_DTYPES:
        raise ValueError(f"{name}: dtype must be bool, int8 or uint8, got {flags.dtype}")
    return values, flags


def _mask_int8(flags: np.ndarray) -> np.ndarray:
    """Flags as the kernel stores them: int8 0/1, any non-zero flag is 1."""
    if flags.dtype == np.bool_:
        return flags.view(np.int8)
    return (flags != 0).view(np.int8)


def exclusive_flag_scan(flags: np.ndarray) -> np.ndarray:
    """Exclusive scan of 0/1 flags (any non-zero flag counts 1), as the int8 MCScan computes it (scan paper
    B.2: the inclusive result shifted by one, 0 first). (n,) int32, int64 when n > 2**31 - 1."""
    mask = _mask_int8(np.asarray(flags))
    n = mask.shape[0]
    out = np.empty(n, dtype=index_dtype(n))
    if n:
        out[0] = 0
        np.cumsum(mask[:-1], dtype=out.dtype, out=out[1:])
    return out


def split_ind(values: np.ndarray, flags: np.ndarray, *, indices: np.ndarray | None = None) -> SplitResult:
    """SplitInd (scan paper §5.1): stable split, true-flag elements first.

    Args:
        values: (n,) any dtype.
        flags: (n,) bool, int8 or uint8; non-zero is true.
        indices: optional (n,) integer array carried along instead of 0..n-1 (radix sort passes).
    Returns:
        SplitResult; values[k] = input[indices[k]] when `indices` is None.
    Raises:
        ValueError: values not 1-D, flags of another length or dtype (the message names the argument).
    """
    values, flags = _check_pair(values, flags, "flags")
    n = values.shape[0]
    mask = _mask_int8(flags)
    scan = exclusive_flag_scan(mask)
    n_true = int(scan[-1]) + int(mask[-1]) if n else 0
    idt = scan.dtype
    # Position of false element i: n_true + (exclusive scan of the inverted flags) = n_true + i - scan[i].
    dest = np.arange(n, dtype=idt)
    dest -= scan
    dest += idt.type(n_true)
    truth = mask.view(np.bool_)
    np.copyto(dest, scan, where=truth)
    out_values = np.empty_like(values)
    out_values[dest] = values
    out_indices = np.empty(n, dtype=idt)
    if indices is None:
        out_indices[dest] = np.arange(n, dtype=idt)
    else:
        indices = np.asarray(indices)
        if indices.shape != (n,):
            raise ValueError(f"indices: must have shape ({n},), got {tuple(indices.shape)}")
        out_indices = np.empty(n, dtype=indices.dtype)
        out_indices[dest] = indices
    return SplitResult(out_values, out_indices, n_true)


def split_ind_partitioned(values: np.ndarray, flags: np.ndarray, *, indices: np.ndarray | None = None,
                          limit: int = PARTITION_LIMIT, out_values: np.ndarray | None = None,
                          out_indices: np.ndarray | None = None) -> SplitResult:
    """SplitInd streamed over partitions of at most `limit` items (the CUB note's streaming approach: every
    offset inside a partition fits int32). Pass 1 counts each partition's true flags (the flag scan's totals);
    pass 2 splits each partition with its own int32 offsets and places its two runs at the running output
    offsets (true run after the trues of earlier partitions, false run at n_true + the falses of earlier ones).
    Equal to split_ind for any limit.

    values, flags, indices: as split_ind (arrays or memory maps). out_values, out_indices: (n,) arrays or memory
    maps to fill (default new arrays). Indices are int32 while n <= 2**31 - 1, else int64.
    Raises ValueError as split_ind, or naming `limit`.
    """
    values, flags = _check_pair(values, flags, "flags")
    n = values.shape[0]
    if indices is not None and np.shape(indices) != (n,):
        raise ValueError(f"indices: must have shape ({n},), got {tuple(np.shape(indices))}")
    plan = partitions(n, limit)
    counts = [int(np.count_nonzero(flags[p0:p1])) for p0, p1 in plan]
    n_true = sum(counts)
    idt = np.dtype(index_dtype(n)) if indices is None else np.asarray(indices[:0]).dtype
    out_v = np.empty_like(values, shape=(n,)) if out_values is None else out_values
    out_i = np.empty(n, dtype=idt) if out_indices is None else out_indices
    t_off, f_off = 0, n_true
    for (p0, p1), c in zip(plan, counts):
        part = split_ind(values[p0:p1], flags[p0:p1], indices=None if indices is None else indices[p0:p1])
        local_idx = part.indices
        if indices is None:
            local_idx = local_idx.astype(idt, copy=False) + idt.type(p0)  # global = partition start + local
        k = p1 - p0
        out_v[t_off: t_off + c] = part.values[:c]
        out_v[f_off: f_off + k - c] = part.values[c:]
        out_i[t_off: t_off + c] = local_idx[:c]
        out_i[f_off: f_off + k - c] = local_idx[c:]
        t_off += c
        f_off += k - c
    return SplitResult(out_v, out_i, n_true)


def compress_partitioned(values: np.ndarray, mask: np.ndarray, *, limit: int = PARTITION_LIMIT,
                         out: np.ndarray | None = None) -> np.ndarray:
    """Compress streamed over partitions of at most `limit` items: pass 1 counts the selected elements (sizes
    the output, as the host reads the count), pass 2 compresses each partition with int32 offsets and writes it at
    the running output offset. Equal to compress for any limit. out: an (n_true,) array or memory map to fill.
    Raises ValueError as compress, or naming `limit` / `out`."""
    values, mask = _check_pair(values, mask, "mask")
    plan = partitions(values.shape[0], limit)
    counts = [int(np.count_nonzero(mask[p0:p1])) for p0, p1 in plan]
    total = sum(counts)
    if out is not None and out.shape != (total,):
        raise ValueError(f"out: must have shape ({total},), got {tuple(out.shape)}")
    out = np.empty(total, dtype=values.dtype) if out is None else out
    offset = 0
    for (p0, p1), c in zip(plan, counts):
        out[offset: offset + c] = compress(values[p0:p1], mask[p0:p1])
        offset += c
    return out


def compress(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Compress (scan paper §5.2): the true part of the split, equal to `values[mask != 0]` and
    torch.masked_select on 1-D input. values (n,) any dtype; mask (n,) bool, int8 or uint8.

    Raises:
        ValueError: as split_ind, naming `mask`.
    """
    values, mask = _check_pair(values, mask, "mask")
    m = _mask_int8(mask)
    scan = exclusive_flag_scan(m)
    n_true = int(scan[-1]) + int(m[-1]) if values.shape[0] else 0
    out = np.empty(n_true, dtype=values.dtype)
    truth = m.view(np.bool_)
    out[scan[truth]] = values[truth]
    return out


# ---------------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------------
def _value_bytes(dtype: str) -> int:
    try:
        return VALUE_BYTES[str(dtype)]
    except KeyError:
        raise ValueError(f"dtype: must be one of {', '.join(VALUE_BYTES)}, got {dtype!r}") from None


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n: must be a non-negative integer, got {n!r}")


def gather_workers(n: int, hw: HardwareProfile) -> int:
    """AIVs of the gather: 2d, d = the largest divisor of ceil(n / s^2) that is at most the AI-core count
    (KERNELS.md; for split the bound is half the vector cores, which is the AI-core count on a 2:1 chip)."""
    big = max(1, math.ceil(n / SCAN_S**2))
    limit = min(hw.ai_cores, hw.ai_cores * hw.aiv_per_core // 2)
    d = max(k for k in range(1, limit + 1) if big % k == 0)
    return d * hw.aiv_per_core


def _relabel(res: SimResult, phase: str, drop_launch: bool = True) -> SimResult:
    """`res` as one phase named `phase`; without its kernel launch when it runs inside a larger kernel."""
    launch = res.phases.get("launch", 0.0) if drop_launch else 0.0
    counters = dict(res.counters)
    if drop_launch and launch:
        counters["kernel_launches"] = counters.get("kernel_launches", 0) - 1
        counters = {k: v for k, v in counters.items() if v}
    time = res.time_cycles - launch
    segments = [(ops, offset - launch) for ops, offset in res.segments]
    return SimResult(res.hw, time, {phase: time}, dict(res.busy), counters, segments, res.extrapolated,
                     res.hbm_busy_cycles, dict(res.unit_weights), gaps=[g.shifted(-launch) for g in res.gaps])


def simulate_flag_scan(n: int, hw: HardwareProfile, *, variant: str = "mcscan", warm_l2: bool = False,
                       phase: str = "scan", first_step: bool = True) -> SimResult:
    """The exclusive scan of n int8 flags into int32 offsets, without a kernel launch (it runs inside the
    operator's kernel), as one phase named `phase`. variant "mcscan": the int8 MCScan (s = 128, L2 splitting as
    the paper's rule); "vector": the vector-only multi-core scan (see the module docstring).
    first_step: the scan starts the operator, from the L2 the papers' measurements left (flushed; warm_l2: the
    flags resident); otherwise earlier steps ran (and paid their own write-backs): L2 starts clean, or with
    the flags resident when warm_l2. Counter "scans" is 1."""
    if variant == "mcscan":
        params = ScanParams(s=SCAN_S, dtype="int8", exclusive=True)
        start = "warm" if warm_l2 else ("flushed" if first_step else "clean")
        res = _relabel(SCAN_KERNELS["mcscan"].simulate(n, params, hw, l2=start), phase)
    elif variant == "vector":
        res = _relabel(_simulate_vector_scan(n, hw, warm_l2), phase, drop_launch=False)
    else:
        raise ValueError(f"variant: must be mcscan or vector, got {variant!r}")
    res.counters["scans"] = 1
    return res


def _simulate_vector_scan(n: int, hw: HardwareProfile, warm_l2: bool) -> SimResult:
    """Vector-only exclusive scan of int8 flags on every AIV: phase I each AIV reduces its contiguous run of
    128 x 128 tiles (ReduceSum, as MCScan's AIVs do), SyncAll, phase II each AIV scans its tiles with AscendC
    CumSum (the flags cast to fp16, then scan.cumsum_last_axis; 128 row carries read by the scalar unit: the
    structure of kernels/scan.py vec-cumsum) and writes int32."""
    if n == 0:
        return fixed_cost(hw, 0.0, "scan")
    outer, inner = _CUMSUM_TILE
    tile = outer * inner
    tiles = math.ceil(n / tile)
    per_aiv = [c for c in split_front(tiles, hw.ai_cores * hw.aiv_per_core) if c]
    hit = warm_l2 and n <= hw.l2_cache_bytes
    fits = n * (1 + _ACC_BYTES) <= hw.l2_cache_bytes

    def build(engine: Engine, skip: int) -> None:
        total = len(per_aiv)
        keys = [(c, w == total - 1) for w, c in enumerate(per_aiv)]
        reps = engine.groups(keys)
        last = []
        engine.phase = "scan phase I"
        for w, weight in reps:
            unit = f"core{w // hw.aiv_per_core}.aiv{w % hw.aiv_per_core}"
            engine.set_weight(unit, weight)
            engine.alloc(unit, "UB", 2 * tile * 1 + 2 * tile * _ACC_BYTES, "CumSum 128x128 tiles (input, work)")
            ring = Ring(2)
            ops = []

            def emit_reduce(i: int, unit=unit, ring=ring, ops=ops) -> None:
                rd = engine.gm_read(unit, "MTE2", tile, l2_hit=hit, deps=[ring.wait()], label="flags->UB")
                red = engine.vector(unit, tile * _ACC_BYTES, deps=[rd], label="ReduceSum", passes=2)
                ring.push(red)
                ops.append(red)

            loop(engine, per_aiv[w], skip, emit_reduce)
            last.append(engine.gm_write(unit, "MTE3", 4, writeback=True, deps=[ops[-1]], label="r->GM"))
        barrier = engine.sync_all(last)
        engine.phase = "scan phase II"
        for w, _weight in reps:
            unit = f"core{w // hw.aiv_per_core}.aiv{w % hw.aiv_per_core}"
            rd_r = engine.gm_read(unit, "MTE2", 4 * total, l2_hit=True, deps=[barrier], label="r->UB")
            chain = [engine.compute(unit, "SCALAR", hw.scalar_op_cycles * (w + 1), deps=[rd_r], label="carry")]
            ring = Ring(2)

            def emit_scan(i: int, unit=unit, ring=ring, chain=chain) -> None:
                rd = engine.gm_read(unit, "MTE2", tile, l2_hit=fits, deps=[ring.wait(), barrier], label="flags->UB")
                cast = engine.vector(unit, tile * 2, deps=[rd], label="cast int8->fp16")
                scan = cumsum_last_axis(engine, unit, outer, inner, 2, deps=[cast])  # fp16
                carry = engine.vector_chain(unit, outer, inner * _ACC_BYTES, "scalar", deps=[scan, chain[-1]],
                                            label="row carries")
                chain.append(carry)
                wr = engine.gm_write(unit, "MTE3", tile * _ACC_BYTES, writeback=not fits, aligned=False,
                                     deps=[carry], label="scan->GM")
                ring.push(wr)

            loop(engine, per_aiv[w], skip, emit_scan)

    res = simulate(hw, build, max(per_aiv), warm_l2=warm_l2)
    return sequence([(res, 1)])


def _gather(n: int, hw: HardwareProfile, *, value_bytes: int, with_indices: bool, indices_in: bool,
            write_zeros: bool, n_true: int, mask_hit: bool, values_hit: bool, writeback: bool) -> SimResult:
    """The gather of SplitInd / compress on 2d AIVs (see the module docstring), as phase "gather"."""
    frac = n_true / n if n else 0.0
    ib = index_bytes(n)  # int32 indices while n <= 2**31 - 1, int64 beyond (CUB's rule)
    idx_bytes = ib if with_indices else 0
    in_bytes = 1 + value_bytes + (idx_bytes if indices_in else 0)
    out_bytes = value_bytes + idx_bytes
    tile = SCAN_S * SCAN_S // 2
    # Wider (int64) indices: halve the gather tile until one buffer of it fits the UB.
    while tile > 256 and tile * (in_bytes + out_bytes + idx_bytes) + tile // 8 > hw.ub_bytes:
        tile //= 2
    need = tile * (in_bytes + out_bytes + idx_bytes) + tile // 8
    tiles = math.ceil(n / tile)
    workers = gather_workers(n, hw)
    per_aiv = split_front(tiles, workers)
    depth = 2 if 2 * need <= hw.ub_bytes else 1

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "gather"
        for _, unit, count, tail in aiv_groups(engine, per_aiv, n, tile):
            engine.alloc(unit, "UB", depth * need, f"gather tiles of {tile} elements ({depth} buffer(s))")
            ring = Ring(depth)

            def emit(i: int, unit=unit, ring=ring, tail=tail, last_index=count - 1) -> None:
                elems = min(tail, tile) if i == last_index else tile
                slot = ring.wait()
                off = engine.gm_read(unit, "MTE2", 4, l2_hit=True, deps=[slot], label="offset->UB")
                rm = engine.gm_read(unit, "MTE2", elems, l2_hit=mask_hit, deps=[slot], label="mask->UB")
                rv = engine.gm_read(unit, "MTE2", elems * value_bytes, l2_hit=values_hit, deps=[slot],
                                    label="values->UB")
                deps = [rm, rv]
                if with_indices and indices_in:
                    deps.append(engine.gm_read(unit, "MTE2", elems * ib, l2_hit=values_hit, deps=[slot],
                                               label="indices->UB"))
                elif with_indices:
                    deps.append(engine.vector(unit, elems * ib, deps=[slot], label="CreateVecIndex"))
                bm = engine.vector(unit, elems, deps=[rm], label="mask->bitmask")
                arrays = [value_bytes] + ([ib] if with_indices else [])
                ones = [engine.vector(unit, elems * b, deps=[bm, *deps], label="GatherMask ones") for b in arrays]
                pos = engine.compute(unit, "SCALAR", 2 * hw.scalar_op_cycles, deps=[off], label="offsets")
                writes = [engine.gm_write(unit, "MTE3", elems * frac * b, writeback=writeback, aligned=False,
                                          deps=[g, pos], label="ones->GM") for g, b in zip(ones, arrays)]
                if write_zeros:
                    inv = engine.vector(unit, elems / 8, deps=[bm], label="Not")
                    zeros = [engine.vector(unit, elems * b, deps=[inv, *deps], label="GatherMask zeros")
                             for b in arrays]
                    writes += [engine.gm_write(unit, "MTE3", elems * (1 - frac) * b, writeback=writeback,
                                               aligned=False, deps=[g, pos], label="zeros->GM")
                               for g, b in zip(zeros, arrays)]
                ring.push(writes[-1])

            loop(engine, count, skip, emit)

    return simulate(hw, build, max(per_aiv), warm_l2=False)


def _predicate_pass(n: int, value_bytes: int, hw: HardwareProfile, values_hit: bool, phase: str) -> SimResult:
    """Every AIV reads the values, evaluates the predicate with one vector pass and writes int8 flags (the
    copy kernel's structure, kernels/programs.py copy_pass)."""
    return copy_pass(hw, n, value_bytes, 1, values_hit, phase, False, writeback=n * 5 > hw.l2_cache_bytes)


def _check_args(n: int, dtype: str, variant: str, variants, n_true: int | None) -> tuple[int, int]:
    """Check a split / compress problem (ValueError naming n, dtype, variant or n_true); returns (bytes per value,
    n_true with its default n // 2)."""
    _check_n(n)
    vb = _value_bytes(dtype)
    if variant not in variants:
        raise ValueError(f"variant: must be one of {', '.join(variants)}, got {variant!r}")
    n_true = n // 2 if n_true is None else n_true
    if not 0 <= n_true <= n:
        raise ValueError(f"n_true: must be in [0, n], got {n_true}")
    return vb, n_true


def simulate_split(n: int, dtype: str, hw: HardwareProfile, *, variant: str = "splitind",
                   with_indices: bool = True, predicate: bool = False, warm_l2: bool = False,
                   indices_in: bool = False, resident: bool = False, n_true: int | None = None,
                   launch: bool = True, first_step: bool = True) -> SimResult:
    """Simulated SplitInd of n values of `dtype` (a VALUE_BYTES name) with int8 flags on `hw`.

    variant: "splitind" (int8 MCScan of the flags, the paper's) or "vector" (the same with a vector-only scan,
    the baseline). with_indices: also produce int32 indices (SplitInd) or values only (split). predicate: the flags
    are computed from the values by a vector compare inside the kernel instead of being read (top-k pivots,
    weighted sampling's `> u * total`). indices_in: indices are read (a radix sort pass after the first) instead
    of generated. resident: the values (and indices) are in L2 from the previous step of a larger operator.
    n_true: the number of true flags (default n // 2, flags uniformly random as the paper measured); it sets the
    split between the two written runs only. launch: add the kernel launch (off when the split is one step of a
    larger kernel). first_step: nothing ran before the split in its operator (see simulate_flag_scan).

    Phases: launch, predicate, scan, sync, gather. Counters: the engine's plus "scans" (1).
    Raises ValueError naming n, dtype, variant or n_true.
    """
    vb, n_true = _check_args(n, dtype, variant, SPLIT_VARIANTS, n_true)
    parts: list[tuple[SimResult, int]] = []
    if launch:
        parts.append((fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1), 1))
    if n == 0:
        return sequence(parts) if parts else fixed_cost(hw, 0.0, "scan")
    fits = n * (1 + 4 + 2 * (vb + (index_bytes(n) if with_indices else 0))) <= hw.l2_cache_bytes
    values_hit = resident or (warm_l2 and n * vb <= hw.l2_cache_bytes)
    mask_warm = warm_l2
    if predicate:
        parts.append((_predicate_pass(n, vb, hw, values_hit, "predicate"), 1))
        parts.append((fixed_cost(hw, hw.sync_all_cycles, "predicate", sync_all=1), 1))
        mask_warm = n * (1 + vb) <= hw.l2_cache_bytes
        values_hit = values_hit or n * (1 + vb) <= hw.l2_cache_bytes
    parts.append((simulate_flag_scan(n, hw, variant="mcscan" if variant == "splitind" else "vector",
                                     warm_l2=mask_warm, first_step=first_step and not predicate), 1))
    parts.append((fixed_cost(hw, hw.sync_all_cycles, "sync", sync_all=1), 1))
    mask_hit = n * (1 + 4) <= hw.l2_cache_bytes
    parts.append((_gather(n, hw, value_bytes=vb, with_indices=with_indices, indices_in=indices_in, write_zeros=True,
                          n_true=n_true, mask_hit=mask_hit, values_hit=values_hit, writeback=not fits), 1))
    return sequence(parts)


def simulate_compress(n: int, dtype: str, hw: HardwareProfile, *, variant: str = "mcscan",
                      n_true: int | None = None, warm_l2: bool = False) -> SimResult:
    """Simulated compress (masked_select) of n values of `dtype` with an int8 mask on `hw`.

    variant "mcscan": exclusive int8 MCScan of the mask, the host reads the count (a second launch), gather of
    the ones (scan paper §5.2). variant "scalar": the scalar-only masked_select baseline (§6.2). n_true: selected
    elements (default n // 2, the paper's uniformly random mask). Phases: launch, scan, count, gather / select.
    Raises ValueError naming n, dtype, variant or n_true.
    """
    vb, n_true = _check_args(n, dtype, variant, COMPRESS_VARIANTS, n_true)
    launch_cycles = hw.kernel_launch_us * 1e-6 * hw.clock_hz
    parts: list[tuple[SimResult, int]] = [(fixed_cost(hw, launch_cycles, "launch", kernel_launches=1), 1)]
    if n == 0:
        return sequence(parts)
    values_hit = warm_l2 and n * vb <= hw.l2_cache_bytes
    if variant == "scalar":
        parts.append((_scalar_masked_select(n, vb, hw, n_true, values_hit), 1))
        return sequence(parts)
    parts.append((simulate_flag_scan(n, hw, warm_l2=warm_l2), 1))
    # The host reads n_true to allocate the output, then launches the gather.
    parts.append((fixed_cost(hw, launch_cycles, "count", kernel_launches=1), 1))
    parts.append((_gather(n, hw, value_bytes=vb, with_indices=False, indices_in=False, write_zeros=False,
                          n_true=n_true, mask_hit=n * 5 <= hw.l2_cache_bytes, values_hit=values_hit, writeback=True), 1))
    return sequence(parts)


def _scalar_masked_select(n: int, vb: int, hw: HardwareProfile, n_true: int, values_hit: bool) -> SimResult:
    """Scalar-only masked_select: every AIV reads pieces of mask and values into UB and selects element by
    element on its SCALAR pipe (MASKED_SELECT_SCALAR_OPS scalar ops per element), then writes the selected run."""
    # pieces of mask, values and selected values, double-buffered, must fit the UB (32-bit values: fewer)
    piece = min(_MASKED_SELECT_PIECE, int(hw.ub_bytes // (2 * (1 + 2 * vb)) // 256 * 256))
    pieces = math.ceil(n / piece)
    per_aiv = split_front(pieces, hw.ai_cores * hw.aiv_per_core)
    frac = n_true / n

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "select"
        for _, unit, count, tail in aiv_groups(engine, per_aiv, n, piece):
            engine.alloc(unit, "UB", 2 * piece * (1 + 2 * vb), "masked_select pieces (2 buffers)")
            ring = Ring(2)

            def emit(i: int, unit=unit, ring=ring, tail=tail, last_index=count - 1) -> None:
                elems = min(tail, piece) if i == last_index else piece
                rd = engine.gm_read(unit, "MTE2", elems * (1 + vb), l2_hit=values_hit, deps=[ring.wait()],
                                    label="mask, values->UB")
                sel = engine.compute(unit, "SCALAR", elems * MASKED_SELECT_SCALAR_OPS * hw.scalar_op_cycles,
                                     deps=[rd], label="scalar select")
                wr = engine.gm_write(unit, "MTE3", elems * frac * vb, writeback=True, aligned=False, deps=[sel],
                                     label="selected->GM")
                ring.push(wr)

            loop(engine, count, skip, emit)

    return simulate(hw, build, max(per_aiv))


# ---------------------------------------------------------------------------------------------------------
# Registry entries (kernels/contract.py)
# ---------------------------------------------------------------------------------------------------------
ValueDtype = Literal["fp16", "fp32", "int8", "uint8", "int16", "uint16", "int32", "uint32"]
_FLAG_NAMES = ("bool", "int8", "uint8")


class _ValuesParams(contract.KernelParams):
    n: contract.OptionalCount = None
    dtype: ValueDtype = Field("fp16", description="values dtype")
    warm_l2: contract.WarmL2 = False


class SplitParams(_ValuesParams):
    """Split / SplitInd of n values of `dtype` by 0/1 flags (scan paper §5.1)."""

    variant: Literal["splitind", "vector"] = Field("splitind", description="splitind: int8 MCScan of the flags "
                                                   "(the paper's); vector: vector-only scan (the baseline)")


class CompressParams(_ValuesParams):
    """Compress (masked_select) of n values of `dtype` by a 0/1 mask (scan paper §5.2)."""

    variant: Literal["mcscan", "scalar"] = Field("mcscan", description="mcscan: int8 MCScan of the mask and a "
                                                 "gather (the paper's); scalar: scalar-only masked_select")


def _values_and_flags_command(doc: str, flag_name: str, *, variant: str, input_file: str, output_file: str,
                              verify: str, output: str = ".npz", **more: str) -> contract.RunCommand:
    """`run`'s help of a kernel on values and flags (split, compress): the lines they share and their own (more:
    further options, before warm_l2)."""
    return contract.RunCommand(doc=doc, help={
        "n": contract.N_HELP, "variant": variant,
        "dtype": f"Values dtype of generated data: {', '.join(contract.DTYPE_NAMES)} (default fp16).",
        "seed": f"Seed of the generated values and {flag_name}.", "input_file": input_file,
        "output_file": output_file, "verify": verify, **more, "warm_l2": "Start with the values in L2."},
        output=output)


class _FlagKernel(contract.KernelSpec):
    """Shared by split, SplitInd and compress: values and a flag array, the flags generated when only the values
    are given (said in the report)."""

    flag_name: ClassVar[str]
    _GENERATED: ClassVar[str] = "0 or 1 with probability 1/2"  # flags made when only the values are given

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # the inputs: the values, and the flags under the kernel's name for them
        cls.inputs = (contract.values_input(tuple(contract.DTYPE_NAMES)),
                      contract.InputSpec(cls.flag_name, _FLAG_NAMES, "(n,)", cls._GENERATED))

    def generate(self, params, seed):
        rng = np.random.default_rng(seed)
        values = contract.generate_values(params.n, params.dtype, rng)
        return {"values": values, self.flag_name: contract.random_flags(params.n, rng)}

    def complete(self, arrays, params, seed):
        """The input arrays with the flags generated when only the values were given (a .npy of values)."""
        if self.flag_name in arrays:
            flags = arrays[self.flag_name]
            if flags.dtype not in FLAG_DTYPES:
                raise ParamError("input", f"array {self.flag_name!r} must be bool, int8 or uint8, got {flags.dtype}")
            return dict(arrays), []
        rng = np.random.default_rng(seed)
        flags = contract.random_flags(params.n, rng)
        note = f"{self.flag_name}: generated ({self._GENERATED}, seed {seed}); give them in a .npz with 'values'"
        return {**arrays, self.flag_name: flags}, [note]

    def dtypes(self, params, outcome, arrays=None):
        flags = str(arrays[self.flag_name].dtype) if arrays else "uint8"
        return {"values": params.dtype, self.flag_name: flags}


class SplitKernel(_FlagKernel):
    """SplitInd: stable split with the original indices and the count of true flags (scan paper §5.1)."""

    name = "split"
    title = "SplitInd: stable split by flags, with indices"
    source = "scan paper §5.1"
    Params = SplitParams
    flag_name = "flags"
    variants = ("splitind", "vector")
    run_command = _values_and_flags_command(
        "Stable split: elements whose flag is true first, then the rest, with their original indices and the\n"
        "number of true flags (SplitInd, the scan paper §5.1).", "flags",
        variant="splitind (int8 MCScan of the flags, the paper's) or vector (vector-only scan, the baseline).",
        input_file="A .npy of values (flags generated) or a .npz with arrays 'values' and 'flags' (bool/int8/uint8, "
                   "non-zero is true).",
        output_file="Save 'values', 'indices' (with --indices) and 'n_true' as .npz.",
        verify="Compare with NumPy's stable argsort of the flags.",
        indices="SplitInd: also the original indices (default), or the values only (split).")
    with_indices: ClassVar[bool] = True

    def compute(self, arrays, params, seed=0):
        res = split_ind(arrays["values"], arrays["flags"])
        out = {"values": res.values, "n_true": np.array(res.n_true, dtype=np.int64)}
        if self.with_indices:
            out["indices"] = res.indices
        return contract.Outcome(out, {"n_true": res.n_true}, {"n_true": res.n_true})

    def verify(self, arrays, outcome, params):
        values, flags = arrays["values"], arrays["flags"]
        order = np.argsort(flags == 0, kind="stable")
        ok_v = np.array_equal(outcome.arrays["values"].view(np.uint8), values[order].view(np.uint8))
        ok_i = not self.with_indices or np.array_equal(outcome.arrays["indices"], order)
        ok_n = outcome.outputs["n_true"] == int(np.count_nonzero(flags))
        what = "np.argsort(flags == 0, kind='stable') and values[order], bit for bit"
        return contract.Check(ok_i and ok_v and ok_n, what,
                     None if ok_i and ok_v and ok_n else f"indices equal {ok_i}, values equal {ok_v}, "
                                                         f"n_true equal {ok_n}")

    def simulate(self, params, hw, facts=None):
        return simulate_split(params.n, params.dtype, hw, variant=params.variant, with_indices=self.with_indices,
                              n_true=(facts or {}).get("n_true"), warm_l2=params.warm_l2)

    def bytes_moved(self, params, facts=None):
        vb = VALUE_BYTES[params.dtype]
        ib = np.dtype(index_dtype(params.n)).itemsize if self.with_indices else 0
        return params.n * (vb + 1) + params.n * (vb + ib)

    def dtypes(self, params, outcome, arrays=None):
        out = super().dtypes(params, outcome, arrays)
        return out | ({"indices": str(np.dtype(index_dtype(params.n)))} if self.with_indices else {})


class SplitValuesKernel(SplitKernel):
    """Split without indices: the values only, true-flag elements first (scan paper §5.1, 'split')."""

    name = "split-values"
    title = "Split: stable split by flags, values only"
    command = "split --no-indices"
    with_indices = False


class CompressKernel(_FlagKernel):
    """Compress: the values whose mask is true, in order (x[mask], torch.masked_select; scan paper §5.2)."""

    name = "compress"
    title = "Compress (masked_select)"
    source = "scan paper §5.2"
    Params = CompressParams
    flag_name = "mask"
    variants = ("mcscan", "scalar")
    run_command = _values_and_flags_command(
        "The values whose mask entry is true, in order: x[mask] / torch.masked_select on 1-D input (compress,\n"
        "the scan paper §5.2).", "mask",
        variant="mcscan (int8 MCScan of the mask + gather, the paper's) or scalar (scalar-only masked_select, the "
                "baseline).",
        input_file="A .npy of values (mask generated) or a .npz with arrays 'values' and 'mask' (bool/int8/uint8).",
        output_file="Save the selected values as .npy.", verify="Compare with values[mask != 0].", output=".npy")

    def compute(self, arrays, params, seed=0):
        selected = compress(arrays["values"], arrays["mask"])
        n_true = int(selected.shape[0])
        return contract.Outcome({"values": selected}, {"selected": n_true}, {"n_true": n_true})

    def verify(self, arrays, outcome, params):
        ref = arrays["values"][arrays["mask"] != 0]
        got = outcome.arrays["values"]
        ok = ref.shape == got.shape and np.array_equal(ref.view(np.uint8), got.view(np.uint8))
        return contract.Check(ok, "values[mask != 0], bit for bit", None if ok else "selected values differ")

    def simulate(self, params, hw, facts=None):
        return simulate_compress(params.n, params.dtype, hw, variant=params.variant,
                                 n_true=(facts or {}).get("n_true"), warm_l2=params.warm_l2)

    def bytes_moved(self, params, facts=None):
        vb = VALUE_BYTES[params.dtype]
        n_true = (facts or {}).get("n_true", params.n // 2)
        return params.n * (vb + 1) + n_true * vb

