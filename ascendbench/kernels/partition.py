"""Problem sizes beyond INT_MAX: offset types, chunk plans, streaming partitions, input streams and output sinks.

One mechanism serves two levels (the scan paper §6.1.1 and the CUB offset-type note's "streaming approach using
i32 offsets" are the same idea):

- L2 cache splitting (kernels/scan.py ``ScanKernel.plan``): the tiles are cut into consecutive chunks that fit L2;
  the last value of each chunk is carried to the next.
- Streaming partitions (the functional paths): the input is cut into partitions of at most ``PARTITION_LIMIT``
  (2**31 - 1) items, so every offset inside a partition fits int32; the running prefix (scans) or the running
  output offsets (split, compress) are carried from one partition to the next.

Both are a ``ChunkPlan`` (``chunk_plan``). The limit is a parameter so tests can use tiny partitions.

Offset and index types follow CUB's selection: int32 while n <= 2**31 - 1, int64 beyond (``offset_type``).

Inputs that do not fit memory are ``Source`` objects read slice by slice: ``ArraySource`` (an array or a
memory-mapped .npy), ``GeneratedSource`` (constant, counting or seeded random, produced block by block so that any
slice is reproducible without the rest). Outputs go to a ``Sink``: ``ArraySink`` (memory or an .npy memory map
opened by ``npy_memmap``) or nothing (the caller verifies on the fly and discards).
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "GENERATORS",
    "INT32_MAX",
    "PARTITION_LIMIT",
    "ArraySink",
    "ArraySource",
    "ChunkPlan",
    "GeneratedSource",
    "Source",
    "as_source",
    "chunk_plan",
    "index_bytes",
    "npy_memmap",
    "offset_dtype",
    "offset_type",
    "partitions",
    "release_pages",
]

INT32_MAX = 2**31 - 1
PARTITION_LIMIT = INT32_MAX  # items per streaming partition: every offset inside one fits int32
GENERATORS = ("random", "constant", "counting")
_BLOCK = 1 << 22  # elements per block of a generated stream (the unit of its seeding)


def offset_type(n: int) -> str:
    """CUB's offset-type selection: "int32" while n <= 2**31 - 1, else "int64" (the CUB note's i32/i64 option)."""
    return "int32" if n <= INT32_MAX else "int64"


def offset_dtype(n: int) -> type:
    """NumPy dtype of ``offset_type(n)``."""
    return np.int32 if n <= INT32_MAX else np.int64


def index_bytes(n: int) -> int:
    """Bytes per index or offset word of a problem of n items: 4 (int32) or 8 (int64)."""
    return 4 if n <= INT32_MAX else 8


@dataclass(frozen=True)
class ChunkPlan:
    """Consecutive chunks of `size` items covering `total` items (the last one `last` items, 0 < last <= size).

    total, size: non-negative ints (Python ints: no wrap at any size). count: number of chunks (0 for total 0).
    """

    total: int
    size: int
    count: int
    last: int

    def bounds(self, i: int) -> tuple[int, int]:
        """(start, stop) of chunk i, 0 <= i < count."""
        if not 0 <= i < self.count:
            raise IndexError(f"chunk {i} of {self.count}")
        start = i * self.size
        return start, min(self.total, start + self.size)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for i in range(self.count):
            yield self.bounds(i)

    def __len__(self) -> int:
        return self.count


def chunk_plan(total: int, limit: int, align: int = 1) -> ChunkPlan:
    """Cut `total` items into chunks of the largest multiple of `align` that is at most `limit` (at least `align`).

    Used for L2 chunks (items = tiles) and streaming partitions (items = elements, align 1).
    Raises ValueError naming `limit` or `align` when they are below 1.
    """
    if limit < 1:
        raise ValueError(f"limit: must be at least 1, got {limit}")
    if align < 1:
        raise ValueError(f"align: must be at least 1, got {align}")
    size = max(align, limit // align * align)
    if total <= 0:
        return ChunkPlan(0, size, 0, 0)
    count = -(-total // size)
    return ChunkPlan(total, size, count, total - (count - 1) * size)


def partitions(n: int, limit: int = PARTITION_LIMIT) -> ChunkPlan:
    """The streaming partitions of n items: at most `limit` (default 2**31 - 1) items each, so that every offset
    inside a partition fits int32. Raises ValueError when limit is not in [1, 2**31 - 1]."""
    if not 1 <= limit <= INT32_MAX:
        raise ValueError(f"limit: must be in [1, 2**31 - 1], got {limit}")
    return chunk_plan(n, limit)


# ---------------------------------------------------------------------------------------------------------
# Input streams
# ---------------------------------------------------------------------------------------------------------
class Source:
    """A 1-D input read slice by slice: `n` items of `dtype`; ``read(lo, hi)`` returns x[lo:hi] as a new or
    read-only array (never more than hi - lo items in memory)."""

    n: int
    dtype: np.dtype
    kind: str

    def read(self, lo: int, hi: int) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def __len__(self) -> int:
        return self.n


class ArraySource(Source):
    """An in-memory array or a memory map (np.load(..., mmap_mode="r")). Slices are views; for a memory map, the
    pages before a read's start are released once read (reads go forward), so resident memory does not grow
    with n."""

    kind = "array"

    def __init__(self, x: np.ndarray):
        self.x = x
        self.n = int(x.shape[0])
        self.dtype = x.dtype
        self.released = 0

    def read(self, lo: int, hi: int) -> np.ndarray:
        if lo - self.released >= _RELEASE_EVERY:
            release_pages(self.x, self.released, lo)
            self.released = lo
        return self.x[lo:hi]


_RELEASE_EVERY = 1 << 24  # elements between two releases of memory-mapped pages


def release_pages(x: np.ndarray, lo: int, hi: int) -> None:
    """Tell the OS that elements [lo, hi) of memory map x are not needed in memory any more (written pages are
    flushed to the file first). No-op for arrays that are not memory maps or where madvise is missing."""
    mm = getattr(x, "_mmap", None)
    if not isinstance(x, np.memmap) or mm is None or not hasattr(mm, "madvise") or hi <= lo:
        return
    page = mmap.PAGESIZE
    base = int(getattr(x, "offset", 0)) % mmap.ALLOCATIONGRANULARITY  # where element 0 lies inside the mapping
    start = (base + lo * x.itemsize) // page * page
    stop = (base + hi * x.itemsize) // page * page
    if stop <= start:
        return
    if x.mode in ("r+", "w+"):
        mm.flush(start, stop - start)
    mm.madvise(mmap.MADV_DONTNEED, start, stop - start)


class GeneratedSource(Source):
    """A generated input of n items, produced block by block (blocks of 2**22 items, block b seeded by
    (seed, b)), so any slice is reproducible on its own; the current block is kept (8 MB at most), so a forward
    stream generates each block once whatever its read sizes.

    kind: "random" (fp16 uniform in [0, 1); int8 uniform in [-128, 127]), "constant" (every item `value`,
    default 1), "counting" (item i is i mod 2**k cast to the dtype: int8 wraps in [-128, 127], fp16 counts
    0..2047 exactly then restarts). dtype: "fp16"/"float16" or "int8".
    Raises ValueError naming kind or dtype.
    """

    def __init__(self, n: int, dtype: str, kind: str = "random", seed: int = 0, value: float = 1):
        if kind not in GENERATORS:
            raise ValueError(f"kind: must be one of {', '.join(GENERATORS)}, got {kind!r}")
        names = {"fp16": np.float16, "float16": np.float16, "int8": np.int8}
        if dtype not in names:
            raise ValueError(f"dtype: must be fp16 or int8, got {dtype!r}")
        self.n, self.kind, self.seed, self.value = int(n), kind, seed, value
        self.dtype = np.dtype(names[dtype])
        self.blocks_generated = 0  # random blocks produced so far (each at most once for forward reads)
        self._cached: tuple[int, np.ndarray] | None = None

    def _block(self, b: int) -> np.ndarray:
        """Random block b (2**22 items, the last one shorter). The last block produced is kept, so reads of
        consecutive small slices (tiny partitions) cost their own length, not a whole block each."""
        if self._cached is not None and self._cached[0] == b:
            return self._cached[1]
        lo = b * _BLOCK
        size = min(_BLOCK, self.n - lo)
        rng = np.random.default_rng([self.seed, b])
        if self.dtype == np.int8:
            block = rng.integers(-128, 128, size=size, dtype=np.int8)
        else:
            block = rng.random(size, dtype=np.float32).astype(np.float16)
        self.blocks_generated += 1
        self._cached = (b, block)
        return block

    def read(self, lo: int, hi: int) -> np.ndarray:
        lo, hi = max(0, lo), min(self.n, hi)
        if hi <= lo:
            return np.empty(0, dtype=self.dtype)
        if self.kind == "constant":
            return np.full(hi - lo, self.value, dtype=self.dtype)
        if self.kind == "counting":
            period = 256 if self.dtype == np.int8 else 2048
            idx = np.arange(lo % period, lo % period + (hi - lo), dtype=np.int64) % period
            return idx.astype(np.uint8).view(np.int8) if self.dtype == np.int8 else idx.astype(np.float16)
        out = np.empty(hi - lo, dtype=self.dtype)
        for b in range(lo // _BLOCK, (hi - 1) // _BLOCK + 1):
            b0 = b * _BLOCK
            block = self._block(b)
            s0, s1 = max(lo, b0), min(hi, b0 + block.shape[0])
            out[s0 - lo: s1 - lo] = block[s0 - b0: s1 - b0]
        return out


def as_source(x) -> Source:
    """A Source for x: Sources pass through, arrays (and memory maps) become ArraySource."""
    return x if isinstance(x, Source) else ArraySource(np.asarray(x) if not isinstance(x, np.memmap) else x)


# ---------------------------------------------------------------------------------------------------------
# Output sinks
# ---------------------------------------------------------------------------------------------------------
class ArraySink:
    """Writes consecutive output slices into `out` (an array or a memory map), from element `start` on."""

    def __init__(self, out: np.ndarray):
        self.out = out
        self.pos = 0

    def write(self, y: np.ndarray) -> None:
        self.out[self.pos: self.pos + y.shape[0]] = y
        self.pos += y.shape[0]


def npy_memmap(path: Path, n: int, dtype) -> np.memmap:
    """A new (n,) .npy file of `dtype` opened as a writable memory map (pages go to disk, not to RSS).

    The file's blocks are reserved before the map is returned: a store to a page of a sparse file that the
    disk cannot hold is a SIGBUS, which kills the process with no message, where a full disk or a file-size
    limit is here an OSError naming `path`."""
    try:
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.dtype(dtype), shape=(int(n),))
        with open(path, "r+b") as fh:
            try:
                if hasattr(os, "posix_fallocate"):  # Linux, BSD; not macOS
                    os.posix_fallocate(fh.fileno(), 0, os.fstat(fh.fileno()).st_size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise  # a filesystem that cannot reserve blocks keeps the sparse file
        return out
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
