"""LSB radix sort by repeated SplitInd on one bit (the scan paper §5.3, §6.3, B.5).

Public API:

- ``radix_sort(keys, descending=False, stable=True) -> (values, indices)``
- ``encode_keys(keys, descending=False) -> np.ndarray`` (the order-preserving unsigned transform)
- ``simulate_radix_sort(n, dtype, hw, *, variant="mcscan", with_indices=True, passes=None, warm_l2=False,
  descending=False) -> SimResult``
- ``simulate_iota(n, hw, *, idx_bytes=4, writeback=True) -> SimResult`` and ``iota_tiles(n, hw) -> list[int]``
  (the index initialisation before the passes)

Key transform (§5.3, Exercises 8-9 of Knuth §5.2.5 as the paper cites): signed integers flip the sign bit; fp16
(and fp32, the keys of top-p on fp32 probabilities) inverts all bits of negative numbers and sets the sign bit
of the others. Two fixes make the order equal NumPy's:
-0.0 is encoded as +0.0 (NumPy treats them as equal, so ties keep input order) and every NaN is encoded as the
largest key (NumPy puts NaNs last, in input order). Descending order inverts the encoded key: the result is the
stable descending order (ties in input order, which is not the reverse of the ascending result), i.e. the order of
``np.argsort(~encode_keys(keys), kind="stable")``; NaNs then come first, as torch.sort(descending=True) puts them.

Each pass splits on one bit of the encoded key: elements whose bit is 0 first (the flags are "bit == 0"), both
parts stable, so after all passes (key width: 8, 16 or 32) the keys are sorted. Returned values are the input
keys gathered by the final indices, so signed zeros and NaN payloads come back bit for bit.

Timing per pass (KERNELS.md "Radix sort"): extract the bit on every AIV (read the key, write the int8 flag),
SyncAll, SplitInd (the int8 MCScan of the flags, SyncAll, the gather of keys and int32 indices), SyncAll. Signed and
float keys (and descending order) add an encode pass before and a decode pass after. Variant "vector" is the
baseline: the same sort with the vector-only scan (kernels/split.py).

Once per sort, whatever the pass count (reference/pytorch-tcuscan src/radix_sort.cpp): before the encode,
the index initialisation writes 0 ... n-1 as int32 to GM on the kernel's 2d AIVs (63-64,
`run_arithmetic_progression`, kernel_arithmetic_progression.h 78-120: per tile of s^2/2 elements an Adds, a
DataCopy to the out queue and the copy to GM) and a SyncAll follows (65); the first pass then reads these
indices like every later one (73, 82).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels import contract
from ascendbench.kernels.partition import index_bytes
from ascendbench.kernels.programs import Ring, aiv_groups, copy_pass, loop
from ascendbench.kernels.split import (SCAN_S, gather_workers, index_dtype, simulate_split, split_ind,
                                       split_ind_partitioned)
from ascendbench.sim.engine import Engine
from ascendbench.sim.result import SimResult, fixed_cost, sequence, simulate

__all__ = ["KEY_DTYPES", "SORT_VARIANTS", "encode_keys", "iota_tiles", "radix_sort", "simulate_iota",
           "simulate_radix_sort"]

# Key dtypes: name -> (NumPy dtype, bits)
KEY_DTYPES = {
    "uint8": (np.uint8, 8), "uint16": (np.uint16, 16), "uint32": (np.uint32, 32),
    "int8": (np.int8, 8), "int16": (np.int16, 16), "int32": (np.int32, 32),
    "fp16": (np.float16, 16), "float16": (np.float16, 16),
    "fp32": (np.float32, 32), "float32": (np.float32, 32),
}
SORT_VARIANTS = ("mcscan", "vector")
_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def _key_name(dtype: np.dtype) -> str:
    for name, (t, _) in KEY_DTYPES.items():
        if np.dtype(t) == dtype:
            return name
    raise ValueError(f"keys: dtype must be one of uint8, uint16, uint32, int8, int16, int32, float16, float32, "
                     f"got {dtype}")


def encode_keys(keys: np.ndarray, descending: bool = False) -> np.ndarray:
    """The order-preserving unsigned transform of `keys` (see the module docstring): (n,) uint8/16/32 of the
    key's width whose unsigned order (ties: input order) is NumPy's stable order of `keys` (inverted for
    descending). Raises ValueError for other dtypes or non-1-D keys."""
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise ValueError(f"keys: must be 1-D, got shape {tuple(keys.shape)}")
    name = _key_name(keys.dtype)
    bits = KEY_DTYPES[name][1]
    u = _UNSIGNED[bits]
    sign = u(1 << (bits - 1))
    raw = keys.view(u)
    if name.startswith("uint"):
        enc = raw.copy()
    elif name.startswith("int"):
        enc = raw ^ sign
    else:
        # fp16, fp32: -0.0 -> +0.0 and NaN -> the largest key (NumPy's order), then the sign-magnitude flip.
        canon = np.where(raw == sign, u(0), raw)
        negative = (canon & sign) != 0
        enc = np.where(negative, ~canon, canon | sign).astype(u)
        enc[np.isnan(keys)] = np.iinfo(u).max
    if descending:
        np.invert(enc, out=enc)
    return enc


def radix_sort(keys: np.ndarray, descending: bool = False, stable: bool = True, *,
               limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sort 1-D keys by LSB radix sort on one bit per pass (SplitInd per bit), like torch.sort(stable=True).

    Args:
        keys: (n,) uint8/16/32, int8/16/32, float16 or float32.
        descending: stable descending order (ties in input order; NaNs first).
        stable: accepted for torch.sort's signature; the radix sort is always stable.
        limit: run every SplitInd pass streamed over partitions of at most `limit` items
            (split.split_ind_partitioned); the result does not depend on it.
    Returns:
        (values, indices): values (n,) of the keys' dtype, indices (n,) int32 (int64 when n > 2**31 - 1) with
        values = keys[indices]; ascending order equals np.argsort(keys, kind="stable").
    Raises:
        ValueError: keys not 1-D or of another dtype.
    """
    keys = np.asarray(keys)
    enc = encode_keys(keys, descending)
    n = keys.shape[0]
    indices = np.arange(n, dtype=index_dtype(n))
    for bit in range(enc.dtype.itemsize * 8):
        flags = ((enc >> enc.dtype.type(bit)) & 1) == 0
        if limit is None:
            step = split_ind(enc, flags, indices=indices)
        else:
            step = split_ind_partitioned(enc, flags, indices=indices, limit=limit)
        enc, indices = step.values, step.indices
    return keys[indices], indices


def iota_tiles(n: int, hw: HardwareProfile) -> list[int]:
    """Tiles of s^2/2 indices each AIV writes in the index initialisation: ceil(n / (s^2/2)) tiles dealt
    round-robin to the 2d AIVs of the launch (kernel_arithmetic_progression.h 40-45, 84-94: AIV b takes tiles
    b, b + 2d, ...; 2d as in split.gather_workers, torch_sort.h 43-49 picks d)."""
    tiles = -(-n // (SCAN_S * SCAN_S // 2))
    workers = gather_workers(n, hw)
    return [tiles // workers + (1 if w < tiles % workers else 0) for w in range(workers)]


def simulate_iota(n: int, hw: HardwareProfile, *, idx_bytes: int = 4, writeback: bool = True) -> SimResult:
    """The index initialisation of the radix sort (radix_sort.cpp 63-64): n indices 0 ... n-1 of `idx_bytes`
    each written to GM, phase "iota". Per tile of s^2/2 elements (kernel_arithmetic_progression.h 98-120):
    one vector pass making the tile (ArithProgression on an AIV's first tile, Adds of 2d * s^2/2 on the later
    ones), one vector DataCopy into the 2-slot out queue, one MTE3 copy to GM. writeback=False: the indices
    stay in L2 until the first pass reads them. Counters: bytes_gm_write = n * idx_bytes (the last tile's
    write in whole 32-byte MTE blocks)."""
    tile = SCAN_S * SCAN_S // 2
    per_aiv = iota_tiles(n, hw)

    def build(engine: Engine, skip: int) -> None:
        engine.phase = "iota"
        for _, unit, count, tail in aiv_groups(engine, per_aiv, n, tile):
            engine.alloc(unit, "UB", 3 * tile * idx_bytes, "index tile and its 2-slot out queue")
            ring = Ring(2)
            prev = []

            def emit(i: int, unit=unit, ring=ring, prev=prev, tail=tail, last_index=count - 1) -> None:
                elems = min(tail, tile) if i == last_index else tile
                make = engine.vector(unit, tile * idx_bytes, deps=prev[-1:], label="ArithProgression / Adds")
                prev.append(make)
                copy = engine.vector(unit, tile * idx_bytes, deps=[make, ring.wait()],
                                     label="DataCopy->out queue")
                wr = engine.gm_write(unit, "MTE3", elems * idx_bytes, writeback=writeback, deps=[copy],
                                     label="indices->GM")
                ring.push(engine.moved_out(wr))

            loop(engine, count, skip, emit)

    return simulate(hw, build, max(per_aiv))


def simulate_radix_sort(n: int, dtype: str, hw: HardwareProfile, *, variant: str = "mcscan",
                        with_indices: bool = True, passes: int | None = None, warm_l2: bool = False,
                        descending: bool = False) -> SimResult:
    """Simulated radix sort of n keys of `dtype` (a KEY_DTYPES name) on `hw`.

    variant: "mcscan" (SplitInd with the int8 MCScan, the paper's) or "vector" (vector-only scan, the baseline).
    passes: split passes (default: the key width in bits); fewer passes model the paper's B.5 estimate (keys
    still read and written at full width, the result not sorted; the index initialisation, encode and decode
    stay). Phases: launch, iota (index initialisation, with_indices only), encode, radix (bit extraction),
    scan, sync, gather, decode. Counter "scans" = passes.
    Raises ValueError naming n, dtype, variant or passes.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n: must be a non-negative integer, got {n!r}")
    if dtype not in KEY_DTYPES:
        raise ValueError(f"dtype: must be one of {', '.join(KEY_DTYPES)}, got {dtype!r}")
    if variant not in SORT_VARIANTS:
        raise ValueError(f"variant: must be one of {', '.join(SORT_VARIANTS)}, got {variant!r}")
    t, bits = KEY_DTYPES[dtype]
    passes = bits if passes is None else passes
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or not 1 <= passes <= bits:
        raise ValueError(f"passes: must be an integer in [1, {bits}], got {passes!r}")
    kb = np.dtype(t).itemsize
    launch = fixed_cost(hw, hw.kernel_launch_us * 1e-6 * hw.clock_hz, "launch", kernel_launches=1)
    if n == 0:
        res = sequence([(launch, 1)])
        res.counters["scans"] = 0
        return res
    sync = fixed_cost(hw, hw.sync_all_cycles, "sync", sync_all=1)
    idx = index_bytes(n) if with_indices else 0  # int32 indices, int64 beyond 2**31 - 1
    # Working set of one pass: keys and indices in two slots, the flags and the int32 scan.
    fits = n * (2 * (kb + idx) + 1 + 4) <= hw.l2_cache_bytes
    keys_hit = warm_l2 and n * kb <= hw.l2_cache_bytes
    parts: list[tuple[SimResult, int]] = [(launch, 1)]
    if with_indices:
        parts.append((simulate_iota(n, hw, idx_bytes=idx, writeback=not fits), 1))
        parts.append((sync, 1))
    transform = not dtype.startswith("uint") or descending
    if transform:
        parts.append((copy_pass(hw, n, kb, kb, keys_hit, "encode", False, writeback=not fits), 1))
        parts.append((sync, 1))
        keys_hit = keys_hit or fits
    scan = "mcscan" if variant == "mcscan" else "vector"
    # the first SplitInd finds its keys in L2 (warm or just encoded), and its indices if keys and indices fit
    first_hit = keys_hit and (not with_indices or n * (kb + idx) <= hw.l2_cache_bytes)

    def one_pass(first: bool) -> SimResult:
        extract = copy_pass(hw, n, kb, 1, keys_hit if first else fits, "radix", False, writeback=not fits)
        split = simulate_split(n, dtype, hw, variant="splitind" if scan == "mcscan" else "vector",
                               with_indices=with_indices, indices_in=with_indices,
                               resident=fits or (first and first_hit), launch=False, first_step=False)
        return sequence([(extract, 1), (sync, 1), (split, 1), (sync, 1)])

    parts.append((one_pass(True), 1))
    if passes > 1:
        parts.append((one_pass(False), passes - 1))
    if transform:
        parts.append((copy_pass(hw, n, kb, kb, fits, "decode", False), 1))
    res = sequence(parts)
    res.counters["scans"] = passes
    return res


def sort_reference(keys: np.ndarray, descending: bool) -> np.ndarray:
    """NumPy's order of keys (n,) as int64 indices: np.argsort(kind="stable"); descending: NaNs first (input
    order), then the stable order of the negated keys (ties in input order)."""
    if not descending:
        return np.argsort(keys, kind="stable")
    wide = keys.astype(np.float64) if keys.dtype.kind == "f" else keys.astype(np.int64)
    nan = np.isnan(wide) if keys.dtype.kind == "f" else np.zeros(keys.shape, dtype=bool)
    rest = np.flatnonzero(~nan)
    return np.concatenate([np.flatnonzero(nan), rest[np.argsort(-wide[rest], kind="stable")]])


KeyDtype = Literal["fp16", "uint8", "uint16", "uint32", "int8", "int16", "int32"]
KEY_NAMES = ("fp16", "uint8", "uint16", "uint32", "int8", "int16", "int32")


class SortParams(contract.KernelParams):
    """LSB radix sort of n keys (scan paper §5.3)."""

    n: contract.OptionalCount = None
    dtype: KeyDtype = Field("fp16", description="key dtype")
    descending: bool = Field(False, description="stable descending order (ties in input order, NaNs first)")
    variant: Literal["mcscan", "vector"] = Field("mcscan", description="mcscan: SplitInd with the int8 MCScan "
                                                 "(the paper's); vector: vector-only scan (the baseline)")
    warm_l2: contract.WarmL2 = False


class KeysKernel(contract.KernelSpec):
    """Shared by the operators on keys (sort, top-k): the keys are the input "values", generated seeded; the
    outputs are keys and their indices (int32, int64 beyond 2**31 - 1 keys)."""

    inputs = (contract.values_input(KEY_NAMES),)

    def generate(self, params, seed):
        return {"values": contract.generate_values(params.n, params.dtype, np.random.default_rng(seed))}

    def dtypes(self, params, outcome, arrays=None):
        return {"values": params.dtype, "indices": str(np.dtype(index_dtype(params.n)))}

    @staticmethod
    def key_and_index_bytes(params) -> tuple[int, int]:
        """Bytes of one key and of one index (the index type of n keys)."""
        return np.dtype(KEY_DTYPES[params.dtype][0]).itemsize, np.dtype(index_dtype(params.n)).itemsize


class RadixSortKernel(KeysKernel):
    """Sort keys with their indices like torch.sort(stable=True): one SplitInd per key bit."""

    name = "sort"
    false_flags = {"descending": "--ascending"}  # in `run sort` and `tune sort` (KernelSpec.flag)
    title = "LSB radix sort (one SplitInd per key bit)"
    source = "scan paper §5.3, §6.3, B.5"
    Params = SortParams
    variants = ("mcscan", "vector")
    space = "sort"
    run_command = contract.RunCommand(
        doc="Sort keys with their indices like torch.sort(stable=True): LSB radix sort, one SplitInd per key bit\n"
            "(the scan paper §5.3).",
        help={"n": contract.N_HELP,
              "descending": "Stable descending order (ties in input order, NaNs first) or ascending (NaNs last).",
              "dtype": f"Key dtype: {', '.join(KEY_NAMES)} (default fp16, or the --input array's).",
              "variant": "mcscan (SplitInd with the int8 MCScan, the paper's) or vector (vector-only scan, the "
                         "baseline).",
              "seed": "Seed of the generated keys.", "input_file": "Keys as a 1-D .npy, or a .npz with an array "
                                                                   "'values'.",
              "output_file": "Save 'values' and 'indices' as .npz.", "verify": "Compare with NumPy's stable sort.",
              "warm_l2": "Start with the keys in L2."})

    def compute(self, arrays, params, seed=0):
        values, indices = radix_sort(arrays["values"], params.descending)
        return contract.Outcome({"values": values, "indices": indices})

    def verify(self, arrays, outcome, params):
        keys = arrays["values"]
        order = sort_reference(keys, params.descending)
        ok = (np.array_equal(outcome.arrays["indices"], order)
              and np.array_equal(outcome.arrays["values"].view(np.uint8), keys[order].view(np.uint8)))
        nans = "NaNs first, then " if params.dtype == "fp16" else ""  # only float keys have NaNs
        what = (f"{nans}np.argsort(-keys, kind='stable') on keys widened to int64 / float64" if params.descending
                else "np.argsort(keys, kind='stable')")
        return contract.Check(ok, what, None if ok else "order differs")

    def simulate(self, params, hw, facts=None):
        return simulate_radix_sort(params.n, params.dtype, hw, variant=params.variant, descending=params.descending,
                                   warm_l2=params.warm_l2)

    def bytes_moved(self, params, facts=None):
        kb, ib = self.key_and_index_bytes(params)
        return params.n * kb + params.n * (kb + ib)

    def document_params(self, params, sim):
        return {"descending": params.descending, "passes": int(sim.counters.get("scans", 0)),
                "warm_l2": params.warm_l2}
