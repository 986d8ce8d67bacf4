"""Functional results of the scan kernels, computed in each algorithm's own structure, and their checks.

The tiles of x are viewed as s x s row-major matrices A (zero-padded) and multiplied by the constant matrices
of the scan paper: U_s (upper-triangular ones), L^-_s (strictly lower-triangular ones), 1_s (all ones).
fp16 inputs are exact in float32, so float32 products with float32 accumulation reproduce the cube's
fp16 x fp16 -> fp32 arithmetic up to summation order (which is not public; the streaming path, ScanStream,
computes A @ U_s as sequential fp32 row scans, the cheapest order). int8 tiles are scanned in int32, exact
because every partial sum of an s x s int8 tile is below 2^24, and carried in int32 with wrap-around as the
cube's int32 accumulation does. The fp16 roundings of the algorithm are kept: C1 = A @ 1_s rounded to fp16 on
its way to L1 (ScanUL1 variants), the fp16 output rounded once at the end. Carries are chained in the
accumulation type exactly in the order the vector cores chain them (sequential adds), so the rounding follows
the algorithm.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Callable

import numpy as np

from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.kernels.base import Verification

__all__ = ["WORST_CASE_NOTE", "CheckThread", "ScanStream", "ScanVerifier", "compute", "reference", "rounding_only",
           "stream_pieces", "tile_scans", "tolerance_formula", "verify", "worst_case_factor"]

# Elements per computed batch and per checked stretch. Large enough that the scan and its check (two threads)
# spend their time inside NumPy's loops, which release the GIL, rather than handing the GIL to each other
# between short calls: at 2**16 the two threads overlapped little (benchmarks/bench_scan.py); the work arrays
# (a few MB) stay in the last-level cache.
_BATCH_ELEMS = 1 << 20
_READ_ELEMS = 1 << 22  # elements per read of the input (and per verify piece): few calls, memory still flat
_U32 = 2.0**-24  # unit roundoff of fp32
_U16 = 2.0**-11  # unit roundoff of fp16
_SQRT_STRETCH = 1 << 16  # elements that share one value of the sqrt(depth) factor in verify
_NO_BOUND = 1e300  # the worst-case factor where fp32 guarantees nothing (finite: 0 * it stays 0)
# appended to a failed check's tolerance formula when every output beyond it is within the worst-case bound
WORST_CASE_NOTE = ("; the outputs beyond it are within the worst-case bound gamma_{d_i}*sum|x[:i]|, gamma_d = "
                   "d*2^-24/(1 - d*2^-24): fp32 roundings that add up with a bias, as on counting numbers, can do "
                   "that, where the probabilistic bound assumes independent ones; so can a small real error")


def rounding_only(known: bool | None, within_worst_case: bool) -> bool:
    """Whether every output beyond the probabilistic bound so far is within the worst-case one (known: the
    value before this part, None when no output was beyond it yet)."""
    return within_worst_case if known is None else known and within_worst_case


def worst_case_factor(depth):
    """gamma_d = d u32 / (1 - d u32) of each summation depth d (a float or an array): the deterministic bound of
    any fp32 summation of depth d relative to the sum of |x| (Higham, Accuracy and Stability of Numerical
    Algorithms, 2nd ed., §4.2); _NO_BOUND where d u32 >= 1 (fp32 guarantees nothing there)."""
    du = np.asarray(depth, dtype=np.float64) * _U32
    return np.where(du < 1, du / np.where(du < 1, 1 - du, 1.0), _NO_BOUND)


def _constants(s: int) -> tuple[np.ndarray, np.ndarray]:
    ones = np.ones((s, s), dtype=np.float32)
    return np.triu(ones), np.tril(ones, -1)  # U_s, L^-_s


def _row_sums_fp32(tiles: np.ndarray) -> np.ndarray:
    """fp32 sums of the rows of (b, s, s) float32 tiles, as (b, s, 1): C1 = A @ 1_s (all columns equal).
    Shared by compute and verify so that both see the same fp32 values before the fp16 rounding."""
    b, s, _ = tiles.shape
    return tiles.reshape(-1, s).sum(axis=1, dtype=np.float32).reshape(b, s, 1)


def _times_u(tiles: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A @ U_s for every (s, s) tile at once, as one (tiles * s, s) x (s, s) GEMM: the same products as the
    per-tile matmuls, without one BLAS call (and thread hand-off) per tile."""
    b, s, _ = tiles.shape
    return (tiles.reshape(b * s, s) @ u).reshape(b, s, s)


def tile_scans(A: np.ndarray, kind: str, U: np.ndarray | None = None, Lm: np.ndarray | None = None) -> np.ndarray:
    """Local scans of (b, s, s) float32 tiles A in one algorithm's structure, as (b, s, s) float32:
    "rowscan" A @ U_s (ScanU, MCScan: every row scanned), "ul1" A @ U_s + L^-_s @ fp16(A @ 1_s) (ScanUL1,
    equation 4.1: the whole tile scanned, C1 rounded to fp16 on its way to L1), "cumsum" sequential adds
    along each row (the vector-only CumSum). U, Lm: the constants of _constants(s) (built when omitted)."""
    if kind == "cumsum":
        return np.cumsum(A, axis=2, dtype=np.float32)  # CumSum along the inner axis, sequential adds
    if U is None or Lm is None:
        U, Lm = _constants(A.shape[1])
    C = _times_u(A, U)
    if kind == "ul1":
        C1 = _row_sums_fp32(A)  # A @ 1_s: every column holds the row sum
        C1 = C1.astype(np.float16).astype(np.float32)  # FIXPIPE L0C -> L1 rounds C1 to fp16
        # L^-_s @ C1 accumulated into C2 in L0C (the columns of C1 are equal): one GEMM for all tiles
        C += (Lm @ C1[:, :, 0].T).T[:, :, None]
    return C


def _acc_dtype(dtype: str):
    return np.int32 if dtype == "int8" else np.float32


class ScanStream:
    """The functional scan of kernel `name` as a stream: feed the input in pieces of any length (partitions may
    end anywhere, inside a tile or an L2 chunk), get the output in the same order.

    The computation is cut into batches of whole tiles at fixed positions (batch k holds tiles
    [k * B, (k + 1) * B), B = 2**20 / s^2) whatever the pieces fed, and everything carried from one batch to the
    next is the algorithm's own state: the running prefix of the carry chain, and for MCScan / MCScanUL1 the
    position in the L2 chunk plan, the chunk's carry, the partial sums of the finished AIV shares and the running
    partial of the current one. So the output does not depend on where pieces end: a partitioned run equals the
    unpartitioned one bit for bit. Memory: one batch (about 2**20 elements) whatever n.

    feed(x) returns the (lo, x[lo:hi], y[lo:hi]) pieces completed by x (new arrays; fp16 x as its exact float32
    values, converted once for the scan and the check; y in the output dtype; exclusive scans shifted by one);
    finish() returns the rest. hw fixes the multi-core block and L2 chunk layout. batch_tiles: tiles per batch
    (tests use 1 to cross many batch edges; results do not depend on it).
    """

    def __init__(self, name: str, n: int, params, hw: HardwareProfile | None = None, batch_tiles: int | None = None,
                 stop_on_c1_overflow: bool = False):
        from ascendbench.kernels.scan_params import _CUMSUM_INFO

        self.name, self.n, self.params = name, int(n), params
        self.hw = hw or load_profile()
        self.out_np = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32}[params.out]
        self.acc = _acc_dtype(params.dtype)
        self.s = _CUMSUM_INFO[1] if name == "vec-cumsum" else params.s
        self.L = self.s * self.s
        self.ul1 = name in ("scanul1", "mcscan-ul1")
        self.stop_on_c1_overflow = stop_on_c1_overflow  # C1Overflow at the first row whose fp16 C1 overflows
        self.kind = "cumsum" if name == "vec-cumsum" else "ul1" if self.ul1 else "rowscan"
        self.unit = self.L if self.ul1 else self.s
        self.batch_tiles = batch_tiles or max(1, _BATCH_ELEMS // self.L)
        self.memcpy = name == "memcpy"
        in_np = {"fp16": np.float16, "int8": np.int8}[params.dtype]
        self.buf = np.zeros(self.batch_tiles * self.L, dtype=in_np)
        self.work = np.empty(self.buf.shape[0], dtype=self.acc)  # the batch in the accumulation type, reused
        self.fill = 0
        self.done = 0  # elements emitted
        self.carry = self.acc(0)  # carry chain of the single-core kernels
        self.last_incl = self.acc(0)  # last inclusive output (exclusive scans shift it in)
        self.multi = name in ("mcscan", "mcscan-ul1")
        if self.multi:
            # The carry chains in order: (first unit, unit count, last share of its L2 chunk); empty shares dropped.
            self.segments = []
            for chunk in _shares(self.n, params, self.hw, self.s, self.ul1):
                live = [(u0, cnt) for u0, cnt in chunk if cnt]
                self.segments += [(u0, cnt, k == len(live) - 1) for k, (u0, cnt) in enumerate(live)]
            self.seg = 0
            self.chunk_carry = self.acc(0)  # the previous chunk's last output
            self.run = self.acc(0)  # partial sums of the chunk's finished shares
            self.chain = self.acc(0)  # carry of the current share's chain
            self.partial = self.acc(0)  # the current share's partial sum so far

    def feed(self, x: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        return list(self.pieces(x))

    def pieces(self, x: np.ndarray):
        """feed(x) as a generator: each piece as soon as its batch is done (memory: one piece, not all of x's)."""
        x = np.asarray(x)
        pos = 0
        size = self.buf.shape[0]
        while pos < x.shape[0]:
            take = min(size - self.fill, x.shape[0] - pos)
            self.buf[self.fill: self.fill + take] = x[pos: pos + take]
            self.fill += take
            pos += take
            if self.fill == size:
                yield self._batch()

    def finish(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        return [self._batch()] if self.fill else []

    @np.errstate(invalid="ignore", over="ignore")  # NaN propagates; int32 wraps; fp16 output saturates
    def _batch(self) -> tuple[int, np.ndarray, np.ndarray]:
        lo, count = self.done, self.fill
        if self.memcpy:
            xb = self.buf[:count].copy()
            y = xb.astype(self.out_np)
        else:
            xb, C = self._scan(count)  # C: a view of self.work, copied out before the next batch
            if self.params.exclusive:
                y = np.empty(count, dtype=self.out_np)
                y[0] = self.last_incl
                y[1:] = C[:-1]
                self.last_incl = C[count - 1]
            else:
                y = C.astype(self.out_np)
        self.fill = 0
        self.done += count
        return lo, xb, y

    def _scan(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Tile scans of the buffered batch plus the carries: the batch's input (a new array: fp16 as its exact float32
        values, int8 as int8) and its inclusive scan (count,) in the accumulation type (pass 1, phase I on the cube;
        pass 2, the vector cores adding each unit's carry), computed in place in self.work. The row scans are
        sequential fp32 adds (the cube's fp32 accumulation order is not public, so any order is as faithful; a
        cumsum is the cheapest); C1 is rounded to fp16 as the FIXPIPE does."""
        s, L, acc = self.s, self.L, self.acc
        t = math.ceil(count / L)
        self.buf[count: t * L] = 0  # zero padding of a partial last tile
        W = self.work[: t * L]
        np.copyto(W, self.buf[: t * L])  # exact: fp16 -> fp32, int8 -> int32
        xb = W[:count].copy() if acc is np.float32 else self.buf[:count].copy()  # converted once, for the check
        rows = W.reshape(-1, s)
        if self.ul1:
            c1 = rows.sum(axis=1, dtype=np.float32)  # C1 = A @ 1_s (the row sums verify uses, _row_sums_fp32)
            if self.stop_on_c1_overflow:
                self._check_c1(c1, rows)
            if self.multi:  # phase I on the AIVs: each tile reduced (to the carry unit's sum)
                sums = c1.reshape(t, s).sum(axis=1, dtype=np.float32)
        elif self.multi:  # phase I on the AIVs: each row of s reduced (exact in int32 for int8)
            sums = rows.sum(axis=1, dtype=acc)
        np.cumsum(rows, axis=1, out=rows)  # A @ U_s: every row scanned
        if self.ul1:
            c1 = c1.astype(np.float16).astype(np.float32).reshape(t, s)  # FIXPIPE L0C -> L1 rounds C1 to fp16
            # C2 += L^-_s @ C1: row k of a tile gets the C1 of its rows j < k
            W.reshape(t, s, s)[:, 1:, :] += np.cumsum(c1, axis=1)[:, :-1, None]
            totals = W.reshape(t, L)[:, -1].copy()
        else:
            totals = rows[:, -1].copy()
        if acc is np.float32 and not np.isfinite(totals).all():
            # NaN or inf (input, or a C1 past the fp16 range): the cube's matrix products spread it where a
            # cumsum does not (0 x NaN = NaN over whole rows, and over whole tiles through L^-_s @ C1): redo the
            # batch as the products themselves
            A = self.buf[: t * L].astype(np.float32).reshape(t, s, s)
            W[:] = tile_scans(A, self.kind).reshape(-1)
            totals = W.reshape(t, L)[:, -1].copy() if self.ul1 else rows[:, -1].copy()
        if not self.multi:
            carries = _chain(self.carry, totals, acc)
            self.carry = acc(carries[-1] + totals[-1])
        else:
            carries = self._multi_carries(totals, sums)
        W.reshape(-1, self.unit)[:] += carries[:, None]
        return xb, W[:count]

    def _check_c1(self, c1: np.ndarray, rows: np.ndarray) -> None:
        """Raise C1Overflow at the batch's first row of finite inputs whose sum rounds to inf in fp16."""
        from ascendbench.kernels.scan_params import first_overflowing_sum

        found = first_overflowing_sum(c1, rows)
        if found is not None:
            raise C1Overflow(self.done // self.s + found[0], found[1])

    def _multi_carries(self, totals: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """Carries of this batch's units from the multi-core chains (phase II of Algorithm 3): each AIV share
        starts from the chunk's carry plus the partial sums of the chunk's earlier shares and walks its units
        in order; the next chunk's carry is this chunk's last output (§6.1.1)."""
        acc = self.acc
        first = self.done // self.unit
        count = totals.shape[0]
        carries = np.empty(count, dtype=acc)
        u = 0
        while u < count:
            u0, cnt, ends_chunk = self.segments[self.seg]
            a = first + u - u0  # units of this share already done
            take = min(cnt - a, count - u)
            start = acc(self.chunk_carry + self.run) if a == 0 else self.chain
            carries[u: u + take] = _chain(start, totals[u: u + take], acc)
            self.chain = acc(carries[u + take - 1] + totals[u + take - 1])
            seq = np.empty(take + 1, dtype=acc)
            seq[0] = self.partial if a else acc(0)
            seq[1:] = sums[u: u + take]
            self.partial = np.cumsum(seq, dtype=acc)[-1]
            u += take
            if a + take == cnt:  # the share is finished
                self.run = acc(self.run + self.partial)
                if ends_chunk:
                    self.chunk_carry = self.chain
                    self.run = acc(0)
                self.seg += 1
        return carries


class C1Overflow(Exception):
    """A ScanUL1 variant met a row of s finite inputs whose sum does not fit its fp16 C1 (from a stream made with
    stop_on_c1_overflow): `row` (elements row*s ... row*s + s - 1) and its float32 sum `total`."""

    def __init__(self, row: int, total: float):
        super().__init__(f"row {row} sums to {total}")
        self.row, self.total = row, total


def stream_pieces(name: str, x, params, hw: HardwareProfile | None = None, *, limit: int | None = None,
                  batch_tiles: int | None = None, stop_on_c1_overflow: bool = False):
    """Yield (lo, x[lo:hi], y[lo:hi]) of kernel `name`'s scan of x (an array, a memory map or a
    partition.Source), reading the input partition by partition (at most `limit` items each, default 2**31 - 1,
    so offsets inside a partition fit int32) in reads of at most 2**22 items, as pieces of one batch (ScanStream).
    stop_on_c1_overflow: a ScanUL1 variant raises C1Overflow at the first row whose fp16 C1 overflows (its
    output would be NaN from there), before that batch is yielded."""
    from ascendbench.kernels.partition import PARTITION_LIMIT, as_source, partitions

    src = as_source(x)
    stream = ScanStream(name, src.n, params, hw, batch_tiles, stop_on_c1_overflow)
    for p0, p1 in partitions(src.n, PARTITION_LIMIT if limit is None else limit):
        for r0 in range(p0, p1, _READ_ELEMS):
            yield from stream.pieces(src.read(r0, min(p1, r0 + _READ_ELEMS)))
    yield from stream.finish()


def compute(name: str, x, params, progress: Callable[[int], None] | None = None,
            hw: HardwareProfile | None = None, *, limit: int | None = None, out: np.ndarray | None = None,
            batch_tiles: int | None = None) -> np.ndarray:
    """Output of kernel `name` on x (see ScanKernel.compute), computed partition by partition (at most `limit`
    items each, default 2**31 - 1; the result does not depend on it). hw decides the multi-core block and L2 chunk
    layout (default ascend-910b4). x: an (n,) array, memory map or partition.Source. out: an (n,) array or
    memory map of the output dtype to write into (default: a new array). progress(k): k more elements done."""
    from ascendbench.kernels.partition import as_source

    src = as_source(x)
    out_np = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32}[params.out]
    y = np.empty(src.n, dtype=out_np) if out is None else out
    for lo, _, yb in stream_pieces(name, src, params, hw, limit=limit, batch_tiles=batch_tiles):
        y[lo: lo + yb.shape[0]] = yb
        if progress:
            progress(yb.shape[0])
    return y


def _shares(n: int, params, hw: HardwareProfile, s: int, ul1: bool) -> list[list[tuple[int, int]]]:
    """The multi-core scans' carry chains: per L2 chunk, the (first unit, unit count) of each AIV's share in
    order, with units = tiles for MCScanUL1 and rows of s elements for MCScan (phase II of Algorithm 3)."""
    from ascendbench.kernels.partition import chunk_plan
    from ascendbench.kernels.programs import split_front as _split
    from ascendbench.kernels.scan_params import l2_chunk_tiles

    L = s * s
    tiles = math.ceil(n / L)
    halves = []
    for c0, c1 in chunk_plan(tiles, l2_chunk_tiles(n, params, hw, L)):
        ct = c1 - c0
        blocks = min(params.blocks or hw.ai_cores, ct)
        first = c0
        chunk_halves = []
        for count in _split(ct, blocks):
            if ul1:
                u0 = first
                for share in _split(count, hw.aiv_per_core):
                    chunk_halves.append((u0, share))
                    u0 += share
            else:
                rows_per_aiv = count * s // hw.aiv_per_core
                for h in range(hw.aiv_per_core):
                    chunk_halves.append((first * s + h * rows_per_aiv, rows_per_aiv))
            first += count
        halves.append(chunk_halves)
    return halves


def _c1_rounding_effect(name: str, x: np.ndarray, params, hw: HardwareProfile) -> np.ndarray:
    """The exact effect of rounding C1 = A @ 1_s to fp16 in the ScanUL1 variants, per row of s input
    elements, as (rows,) float64 (element i of an inclusive scan gets entry i // s): within a tile, row k gets the rounding errors of rows j < k (L^-_s @ C1); a tile's total
    (carried to the next tiles of the same chain) gets those of all rows but the last. MCScanUL1 chains restart
    from exact partial sums at each AIV share, plus the previous chunk's last output."""
    s = params.s
    L = s * s
    n = x.shape[0]
    tiles = math.ceil(n / L)
    delta = np.empty(tiles * s)
    step = max(1, _BATCH_ELEMS // L)
    for t0 in range(0, tiles, step):
        t1 = min(tiles, t0 + step)
        block = np.zeros((t1 - t0) * L, dtype=np.float32)
        chunk = x[t0 * L: min(n, t1 * L)]
        block[: chunk.shape[0]] = chunk
        sums = _row_sums_fp32(block.reshape(t1 - t0, s, s)).reshape(-1)
        delta[t0 * s: t1 * s] = sums.astype(np.float16).astype(np.float64) - sums.astype(np.float64)
    delta.reshape(tiles, s)[:, -1] = 0.0  # the last row's C1 enters no output
    effect_rows = np.empty(tiles * s)
    if name == "scanul1":
        effect_rows[0] = 0.0
        effect_rows[1:] = np.cumsum(delta[:-1])
    else:
        base = 0.0
        for chunk_halves in _shares(n, params, hw, s, ul1=True):
            for u0, cnt in chunk_halves:
                if cnt:
                    r0, r1 = u0 * s, (u0 + cnt) * s
                    effect_rows[r0] = base
                    effect_rows[r0 + 1: r1] = base + np.cumsum(delta[r0: r1 - 1])
            last_u0, last_cnt = [h for h in chunk_halves if h[1]][-1]
            base = effect_rows[(last_u0 + last_cnt) * s - 1]
    return effect_rows


def _chain(start, totals: np.ndarray, acc) -> np.ndarray:
    """Carries of a sequential chain: carry[0] = start, carry[k+1] = carry[k] + totals[k], rounded in the
    accumulation type after every add (as the vector core does: y = rows + carry; carry = y[-1])."""
    seq = np.empty(totals.shape[0], dtype=acc)
    seq[0] = start
    seq[1:] = totals[:-1]
    with np.errstate(over="ignore"):
        return np.cumsum(seq, dtype=acc)


def reference(x: np.ndarray, exclusive: bool, dtype: str) -> np.ndarray:
    """Plain NumPy scan: float64 for fp16 input, int64 wrapped to int32 for int8 input."""
    if dtype == "int8":
        ref = np.cumsum(x, dtype=np.int64)
        ref = (ref + 2**31) % 2**32 - 2**31
    else:
        ref = np.cumsum(x, dtype=np.float64)
    if exclusive and ref.size:
        ref = np.concatenate([np.zeros(1, dtype=ref.dtype), ref[:-1]])
    return ref


def _tolerance_terms(name: str, params) -> tuple[int, float]:
    s = 128 if name == "vec-cumsum" else params.s
    return s, (_U16 if name in ("scanul1", "mcscan-ul1") else 0.0)


def tolerance_formula(name: str, params) -> str:
    if params.dtype == "int8" or name == "memcpy":
        return "exact (int32 with wrap-around)" if params.dtype == "int8" else "exact copy"
    _, extra = _tolerance_terms(name, params)
    formula = "4*sqrt(d_i)*2^-24*sum|x[:i]|" + (" + |C1 fp16 rounding effect_i|" if extra else "")
    if params.out == "fp16":
        formula += " + 2^-11*|y_i|"
    return formula


def _running_sum(x: np.ndarray, start: float, out: np.ndarray) -> None:
    """out = start + cumsum(x) in float64 (x's fp16 / fp32 / int values are exact in it). A copy and an in-place
    cumsum: faster than a cumsum that converts as it goes (NumPy's buffered casting)."""
    np.copyto(out, x)
    np.cumsum(out, out=out)
    if start:
        out += start


class ScanVerifier:
    """verify() on the fly: feed consecutive (x[lo:hi], y[lo:hi]) pieces (starting at multiples of s, as ScanStream
    emits them; fp16 x may come as its exact float32 values), read the verdict from result(). Memory: one piece; the
    reference is a running int64 / float64 prefix carried from piece to piece, so it checks any n (see verify for
    the tolerance)."""

    def __init__(self, name: str, n: int, params, hw: HardwareProfile | None = None):
        self.name, self.n, self.params = name, int(n), params
        self.formula = tolerance_formula(name, params)
        self.int8 = params.dtype == "int8"
        self.s, extra = _tolerance_terms(name, params)
        self.shift = 1 if params.exclusive and name != "memcpy" else 0
        self.prefix = np.int64(0) if self.int8 else 0.0  # inclusive running sum before the next piece
        self.abs_prefix = np.int64(0) if self.int8 else 0.0
        self.max_abs = self.max_rel = 0.0
        self.passed = True
        self.overflow = self.nonfinite_input = False
        self.rounding_only: bool | None = None  # see rounding_only (None: no output beyond the bound)
        self.done = 0
        self._buffers: dict[str, np.ndarray] = {}
        self.c1 = bool(extra)
        if self.c1:
            # Rows where a chain of C1 rounding effects restarts: (first row, row count, last share of its chunk).
            s = self.s
            if name == "scanul1":
                self.restarts = [(0, math.ceil(self.n / (s * s)) * s, True)]
            else:
                self.restarts = []
                for chunk in _shares(self.n, params, hw or load_profile(), s, ul1=True):
                    live = [(u0, cnt) for u0, cnt in chunk if cnt]
                    self.restarts += [(u0 * s, cnt * s, k == len(live) - 1) for k, (u0, cnt) in enumerate(live)]
            self.seg, self.eff_cur, self.eff_base, self.eff_last = 0, 0.0, 0.0, 0.0

    def _c1_rows(self, x: np.ndarray, lo: int) -> np.ndarray:
        """The C1 rounding effect (see _c1_rounding_effect) of the rows of x = input[lo:lo + len], per row of s
        (the last row may be partial), as (ceil(len / s),) float64."""
        s = self.s
        rows = math.ceil(x.shape[0] / s)
        if x.dtype == np.float32 and x.shape[0] == rows * s:
            block = x  # whole rows already in float32: no copy
        else:
            block = np.zeros(rows * s, dtype=np.float32)
            block[: x.shape[0]] = x
        sums = block.reshape(rows, s).sum(axis=1, dtype=np.float32)
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows: the verdict explains them
            delta = sums.astype(np.float16).astype(np.float64) - sums.astype(np.float64)
        r0 = lo // s
        delta[(np.arange(r0, r0 + rows) % s) == s - 1] = 0.0  # the last row's C1 enters no output
        eff = np.empty(rows)
        r = 0
        while r < rows:
            first, count, ends_chunk = self.restarts[self.seg]
            a = r0 + r - first
            take = min(count - a, rows - r)
            if a == 0:
                self.eff_cur = self.eff_base
            cs = np.cumsum(delta[r: r + take])
            eff[r] = self.eff_cur
            eff[r + 1: r + take] = self.eff_cur + cs[:-1]
            self.eff_cur += cs[-1]
            r += take
            if a + take == count:
                if ends_chunk:
                    self.eff_base = eff[r - 1]
                self.seg += 1
        return eff

    def feed(self, x: np.ndarray, y: np.ndarray) -> None:
        # NaN / inf inputs: the verdict says what they do; NumPy must not warn about them on the way
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            self._feed(x, y)

    def _feed(self, x: np.ndarray, y: np.ndarray) -> None:
        lo, hi = self.done, self.done + x.shape[0]
        self.done = hi
        if x.shape[0] == 0:
            return
        if self.name == "memcpy":
            ref = x.astype(np.float64)
            same = (y.astype(np.float64) == ref) | (np.isnan(ref) & np.isnan(y.astype(np.float64)))
            diff = np.where(same, 0.0, np.abs(y.astype(np.float64) - ref))
            err = float(diff.max())
            self.max_abs = max(self.max_abs, err)
            self.max_rel = max(self.max_rel, float((diff / np.maximum(np.abs(ref), 1e-30)).max()))
            self.passed &= err == 0.0 or (self.params.out == "fp16" and err <= _U16 * float(np.abs(ref).max()))
            return
        if not self.int8:
            for k in range(0, x.shape[0], _BATCH_ELEMS):  # one stretch at a time: the work arrays stay in cache
                self._feed_fp16(x[k: k + _BATCH_ELEMS], y[k: k + _BATCH_ELEMS], lo + k)
            return
        run = np.cumsum(x, dtype=np.int64)
        run += self.prefix
        absrun = np.cumsum(np.abs(x.astype(np.int64)), dtype=np.int64)
        absrun += self.abs_prefix
        before, abs_before = self.prefix, self.abs_prefix
        self.prefix, self.abs_prefix = run[-1], absrun[-1]
        if self.shift:  # exclusive: y_i is the inclusive scan up to i - 1
            run = np.concatenate([np.array([before], dtype=run.dtype), run[:-1]])
            absrun = np.concatenate([np.array([abs_before], dtype=absrun.dtype), absrun[:-1]])
        ref = (run + 2**31) % 2**32 - 2**31
        diff = np.abs(y.astype(np.int64) - ref)
        err = int(diff.max())
        self.passed &= err == 0
        self.max_abs = max(self.max_abs, float(err))
        self.max_rel = max(self.max_rel, float((diff / np.maximum(absrun, 1)).max()))

    def _work(self, name: str, size: int, dtype=np.float64) -> np.ndarray:
        """A reusable work array of at least `size` items (no new allocation per stretch)."""
        arr = self._buffers.get(name)
        if arr is None or arr.shape[0] < size or arr.dtype != dtype:
            arr = self._buffers[name] = np.empty(max(size, _BATCH_ELEMS + self.s + 1), dtype=dtype)
        return arr

    def _feed_fp16(self, x: np.ndarray, y: np.ndarray, lo: int) -> None:
        """Check one stretch of at most _BATCH_ELEMS elements (x = input[lo:lo + len] as fp16 or its exact float32
        values, y its output; lo a multiple of s), in place in reused float64 work arrays.

        The running sum of |x| (a_i) enters only through the tolerance and max_rel. It is taken by rows of s: the
        sum of |x| before each row (from the rows' sums), plus the row's own running sum. Most stretches are
        settled without the per-element values (_rows_check): every a_i of row r is at least the sum before the
        row, so a row whose largest error is within the tolerance there passes, and max_rel needs a_i only in
        the rows that can hold it. The others (the first stretch, where a_i starts at 0; a partial last row;
        errors near the bound; non-finite values) are checked element by element (_exact_check) with the same
        a_i, so both give the same verdict, max_abs and max_rel."""
        m, s = x.shape[0], self.s
        eff = self._c1_rows(x, lo) if self.c1 else None
        nonneg = bool(x.min() >= 0)  # False with NaN
        before = self.prefix
        # the reference run[i] = prefix + cumsum(x)[i] in float64 (x's values are exact in it); exclusive scans:
        # shifted by one, `before` first
        R = self._work("run", m + 1)
        R[0] = before
        _running_sum(x, before, R[self.shift: m + self.shift])
        self.prefix = float(R[m + self.shift - 1])
        run = R[:m]
        diff = self._work("diff", m)[:m]
        with np.errstate(invalid="ignore"):
            np.subtract(y, run, out=diff)
        np.abs(diff, out=diff)
        absx = x if nonneg else np.abs(x, out=self._work("absx", m, x.dtype)[:m])
        whole = m // s
        sums = np.empty(-(-m // s))
        absx[: whole * s].reshape(whole, s).sum(axis=1, dtype=np.float64, out=sums[:whole])
        if whole < sums.shape[0]:
            sums[whole] = absx[whole * s:].sum(dtype=np.float64)
        ends = np.cumsum(sums)
        ends += self.abs_prefix
        starts = np.empty(ends.shape[0])  # sum |x| before each row
        starts[0], starts[1:] = self.abs_prefix, ends[:-1]
        self.abs_prefix = float(ends[-1])
        # non-finite values are absorbing: the last one says if there is any
        settled = (math.isfinite(run[m - 1]) and whole * s == m and bool(starts[0] > 0)
                   and self._rows_check(absx, diff, lo, eff, starts, ends))
        if not settled:
            self._exact_check(absx, y, run, diff, lo, eff, starts)
        if eff is not None:
            self.eff_last = eff[(m - 1) // s]

    def _factors(self, m: int, lo: int, worst_case: bool = False) -> np.ndarray:
        """The factor of a_i in the tolerance per 2**16 elements of the stretch, d_i taken at the end of each (a
        slightly larger bound than per element): 4 sqrt(d_i) u32 (probabilistic), or with worst_case
        gamma_{d_i} (worst_case_factor)."""
        depths = np.array([self.s + 1 + float(lo + min(m, k + _SQRT_STRETCH)) / self.s
                           for k in range(0, m, _SQRT_STRETCH)])
        return worst_case_factor(depths) if worst_case else 4 * _U32 * np.sqrt(depths)

    def _abs_prefix(self, absx: np.ndarray, rows, starts: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """a_i of the given rows (an index array, or slice(None) for all) of a stretch of whole rows of s, as
        (rows, s) float64 (in `out` if given): the sum of |x| before the row plus the row's running sum (an
        exclusive scan's output i: through input i - 1)."""
        s = self.s
        a = np.cumsum(absx.reshape(-1, s)[rows], axis=1, dtype=np.float64, out=out)
        if self.shift:
            a[:, 1:] = a[:, :-1]  # NumPy copies overlapping operands first
            a[:, 0] = 0.0
        a += starts[rows, None]
        return a

    def _rows_check(self, absx, diff, lo, eff, starts, ends) -> bool:
        """Settle a stretch of whole rows (starts > 0) when every row passes at its lower bound of a_i (see
        _feed_fp16); sets max_abs and max_rel. False (nothing changed): check it element by element."""
        m, s, sh = diff.shape[0], self.s, self.shift
        rows = m // s
        errors = diff.reshape(rows, s)
        row_max = errors.max(axis=1)
        factors = self._factors(m, lo)[(np.arange(rows) * s) // _SQRT_STRETCH]
        floor = np.zeros(rows)
        if eff is not None:  # each element's C1 term: its row's; an exclusive scan's first one the row before's
            floor = np.abs(eff)
            if sh:
                floor[1:] = np.minimum(floor[1:], floor[:-1])
                floor[0] = min(floor[0], abs(self.eff_last))
        # (1 - 1e-6): a margin over the roundings of this test against the element-wise one
        if not bool((row_max <= (factors * starts + floor) * (1 - 1e-6)).all()):
            return False  # also NaN or inf in the output
        self.max_abs = max(self.max_abs, float(row_max.max()))
        # max_rel: the largest diff / a_i of row r lies between row_max / ends and row_max / starts; only rows
        # whose upper value reaches the largest lower one (or the stretches' before), less a margin for the
        # roundings, can hold it: their a_i are taken element by element
        reach = max(self.max_rel, float((row_max / ends).max())) * (1 - 1e-9)
        cand = np.flatnonzero(row_max / starts >= reach)
        if cand.size:
            self.max_rel = max(self.max_rel, float((errors[cand] / self._abs_prefix(absx, cand, starts)).max()))
        return True

    def _tolerance(self, absrun, run, lo, eff, factors, ref_finite) -> np.ndarray:
        """The tolerance of each element of the stretch (in a reused work array): factor * a_i, per 2**16
        elements, plus the C1 term and for fp16 output the output's rounding. ref_finite: where the reference is
        finite, when it is not everywhere."""
        m, s, sh = absrun.shape[0], self.s, self.shift
        tol = self._work("tol", m)[:m]
        for k, factor in zip(range(0, m, _SQRT_STRETCH), factors):
            np.multiply(absrun[k: k + _SQRT_STRETCH], factor, out=tol[k: k + _SQRT_STRETCH])
        if eff is not None:
            # element i gets |effect| of its row, (i - sh) // s (an exclusive scan's first element: the previous
            # stretch's last), added by broadcasting over whole rows and then the partial last one
            tol[:sh] += abs(self.eff_last)
            body = tol[sh:]
            whole = body.shape[0] // s
            body[: whole * s].reshape(whole, s)[...] += np.abs(eff[:whole])[:, None]
            if body.shape[0] > whole * s:
                body[whole * s:] += abs(eff[whole])
        if self.params.out == "fp16":
            magnitude = np.abs(run)
            if ref_finite is not None:
                magnitude[~ref_finite] = 0.0  # checked apart, their diff set to 0: a NaN tolerance would fail it
            tol += _U16 * magnitude + 2.0**-24
        return tol

    def _exact_check(self, absx, y, run, diff, lo, eff, starts) -> None:
        """The element-by-element check (a_i of every element, as _abs_prefix takes them); sets max_abs, max_rel and
        passed."""
        m, s = diff.shape[0], self.s
        rows = starts.shape[0]
        padded = absx
        if m < rows * s:  # a partial last row: zeros after it
            padded = self._work("abspad", rows * s, absx.dtype)[: rows * s]
            padded[:m] = absx
            padded[m:] = 0
        out = self._work("abs", rows * s)[: rows * s].reshape(rows, s)
        absrun = self._abs_prefix(padded, slice(None), starts, out).reshape(-1)[:m]
        finite = math.isfinite(run[m - 1])
        if not math.isfinite(self.prefix):  # through input m - 1: an exclusive scan's last input is in no output
            self.nonfinite_input = True
        if not finite:
            # NaN or inf in the input: the output must carry the same non-finite values from there on
            ref_finite = np.isfinite(run)
            yf = y.astype(np.float64)
            same = (np.isnan(run) & np.isnan(yf)) | (run == yf)
            self.passed &= bool(same[~ref_finite].all())
            diff[~ref_finite] = 0.0
            absrun[~np.isfinite(absrun)] = 0.0
        dmax = float(diff.max())  # NaN when any is NaN
        if not math.isfinite(dmax):
            self.passed = False
            self.overflow = True
            self.max_abs = self.max_rel = math.inf
            return
        ok = self._work("ok", m, np.bool_)[:m]
        tol = self._tolerance(absrun, run, lo, eff, self._factors(m, lo), None if finite else ref_finite)
        if not bool(np.less_equal(diff, tol, out=ok).all()):
            self.passed = False
            # Within the worst-case bound, fp32 roundings that add up with a bias (structured input such as
            # counting numbers) can explain the output: the verdict says so (it still fails: so can a real error)
            tol = self._tolerance(absrun, run, lo, eff, self._factors(m, lo, worst_case=True),
                                  None if finite else ref_finite)
            self.rounding_only = rounding_only(self.rounding_only, bool(np.less_equal(diff, tol, out=ok).all()))
        self.max_abs = max(self.max_abs, dmax)
        if absrun[0] > 0 and finite:  # non-decreasing, so every entry is >= 2^-24 (the least fp16): no floor needed
            diff /= absrun
        else:
            np.maximum(absrun, 1e-30, out=tol)
            diff /= tol
        self.max_rel = max(self.max_rel, float(diff.max()))

    def result(self) -> Verification:
        formula = self.formula
        if self.nonfinite_input and not self.passed:
            formula += (" (the input holds NaN or inf: the cube multiplies them by the zeros of U_s, and 0 x NaN = "
                        "NaN spreads over whole rows, so a matrix scan cannot match a sequential cumsum there)")
        elif self.overflow:
            limit = "65504, the fp16 maximum" if self.params.out == "fp16" else "the float32 range"
            formula += f" (the output is not finite where the reference is: it overflows past {limit})"
        elif self.rounding_only and not self.passed:
            formula += WORST_CASE_NOTE
        return Verification(bool(self.passed), self.max_abs, self.max_rel, formula)


class CheckThread:
    """Feeds a ScanVerifier on a second thread, so that the check of one piece overlaps the scan of the next
    (NumPy releases the GIL inside its loops). feed(x, y) queues a piece (at most `depth` wait, so memory stays
    bounded); close() waits for the queued pieces and returns the verdict. An error of the check is raised by
    the next feed or by close; close (or stop, after an error elsewhere) must be called to end the thread."""

    def __init__(self, check: ScanVerifier, depth: int = 2):
        self.check = check
        self.error: BaseException | None = None
        self.closed = False
        self._queue: queue.Queue = queue.Queue(depth)
        self._thread = threading.Thread(target=self._run, name="scan-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.error is None:  # after an error, keep draining so that feed never blocks
                try:
                    self.check.feed(*item)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
                    self.error = exc

    def feed(self, x: np.ndarray, y: np.ndarray) -> None:
        if self.error is not None:
            raise self.error
        self._queue.put((x, y))

    def stop(self) -> None:
        """Wait for the queued pieces and end the thread (raises nothing: for clean-up after an error)."""
        if not self.closed:
            self.closed = True
            self._queue.put(None)
            self._thread.join()

    def close(self) -> Verification:
        self.stop()
        if self.error is not None:
            raise self.error
        return self.check.result()


def verify(name: str, x: np.ndarray, y: np.ndarray, params, hw: HardwareProfile | None = None) -> Verification:
    """Check y against the NumPy reference, batch by batch (memory stays flat at any n; ScanVerifier does it
    on the fly).

    Reference: float64 running sum for fp16 input; int64 wrapped to int32 for int8 (must match exactly).
    Tolerance for fp16 input, with a_i the running sum of |x| up to element i and d_i = s + i/s + 1 the
    length of the longest chain of fp32 roundings that reaches element i (a row scan, then the carry chain):
    |y_i - ref_i| <= 4 sqrt(d_i) u32 a_i + |c_i| (+ u16 |ref_i| for fp16 output), u32 = 2^-24, u16 = 2^-11,
    where c_i is the exact effect of the ScanUL1 variants' rounding of C1 to fp16 on its way to L1 (0 for the
    other kernels; see _c1_rounding_effect). The sqrt(d) term is the probabilistic rounding-error bound of
    fp32 accumulation (Higham and Mary) with a safety factor of 4. It assumes the roundings are independent;
    where they add up with a bias (structured input such as counting numbers) a correct output can exceed it.
    A failed check whose outputs beyond it are all within the worst-case bound, gamma_{d_i} = d_i u32 /
    (1 - d_i u32) for 4 sqrt(d_i) u32, says so in its tolerance text (that bound is too loose to pass on:
    several percent at 1e7 elements with s = 16).
    max_rel_error is relative to the running sum of |x| (sign changes of the prefix do not blow it up).
    """
    n = x.shape[0]
    formula = tolerance_formula(name, params)
    if y.shape != (n,):
        return Verification(False, math.inf, math.inf, f"shape {y.shape} != ({n},)")
    if n == 0:
        return Verification(True, 0.0, 0.0, formula)
    check = ScanVerifier(name, n, params, hw)
    for lo in range(0, n, _READ_ELEMS):
        hi = min(n, lo + _READ_ELEMS)
        check.feed(x[lo:hi], y[lo:hi])
    return check.result()
