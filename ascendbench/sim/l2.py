"""The L2 cache of the simulated chip: least recently used, write-back, write-allocate, over address ranges.

L2 holds `capacity` bytes of GM data. Data is tracked as segments: a range [lo, hi) of one named GM buffer
(in the address space of a representative core, see Engine.set_weight: a segment of weight w stands for w
cores' ranges, so it holds (hi - lo) * w bytes), or an anonymous block (traffic of kernels that give no
addresses, and the initial contents). Every access makes its range the most recently used data; when the
contents outgrow the capacity the least recently used bytes are evicted, lowest addresses first within a
segment (the order a streaming transfer touched them). Evicted dirty bytes are written back to HBM at that
moment: the caller charges them to HBM (Engine.run). A read that finds its bytes resident hits; the rest
misses, is read from HBM and allocated clean. A write allocates its range dirty without reading it (whole
lines). Dirty data still resident when a kernel ends is not written back within the kernel.

Sources: the write-back L2 of the 910B family is the reason L2 cache splitting pays (scan paper §6.1.1); the
capacity is the profile's l2_cache_bytes (what the cache physically holds; tiling code sees l2_bytes).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right

__all__ = ["L2Cache"]

_EPS = 1e-6


class _Segment:
    __slots__ = ("alive", "buf", "dirty", "hi", "lo", "stamp", "w")

    def __init__(self, buf, lo: float, hi: float, w: float, dirty: float, stamp: int):
        self.buf, self.lo, self.hi, self.w, self.dirty, self.stamp = buf, lo, hi, w, dirty, stamp
        self.alive = True

    @property
    def size(self) -> float:
        return (self.hi - self.lo) * self.w


class L2Cache:
    """LRU write-back L2 of `capacity` bytes (see the module docstring).

    Args:
        capacity: bytes.
        dirty_fill: bytes of foreign dirty data resident at the start (anonymous, least recently used first):
            what a large buffer zeroed just before the kernel leaves behind (the papers' L2 flush).
    """

    def __init__(self, capacity: float, dirty_fill: float = 0.0, scale: float = 1.0):
        self.capacity = float(capacity)
        self.scale = scale  # the capacity of a scaled-down problem's L2 is scale times the chip's (simulate_scaled)
        self.used = 0.0
        self._heap: list[tuple[int, int, _Segment]] = []
        self._los: dict = {}  # buffer -> sorted list of segment starts
        self._segs: dict = {}  # buffer -> segments in the same order
        self._stamp = 0
        self._seq = 0
        if dirty_fill > 0:
            self._push(_Segment(None, 0.0, min(float(dirty_fill), self.capacity), 1.0, 1.0, -1))

    # ----- bookkeeping ------------------------------------------------------------------------------
    def _push(self, seg: _Segment) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (seg.stamp, self._seq, seg))
        self.used += (seg.hi - seg.lo) * seg.w  # seg.size, without the property's call
        buf = seg.buf
        if buf is not None:
            los = self._los.get(buf)
            if los is None:
                los = self._los[buf] = []
                self._segs[buf] = []
            i = bisect_left(los, seg.lo)
            los.insert(i, seg.lo)
            self._segs[buf].insert(i, seg)

    def _unindex(self, seg: _Segment) -> None:
        los, segs = self._los[seg.buf], self._segs[seg.buf]
        i = bisect_left(los, seg.lo)
        while segs[i] is not seg:
            i += 1
        del los[i], segs[i]

    def _evict(self) -> float:
        """Evict least recently used bytes until the contents fit; returns the dirty bytes evicted."""
        dirty = 0.0
        heap = self._heap
        while self.used > self.capacity + _EPS and heap:
            seg = heap[0][2]
            if not seg.alive:
                heapq.heappop(heap)
                continue
            excess = self.used - self.capacity
            size = (seg.hi - seg.lo) * seg.w  # seg.size, without the property's call
            if size <= excess + _EPS:
                heapq.heappop(heap)
                seg.alive = False
                if seg.buf is not None:
                    self._unindex(seg)
                self.used -= size
                dirty += size * seg.dirty
            else:
                cut = excess / seg.w
                if seg.buf is not None:
                    los = self._los[seg.buf]
                    i = bisect_left(los, seg.lo)
                    while self._segs[seg.buf][i] is not seg:
                        i += 1
                    los[i] = seg.lo + cut
                seg.lo += cut
                self.used -= excess
                dirty += excess * seg.dirty
        return dirty

    # ----- accesses ---------------------------------------------------------------------------------
    def access(self, buf, lo: float, hi: float, w: float, write: bool) -> tuple[float, float]:
        """Touch [lo, hi) of `buf` for a group of weight w (a read, or a write when `write`).

        Returns (the fraction of the range that was resident, dirty bytes evicted to make room)."""
        if hi <= lo:
            return 1.0, 0.0
        self._stamp += 1
        overlap = 0.0
        dirty_bytes = 0.0
        los = self._los.get(buf)
        if los is None:
            los = self._los[buf] = []
            self._segs[buf] = []
        segs = self._segs[buf]
        # segments are disjoint and sorted: the overlapping ones are consecutive, from index first to i; they
        # are replaced in the index by one slice (what is left of them on either side, and the new segment)
        first = i = max(bisect_right(los, lo) - 1, 0)
        if i < len(segs) and segs[i].hi <= lo:
            first = i = i + 1
        heap, push = self._heap, heapq.heappush
        kept: list[_Segment] = []
        while i < len(segs) and segs[i].lo < hi:
            seg = segs[i]
            i += 1
            a, b = max(seg.lo, lo), min(seg.hi, hi)
            overlap += b - a
            dirty_bytes += (b - a) * seg.w * seg.dirty
            seg.alive = False
            self.used -= (seg.hi - seg.lo) * seg.w
            # the parts outside the touched range keep their age
            for plo, phi in ((seg.lo, a), (b, seg.hi)):
                if phi - plo > _EPS:
                    part = _Segment(buf, plo, phi, seg.w, seg.dirty, seg.stamp)
                    self._seq += 1
                    push(heap, (part.stamp, self._seq, part))
                    self.used += (phi - plo) * seg.w
                    kept.append(part)
        total = (hi - lo) * w
        dirty = 1.0 if write else min(1.0, dirty_bytes / total)
        new = _Segment(buf, lo, hi, w, dirty, self._stamp)
        self._seq += 1
        push(heap, (new.stamp, self._seq, new))
        self.used += (hi - lo) * w
        if kept and kept[0].lo < lo:  # the part left on the low side comes first
            kept.insert(1, new)
        else:
            kept.insert(0, new)
        segs[first:i] = kept
        los[first:i] = [k.lo for k in kept]
        return overlap / (hi - lo), (self._evict() if self.used > self.capacity + _EPS else 0.0)

    def allocate(self, nbytes: float, dirty: bool) -> float:
        """Allocate `nbytes` of anonymous data (traffic without addresses); returns the dirty bytes evicted."""
        if nbytes <= 0:
            return 0.0
        self._stamp += 1
        self._push(_Segment(None, 0.0, float(nbytes), 1.0, 1.0 if dirty else 0.0, self._stamp))
        return self._evict()

    def dirty_bytes(self) -> float:
        """Dirty bytes resident now (written by the kernel or left by the flush, not yet written back)."""
        return sum(s.size * s.dirty for _, _, s in self._heap if s.alive)

    def resident(self, buf) -> float:
        """Bytes of `buf` resident now."""
        return sum(s.size for s in self._segs.get(buf, ()))

    def rescaled(self, scale: float) -> L2Cache:
        """These contents at another scale (sim.result.simulate_scaled): the capacity, every resident segment's
        bytes and the addresses of the named ones multiplied by f = scale / self.scale, in the same order and
        with the same dirty shares. A problem scaled by f lays its buffers out scaled by f (a workspace used
        again, the next stretch of the input), so what it finds resident is what the problem at the other
        scale would find, in proportion."""
        if scale == self.scale:
            return self.clone()
        f = scale / self.scale
        out = L2Cache(self.capacity * f, scale=scale)
        # Neighbours in age order that are anonymous with the same dirty share become one anonymous segment of
        # their summed size (oldest stamp): nothing can come between them later (new data is younger, anonymous
        # data is never touched), and LRU eviction takes the same bytes, oldest first, with the same dirty
        # share either way.
        run: list = []  # [stamp, bytes, dirty share] of the anonymous segment being merged
        for stamp, _, seg in self._live():
            if seg.buf is None and run and run[2] == seg.dirty:
                run[1] += seg.size * f
                continue
            if run:
                out._push(_Segment(None, 0.0, run[1], 1.0, run[2], run[0]))
                run = []
            if seg.buf is None:
                run = [stamp, seg.size * f, seg.dirty]
            else:
                out._push(_Segment(seg.buf, seg.lo * f, seg.hi * f, seg.w, seg.dirty, stamp))
        if run:
            out._push(_Segment(None, 0.0, run[1], 1.0, run[2], run[0]))
        out._stamp = self._stamp
        return out

    def _live(self) -> list[tuple[int, int, _Segment]]:
        """The heap's entries of resident segments, least recently used first (sorted by stamp, then sequence
        number, which is unique)."""
        return sorted([e for e in self._heap if e[2].alive])

    def clone(self) -> L2Cache:
        """An independent copy of the contents (the state a following kernel starts from).

        The copy is what pushing the resident segments in age order gives (sequence numbers 1, 2, ...; a
        list in key order is a heap; `used` summed in that order; each buffer's index sorted by address),
        built directly."""
        out = L2Cache(self.capacity, scale=self.scale)
        out._stamp = self._stamp
        heap = out._heap
        by_buf: dict = {}
        used = 0.0
        for seq, (stamp, _, seg) in enumerate(self._live(), 1):
            copy = _Segment(seg.buf, seg.lo, seg.hi, seg.w, seg.dirty, stamp)
            heap.append((stamp, seq, copy))
            used += (copy.hi - copy.lo) * copy.w
            if copy.buf is not None:
                by_buf.setdefault(copy.buf, []).append(copy)
        out._seq = len(heap)
        out.used = used
        for buf, segs in by_buf.items():
            segs.sort(key=_lo)
            out._segs[buf] = segs
            out._los[buf] = [g.lo for g in segs]
        return out


def _lo(seg: _Segment) -> float:
    return seg.lo
