"""The scans' parameters and the layout of their work that both the timing model (kernels/scan.py) and the
functional run (kernels/scan_numerics.py) follow: tile sides, dtypes, the L2 chunks of the multi-core scans,
and constants of the measured kernels (with their sources)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import ParamError
from ascendbench.kernels.partition import PARTITION_LIMIT

S_VALUES = (16, 32, 64, 128)
DTYPES = {"fp16": np.float16, "int8": np.int8}
OUT_DTYPES = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32}
# fp32: the input of scan.simulate_fp32_cumsum only (top-p on fp32 probabilities), not a scan dtype (DTYPES)
_IN_BYTES = {"fp16": 2, "int8": 1, "fp32": 4}
_OUT_BYTES = {"fp32": 4, "fp16": 2, "int32": 4}
_ACC_BYTES = 4  # L0C accumulates fp16 in fp32 and int8 in int32
_CUMSUM_INFO = (128, 128)  # AscendC CumSum (outter, inner) of the vector-only baseline, scan paper §4.1
_CUMSUM_ROWS_PER_PASS = 16  # CumSumImpl's rows per CumSumLastDim with the minimum temporary buffer
_GM_ALIGNMENT = 256  # tcuscan_utils.h:25: the L2 chunk length is rounded up to it (scan_multi_core.cpp:56)
_COMPLETE_ROWS_MAX_TILE = 8192  # kernel_complete_rows.h:35: at most 8192 elements per phase II tile
_RED2_SIZE = 8  # kernel_reduce_tiles.h:197: the second level of the int8 reduction
# What L2 holds when a scan starts: "flushed" as the papers measured (their profiling script zeroes a 256 MB
# buffer before every timed run, profile_tcuscan_ops.py _run_benchmark, which leaves L2 full of dirty lines
# that the kernel's own data must evict), "clean" (nothing resident, nothing dirty), "warm" (the input
# resident, as after the kernel that produced it).
L2_STARTS = ("flushed", "clean", "warm")
UL1_ALGORITHMS = ("scanul1", "mcscan-ul1")
# The ScanUL1 variants round C1 = A @ 1_s (each row's sum of s inputs) to fp16 on its way to L1 (FIXPIPE
# L0C -> L1): a row whose sum reaches 65520 (round to nearest past 65504, fp16's largest) becomes inf, and the
# scan from that row on NaN / inf.
FP16_OVERFLOW = 65520.0


@dataclass(frozen=True)
class ScanParams:
    """Parameters of a scan kernel.

    s: side of the s x s tiles, one of 16/32/64/128 (ignored by memcpy and vec-cumsum).
    blocks: number of blocks for the multi-core scans (None: all AI cores), at most the core count (SyncAll).
    chunk: elements per L2 chunk for the multi-core scans: None = the measured kernel's rule (split only when
        the problem exceeds L2, chunks of L2 / (input + output bytes) rounded up to 256), 0 = off, else the
        size (rounded up to whole s*s tiles).
    exclusive: exclusive instead of inclusive scan (the inclusive result written one element further).
    dtype: input "fp16" or "int8" ("fp32" only in scan.simulate_fp32_cumsum: no scan kernel checks it).
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


_MAX_EXPLICIT_CHUNKS = 8  # full L2 chunks simulated one by one at most before the steady state is assumed


def auto_chunk(hw: HardwareProfile, params: ScanParams) -> int:
    """The measured kernel's chunk length (scan_multi_core.cpp:55-57, scan_multi_cube.cpp:31-33): L2 /
    (input + output bytes) elements, rounded up to a multiple of 256 (GM_ALIGNMENT)."""
    per = params.in_bytes + params.out_bytes
    return -(-(hw.l2_bytes // per) // _GM_ALIGNMENT) * _GM_ALIGNMENT


def chunk_lengths(n: int, params: ScanParams, hw: HardwareProfile, tile: int,
                  limit: int = PARTITION_LIMIT) -> tuple[int, int, int]:
    """The L2 chunks of a multi-core scan of n elements as (chunk length, number of chunks, last length).

    The measured kernel's loop (scan_multi_core.cpp:59-88): while input + output of the whole vector exceed L2
    and more than one chunk remains, scan a chunk of auto_chunk elements (not necessarily whole tiles: such a
    chunk takes the padded path), then the rest. params.chunk = 0 turns splitting off; a count gives whole
    tiles. A chunk never exceeds the streaming partition limit (whole tiles)."""
    if n <= 0:
        return 0, 0, 0
    cap = max(tile, limit // tile * tile)
    if params.chunk is None:
        split = n * (params.in_bytes + params.out_bytes) > hw.l2_bytes
        size = auto_chunk(hw, params) if split else n
    elif params.chunk == 0:
        size = n
    else:
        size = math.ceil(params.chunk / tile) * tile
    size = max(1, min(size, cap, n))
    count = math.ceil(n / size)
    return size, count, n - (count - 1) * size


def l2_chunk_tiles(n: int, params: ScanParams, hw: HardwareProfile, tile: int,
                   limit: int = PARTITION_LIMIT) -> int:
    """Tiles per L2 chunk of the functional multi-core scans (scan_numerics): chunk_lengths in whole tiles,
    rounded down (the timing model runs the measured kernel's chunks, which need not be whole tiles: for
    int8 and for L2 sizes whose chunk is not a multiple of s^2 the functional carry chains are cut at the
    nearest tile boundary; int8 results are exact either way)."""
    tiles = max(1, math.ceil(n / tile))
    size, _, _ = chunk_lengths(n, params, hw, tile, limit)
    return max(1, min(tiles, size // tile if size >= tile else 1))


def first_overflowing_sum(sums: np.ndarray, rows: np.ndarray) -> tuple[int, float] | None:
    """sums: the float32 sums of `rows` ((r, s) inputs, each a row of an s x s tile). The first row whose sum
    rounds to inf in fp16 (FP16_OVERFLOW) although all its inputs are finite, as (row index, its sum); None when
    every row fits (a row holding inf or NaN is non-finite input, not an overflow)."""
    if sums.size == 0 or np.abs(sums).max() < FP16_OVERFLOW:  # NaN fails the test: looked at below
        return None
    for i in np.flatnonzero(~(np.abs(sums) < FP16_OVERFLOW)):
        if np.isfinite(rows[i]).all():
            return int(i), float(sums[i])
    return None
