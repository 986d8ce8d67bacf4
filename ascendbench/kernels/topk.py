"""Top-k by selection on SplitInd: bisection on value (the scan paper §5.4; KERNELS.md "Top-k").

Public API:

- ``topk(x, k, largest=True) -> (values, indices)``
- ``topk_bisection(x, k, largest=True) -> (selected indices in input order, active sizes per round)``
- ``simulate_topk(n, k, dtype, hw, *, variant="bisection", largest=True, active_sizes=None, warm_l2=False)``

Function: keys are mapped by the radix sort's order-preserving transform (kernels/radix_sort.encode_keys; for the
smallest, the inverted one), so the k largest keys are wanted. Starting from the range [min, max], each round
splits the still-active elements on the predicate ``key >= pivot`` (pivot the upper middle of the range) with
SplitInd: when no more than the still-needed count pass, they are all selected and the range moves below the
pivot; otherwise the passing ones stay active and the range moves up. The loop ends when k are selected or the
range has collapsed to one value, whose first elements in input order fill the rest (ties stable). At most key
width + 1 rounds. The k selected are then sorted (descending for largest, ascending for smallest, ties in input
order) by the radix sort. The result equals the first k of the stable descending (ascending) sort, NaNs counting
as the largest values (as torch.topk does).

Timing, variant "bisection": a min/max reduce on every AIV, then per round a predicate SplitInd
(kernels/split.simulate_split with predicate=True) on the active elements and a SyncAll, then the radix sort of
the k selected. `active_sizes` gives the active count of each round (from a functional run); without it the
model assumes value bisection halves the active range each round for key-width rounds.
Variant "vector" (the baseline, a vector-only top-k as the framework's TopK): every AIV streams its part through
the UB in pieces and sorts each piece with vector Sort32 and MrgSort4 passes while keeping its k best, then one
AIV merges the per-AIV candidate lists; for k larger than a piece the whole input is merge-sorted in GM passes.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels import contract
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.partition import index_bytes
from ascendbench.kernels.programs import Ring, aiv_groups, copy_pass, loop, split_front
from ascendbench.kernels.radix_sort import (
    KEY_DTYPES,
    KEY_NAMES,
    KeyDtype,
    KeysKernel,
    encode_keys,
    radix_sort,
    simulate_radix_sort,
    sort_reference,
)
from ascendbench.kernels.split import index_dtype, simulate_split, split_ind
from ascendbench.sim.engine import Engine
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate

__all__ = ["TOPK_VARIANTS", "VECTOR_PIECE", "simulate_topk", "topk", "topk_bisection"]

TOPK_VARIANTS = ("bisection", "vector")
VECTOR_PIECE = 8192  # elements per UB sort buffer of the vector-only top-k (two (value, index) buffers fit the UB)
_SORT32 = 32  # AscendC Sort32 sorts runs of 32 (value, index) pairs; MrgSort merges 4 runs per pass


def _check(x: np.ndarray, k: int) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"x: must be 1-D, got shape {tuple(x.shape)}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= x.shape[0]:
        raise ValueError(f"k: must be an integer in [0, n] = [0, {x.shape[0]}], got {k!r}")
    return x


def topk_bisection(x: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, list[int]]:
    """The selection rounds of the module docstring. Returns (the k selected indices in input order, the number
    of active elements each round's SplitInd ran on). Raises ValueError for bad x or k."""
    x = _check(x, k)
    n = x.shape[0]
    u = encode_keys(x, descending=not largest).astype(np.uint64)
    idt = index_dtype(n)
    if k == 0 or n == 0:
        return np.empty(0, dtype=idt), []
    lo, hi = int(u.min()), int(u.max())
    active = np.arange(n, dtype=idt)
    chosen: list[np.ndarray] = []
    need = k
    sizes: list[int] = []
    while need > 0:
        if lo == hi or active.shape[0] == need:
            chosen.append(active[:need])
            break
        pivot = lo + (hi - lo + 1) // 2
        sizes.append(int(active.shape[0]))
        step = split_ind(u[active], u[active] >= pivot, indices=active)
        c = step.n_true
        if c <= need:
            chosen.append(step.indices[:c])
            need -= c
            active = step.indices[c:]
            hi = pivot - 1
        else:
            active = step.indices[:c]
            lo = pivot
    picked = np.concatenate(chosen) if chosen else np.empty(0, dtype=idt)
    return np.sort(picked), sizes


def topk(x: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The k largest (or smallest) elements of 1-D x and their indices, sorted descending (ascending for the
    smallest), ties in input order; NaNs count as the largest.

    Args:
        x: (n,) uint8/16/32, int8/16/32 or float16. k: 0 <= k <= n.
    Returns:
        (values (k,) of x's dtype, indices (k,) int32, int64 when n > 2**31 - 1).
    Raises:
        ValueError: x not 1-D or of another dtype, k out of range.
    """
    x = _check(x, k)
    picked, _ = topk_bisection(x, k, largest)
    _, order = radix_sort(x[picked], descending=largest)
    indices = picked[order].astype(index_dtype(x.shape[0]), copy=False)
    return x[indices], indices


def simulate_topk(n: int, k: int, dtype: str, hw: HardwareProfile, *, variant: str = "bisection",
                  largest: bool = True, active_sizes: list[int] | None = None, warm_l2: bool = False) -> SimResult:
    """Simulated top-k of n keys of `dtype` (a KEY_DTYPES name) on `hw` (see the module docstring).

    Phases: launch, minmax, predicate, scan, sync, gather, then the final sort's (bisection); launch, select,
    merge (vector). Counter "rounds" (bisection): the SplitInd rounds. Raises ValueError naming n, k, dtype or
    variant.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n: must be a non-negative integer, got {n!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= n:
        raise ValueError(f"k: must be an integer in [0, n] = [0, {n}], got {k!r}")
    if dtype not in KEY_DTYPES:
        raise ValueError(f"dtype: must be one of {', '.join(KEY_DTYPES)}, got {dtype!r}")
    if variant not in TOPK_VARIANTS:
        raise ValueError(f"variant: must be one of {', '.join(TOPK_VARIANTS)}, got {variant!r}")
    t, bits = KEY_DTYPES[dtype]
    vb = np.dtype(t).itemsize
    launch = fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)
    if n == 0 or k == 0:
        res = sequence([(launch, 1)])
        res.counters["rounds"] = 0
        return res
    if variant == "vector":
        return sequence([(launch, 1), *_vector_topk(n, k, vb, hw, warm_l2)])
    if active_sizes is None:
        active_sizes, a = [], n
        for _ in range(bits):
            active_sizes.append(a)
            a = max(1, math.ceil(a / 2))
    sync = fixed_cost(hw, hw.sync_all_cycles, "sync", sync_all=1)
    hit = warm_l2 and n * vb <= hw.l2_cache_bytes
    parts: list[tuple[SimResult, int]] = [(launch, 1), (_reduce(n, vb, hw, hit), 1), (sync, 1)]
    resident = n * (vb + 2 * (vb + index_bytes(n)) + 5) <= hw.l2_cache_bytes
    for r, a in enumerate(active_sizes):
        parts.append((simulate_split(a, dtype, hw, predicate=True, with_indices=True, indices_in=r > 0,
                                     resident=resident or hit, launch=False), 1))
        parts.append((sync, 1))
    parts.append((simulate_radix_sort(k, dtype, hw), 1))
    res = sequence(parts)
    res.counters["rounds"] = len(active_sizes)
    return res


def _reduce(n: int, vb: int, hw: HardwareProfile, hit: bool) -> SimResult:
    """Min and max of the input on every AIV (ReduceMax/ReduceMin), one partial pair per AIV to GM."""
    piece = VECTOR_PIECE
    pieces = math.ceil(n / piece)
    per_aiv = split_front(pieces, hw.ai_cores * hw.aiv_per_core)

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "minmax"
        for _, unit, count, tail in aiv_groups(engine, per_aiv, n, piece):
            engine.alloc(unit, "UB", 2 * piece * vb, "min/max pieces (2 buffers)")
            ring = Ring(2)
            last = []

            def emit(i: int, unit=unit, ring=ring, tail=tail, last_index=count - 1, last=last) -> None:
                elems = min(tail, piece) if i == last_index else piece
                rd = engine.gm_read(unit, "MTE2", elems * vb, l2_hit=hit, deps=[ring.wait()], label="x->UB")
                red = engine.vector(unit, elems * vb, deps=[rd], label="ReduceMax/ReduceMin", passes=2)
                ring.push(red)
                last.append(red)

            loop(engine, count, skip, emit)
            engine.gm_write(unit, "MTE3", 2 * vb, writeback=True, deps=[last[-1]], label="min/max->GM")

    return simulate(hw, build, max(per_aiv))


def _merge_passes(elements: int) -> int:
    """Sort32 then MrgSort4 levels until one run: 1 + ceil(log4(elements / 32))."""
    runs = math.ceil(elements / _SORT32)
    return 1 + (math.ceil(math.log(runs, 4)) if runs > 1 else 0)


def _vector_topk(n: int, k: int, vb: int, hw: HardwareProfile, warm_l2: bool) -> list[tuple[SimResult, int]]:
    pair = vb + index_bytes(n)
    hit = warm_l2 and n * vb <= hw.l2_cache_bytes
    workers = hw.ai_cores * hw.aiv_per_core
    if 2 * k > VECTOR_PIECE:
        # k too large for the UB: merge-sort the whole input in GM passes on every AIV, then keep the first k.
        levels = _merge_passes(n)
        sort_pass = copy_pass(hw, n, pair, pair, hit, "merge", False)
        return [(sort_pass, levels), (fixed_cost(hw, hw.sync_all_cycles, "merge", sync_all=1), levels)]
    piece = VECTOR_PIECE - k  # each piece is sorted together with the k best so far
    pieces = math.ceil(n / piece)
    per_aiv = split_front(pieces, workers)
    passes = _merge_passes(VECTOR_PIECE)

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "select"
        for _, unit, count, tail in aiv_groups(engine, per_aiv, n, piece):
            engine.alloc(unit, "UB", 2 * piece * vb + 2 * VECTOR_PIECE * pair, "top-k pieces and sort buffers")
            ring = Ring(2)
            chain: list = [None]

            def emit(i: int, unit=unit, ring=ring, chain=chain, tail=tail, last_index=count - 1) -> None:
                elems = min(tail, piece) if i == last_index else piece
                rd = engine.gm_read(unit, "MTE2", elems * vb, l2_hit=hit, deps=[ring.wait()], label="x->UB")
                ix = engine.vector(unit, elems * index_bytes(n), deps=[rd], label="CreateVecIndex")
                srt = engine.vector(unit, (elems + k) * pair, deps=[ix, chain[0]], label="Sort32+MrgSort",
                                    passes=passes)
                ring.push(srt)
                chain[0] = srt

            loop(engine, count, skip, emit)
            engine.gm_write(unit, "MTE3", k * pair, writeback=True, deps=[chain[0]], label="top-k->GM")

    select = simulate(hw, build, max(per_aiv))
    candidates = min(n, k * sum(1 for c in per_aiv if c))
    merge = _final_merge(candidates, k, pair, hw)
    return [(select, 1), (fixed_cost(hw, hw.sync_all_cycles, "merge", sync_all=1), 1), (merge, 1)]


def _final_merge(candidates: int, k: int, pair: int, hw: HardwareProfile) -> SimResult:
    """One AIV merges the per-AIV sorted candidate lists (MrgSort4 levels) and writes the k best."""
    levels = max(1, math.ceil(math.log(max(2, math.ceil(candidates / max(k, 1))), 4)))

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "merge"
        unit = "core0.aiv0"
        rd = engine.gm_read(unit, "MTE2", candidates * pair, l2_hit=True, label="candidates->UB")
        mg = engine.vector(unit, candidates * pair, deps=[rd], label="MrgSort4", passes=levels)
        engine.gm_write(unit, "MTE3", k * pair, writeback=True, deps=[mg], label="top-k->GM")

    return simulate(hw, build, 1)


class TopkParams(contract.KernelParams):
    """The k largest (or smallest) of n keys, sorted (scan paper §5.4)."""

    k: int = Field(ge=0, le=contract.MAX_ELEMENTS, description="how many elements: 0 ... n")
    n: contract.OptionalCount = None
    largest: bool = Field(True, description="the k largest (descending, NaNs largest) or smallest (ascending)")
    dtype: KeyDtype = Field("fp16", description="key dtype")
    variant: Literal["bisection", "vector"] = Field("bisection", description="bisection: SplitInd rounds (the "
                                                   "paper's); vector: vector-only sort-based top-k (the baseline)")
    warm_l2: contract.WarmL2 = False

    @model_validator(mode="after")
    def _k_at_most_n(self):
        if self.n is not None and self.k > self.n:
            raise ValueError(f"must be at most n = {self.n}, got {self.k}")
        return self


class TopkKernel(KeysKernel):
    """torch.topk(sorted=True) with stable ties: bisection on the key bits by SplitInd rounds, then a radix sort
    of the k picked."""

    name = "topk"
    false_flags = {"largest": "--smallest"}  # in `run topk` and `tune topk` (KernelSpec.flag)
    title = "Top-k by SplitInd bisection"
    source = "scan paper §5.4"
    Params = TopkParams
    variants = ("bisection", "vector")
    space = "topk"
    run_command = contract.RunCommand(
        doc="The k largest (or smallest) values and their indices, sorted, ties in input order, like\n"
            "torch.topk(sorted=True) with stable ties (the scan paper §5.4).",
        help={"k": "How many elements: 0 ... n (e.g. 2048 or 2**11).", "n": contract.N_HELP,
              "largest": "The k largest (sorted descending, NaNs largest) or smallest (ascending).",
              "dtype": f"Key dtype: {', '.join(KEY_NAMES)} (default fp16, or the --input array's).",
              "variant": "bisection (SplitInd rounds, the paper's) or vector (vector-only sort-based top-k, the "
                         "baseline).",
              "seed": "Seed of the generated values.",
              "input_file": "Values as a 1-D .npy, or a .npz with an array 'values'.",
              "output_file": "Save 'values' and 'indices' as .npz.",
              "verify": "Compare with the first k of NumPy's stable sort.", "warm_l2": "Start with the values in L2."})

    def params(self, values=None, **kwargs):
        merged = {**(values or {}), **kwargs}
        try:
            return super().params(merged)
        except ParamError as exc:
            if exc.param == "params":  # the cross-field check: k > n
                raise ParamError("k", str(exc).split(": ", 1)[1]) from None
            raise

    def compute(self, arrays, params, seed=0):
        keys = arrays["values"]
        picked, sizes = topk_bisection(keys, params.k, params.largest)
        _, order = radix_sort(keys[picked], descending=params.largest)
        indices = picked[order]
        # rounds: the SplitInd rounds of the bisection; the vector variant sorts and has none
        rounds = {"rounds": len(sizes)} if params.variant == "bisection" else {}
        return contract.Outcome({"values": keys[indices], "indices": indices}, rounds, {"active_sizes": sizes})

    def verify(self, arrays, outcome, params):
        keys = arrays["values"]
        k = params.k
        ref = sort_reference(keys, params.largest)[:k] if params.largest else np.argsort(keys, kind="stable")[:k]
        ok = (np.array_equal(outcome.arrays["indices"], ref)
              and np.array_equal(outcome.arrays["values"].view(np.uint8), keys[ref].view(np.uint8)))
        return contract.Check(ok, "the first k of NumPy's stable " + ("descending" if params.largest else "ascending")
                     + " order", None if ok else "selection differs")

    def data_note(self, config):
        if config.get("variant", "bisection") != "bisection":
            return None
        return ("the bisection's rounds and active sizes depend on the keys: run simulates the ones its input "
                "needs, the tuner the data-free model (halving per round), so run's time differs")

    def simulate(self, params, hw, facts=None):
        return simulate_topk(params.n, params.k, params.dtype, hw, variant=params.variant, largest=params.largest,
                             active_sizes=(facts or {}).get("active_sizes"), warm_l2=params.warm_l2)

    def bytes_moved(self, params, facts=None):
        kb, ib = self.key_and_index_bytes(params)
        return params.n * kb + params.k * (kb + ib)
