"""Building blocks shared by the kernels' simulated programs: work splits, queues, loops that can be
truncated for extrapolation, and the copy pass that all AIVs run (memcpy, zero-padding passes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from ascendbench.hardware import HardwareProfile
from ascendbench.sim.engine import Engine, Op
from ascendbench.sim.result import SimResult, simulate

__all__ = ["COPY_PIECE", "Ring", "aiv_groups", "clamp_skip", "copy_pass", "copy_program", "depth", "loop", "piece_elements", "split_front"]

COPY_PIECE = 16384  # elements per UB piece of the copy kernel (in + out, double-buffered, fits 192 KB)


def split_front(total: int, workers: int) -> list[int]:
    """Contiguous split from the front: each worker takes ceil(total/workers); trailing ones get fewer."""
    if total <= 0:
        return [0] * workers
    per = math.ceil(total / workers)
    return [max(0, min(per, total - i * per)) for i in range(workers)]


class Ring:
    """A queue of `depth` slots: the producer of item i waits until item i - depth was released."""

    def __init__(self, depth: int):
        self.depth = depth
        self.released: list[Op] = []

    def wait(self):
        """The dependency that frees a slot for the next item (None while slots are free): the op that
        released item i - depth, or an (op, delay) pair."""
        return self.released[-self.depth] if len(self.released) >= self.depth else None

    def push(self, op: Op) -> None:
        self.released.append(op)


def clamp_skip(count: int, skip: int) -> int:
    """Iterations actually skipped from a loop of `count`: at least three stay, so that iteration 1 (whose
    counters stand for the skipped ones) is neither the first (prologue) nor the last (a partial piece)."""
    return min(skip, max(count - 3, 0))


def loop(engine: Engine, count: int, skip: int, emit: Callable[[int], None]) -> int:
    """Emit a loop of `count` iterations with skip' = clamp_skip(count, skip) of them left out: emit(i) is
    called with the iteration's own index, 0, 1, then skip' + 2 ... count - 1, so that addresses and tails
    are those of the full loop. The counters of the skipped iterations 2 ... skip' + 1 are those of
    iteration 1, added skip' times. Returns the number emitted."""
    skip = clamp_skip(count, skip)
    for j in range(count - skip):
        if j == 1 and skip:
            snap = engine.snapshot()
            emit(1)
            engine.add_counters(engine.delta_since(snap), skip)
        else:
            emit(j if j < 2 else j + skip)
    return count - skip


def aiv_groups(engine: Engine, per_aiv: list[int], n: int, piece: int) -> Iterator[tuple[int, str, int, int]]:
    """The AIVs of a pass over n elements in pieces of `piece` elements, AIV w taking per_aiv[w] consecutive
    pieces from the front. AIVs with the same piece count run the same program (the one holding the partial
    last piece differs), so one representative per group is yielded, already weighted for its group (see
    Engine.set_weight): (its index w, unit, pieces, elements of its last piece (or more: min with `piece`)).
    AIVs without pieces are left out."""
    hw = engine.hw
    firsts = [sum(per_aiv[:w]) for w in range(len(per_aiv))]
    total = sum(per_aiv)
    keys = [(c, firsts[w] + c == total) for w, c in enumerate(per_aiv)]
    for w, weight in engine.groups(keys):
        count = per_aiv[w]
        if count == 0:
            continue
        unit = f"core{w // hw.aiv_per_core}.aiv{w % hw.aiv_per_core}"
        engine.set_weight(unit, weight)
        # Only the very last piece of the array is partial.
        yield w, unit, count, n - (firsts[w] + count - 1) * piece


def depth(fits_two: bool) -> int:
    return 2 if fits_two else 1


def piece_elements(hw: HardwareProfile, in_bytes: float, out_bytes: float) -> int:
    """Elements per UB piece of the copy pass: COPY_PIECE, or fewer (a multiple of 256 where possible) when
    two buffers of input and output would not fit the UB. A copy that widens each element a lot (padding
    rows of one element to 512 bytes) takes pieces of fewer than 256 elements."""
    fit = int(hw.ub_bytes // (2 * (in_bytes + out_bytes)))
    if fit >= 256:
        fit = fit // 256 * 256
    return max(1, min(COPY_PIECE, fit))


def copy_pass(hw, n, in_bytes, out_bytes, warm_l2, phase, force_exact, writeback: bool = True,
              l2=None) -> SimResult:
    """All AIVs copy n elements (the pad pass of unaligned inputs, and the memcpy kernel). writeback=False
    says the copy is consumed while still resident in L2 (a workspace that fits), so it never reaches HBM.
    l2: what L2 holds at the start (sim.l2.L2Cache; None: empty); with one, every AIV is simulated (their
    evictions of the dirty lines they find interleave on HBM, which one representative per group moving its
    group's bytes at once would not show)."""
    pieces = math.ceil(n / piece_elements(hw, in_bytes, out_bytes))
    per_aiv = split_front(pieces, hw.aiv_cores)
    x_hit = warm_l2 and n * in_bytes <= hw.l2_cache_bytes

    def build(engine: Engine, skip: int) -> None:
        engine.phase = phase
        copy_program(engine, skip, per_aiv, n, in_bytes, out_bytes, x_hit, writeback)

    return simulate(hw, build, max(per_aiv), warm_l2=warm_l2, force_exact=force_exact, l2=l2,
                    group_cores=l2 is None)


def copy_program(engine: Engine, skip: int, per_aiv: list[int], n: int, in_bytes: int, out_bytes: int,
                  x_hit: bool, writeback: bool = True) -> None:
    hw = engine.hw
    piece = piece_elements(hw, in_bytes, out_bytes)
    piece_in, piece_out = piece * in_bytes, piece * out_bytes
    for _, unit, count, tail in aiv_groups(engine, per_aiv, n, piece):
        engine.alloc(unit, "UB", 2 * (piece_in + piece_out), "copy pieces (2 buffers of input and output)")
        ring = Ring(2)

        def emit(i: int, unit=unit, ring=ring, tail=tail, last_index=count - 1) -> None:
            elems = min(tail, piece) if i == last_index else piece
            rd = engine.gm_read(unit, "MTE2", elems * in_bytes, l2_hit=x_hit, deps=[ring.wait()], label="in")
            last = rd
            if in_bytes != out_bytes:
                last = engine.vector(unit, elems * out_bytes, deps=[rd], label="cast")
            wr = engine.gm_write(unit, "MTE3", elems * out_bytes, writeback=writeback, deps=[last], label="out")
            ring.push(engine.moved_out(wr))

        loop(engine, count, skip, emit)
