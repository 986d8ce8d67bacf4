"""The event engine of the simulated NPU: in-order pipes, dependencies, shared HBM and L2.

An *op* is one instruction (or one closed-form inner loop) on one pipe of one unit. Pipes of a unit run
concurrently; ops on one pipe start in program order. An op starts when the previous op on its pipe has
released the pipe and every dependency has finished (plus the dependency's delay, e.g. a cross-core flag).
GM transfers additionally reserve time on the chip-wide HBM and L2 servers, which serve requests in the
order they start (first come, first served, whole transfers), so cores transferring at the same time share
the bandwidth. A representative core standing for a group of identical cores reserves its group's bytes.

Ops are processed in order of start time with one heap (the SimPy approach), so the shared servers see
requests in time order.
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from ascendbench.hardware import HardwareProfile

__all__ = ["PIPES", "BufferCapacityError", "Dep", "Engine", "Op", "core_groups", "gc_paused"]

# Pipe names, as Ascend's profiler shows them.
PIPES = ("MTE2", "MTE1", "CUBE", "FIXPIPE", "VECTOR", "MTE3", "SCALAR", "SYNC")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a program is built and run: its ops are all alive
    until the run ends, so collections in between only re-scan them (about a third of the host time).
    Engine.run unlinks the ops when it is done, so the finished program is freed without the collector."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def core_groups(keys: list, group_cores: bool = True) -> list[tuple[int, int]]:
    """(representative index, weight) for each group of equal `keys` (one key per core or worker, in order);
    every index is its own group when group_cores is off (Engine.groups)."""
    if not group_cores:
        return [(i, 1) for i in range(len(keys))]
    found: dict = {}
    for i, k in enumerate(keys):
        found.setdefault(k, []).append(i)
    return [(members[0], len(members)) for members in found.values()]


class BufferCapacityError(ValueError):
    """A tile does not fit an on-chip buffer; the message names the buffer, bytes needed and available."""


class Op:
    """One instruction on one pipe. Times are in cycles, set when the engine runs."""

    __slots__ = (
        "cycles",
        "deps",
        "done",
        "end",
        "label",
        "next",
        "pending",
        "phase",
        "pipe",
        "prev",
        "release",
        "seq",
        "start",
        "succs",
        "task",
        "unit",
        "xfer",
    )

    def __init__(self, unit: str, pipe: str, label: str, phase: str, cycles: float, xfer, deps, seq: int,
                 task: int = 0):
        self.unit = unit
        self.pipe = pipe
        self.label = label
        self.phase = phase
        self.cycles = cycles
        self.xfer = xfer  # None, or (server_demands, core_cycles, latency)
        self.deps = deps  # list of Op or (Op, delay_cycles)
        self.succs = []
        self.pending = 0
        self.prev = None
        self.next = None
        self.done = False
        self.seq = seq
        self.task = task

    def __repr__(self) -> str:
        if not self.done:
            return f"Op({self.unit}.{self.pipe} {self.label}, not run)"
        return f"Op({self.unit}.{self.pipe} {self.label} {self.start:.0f}-{self.end:.0f})"


Dep = Op | tuple[Op, float] | None
_NAN = math.nan


@dataclass
class _Server:
    """A chip-wide bandwidth resource served first come, first served: a request of `nbytes` from each of
    `weight` identical cores (a group's representative) starting at `start` begins when the server is free
    (max(start, free)) and keeps it busy for weight * nbytes / bytes_per_cycle. Engine.run applies this.

    HBM write-backs are not queued with the reads: L2 is write-back, so a write is done once it is in L2,
    and the eviction of its dirty lines to HBM waits in `backlog` (cycles of HBM time), drained whenever
    HBM serves no read (memory controllers serve reads first and drain writes in batches). When the backlog
    would exceed L2's capacity, the excess is written back at once, ahead of later reads, and the writer
    waits for it; a run is not over before the backlog has drained."""

    bytes_per_cycle: float
    free: float = 0.0
    busy: float = 0.0
    backlog: float = 0.0  # HBM: write-back cycles still to serve once reads leave it idle (Engine.run)


@dataclass
class RunStats:
    """What one engine run measured: all in cycles."""

    makespan: float  # until the last op ends and HBM has taken the last write-backs
    phases: dict[str, tuple[float, float]]
    busy: dict[tuple[str, str], float]
    hbm_busy: float
    l2_busy: float
    unit_weights: dict[str, int] = field(default_factory=dict)
    drain: float = 0.0  # of the makespan, the time after the last op ends while HBM takes the last write-backs

    @property
    def ops_end(self) -> float:
        """When the last op ended (the makespan without the final write-back drain)."""
        return self.makespan - self.drain


class Engine:
    """Builds a program of ops for the simulated chip and runs it.

    Args:
        hw: the hardware profile.
        warm_l2: whether data touched before the kernel is still resident in L2 (kernels consult it).
        group_cores: let kernels simulate one representative per group of cores with identical programs
            (see `set_weight`); False simulates every core.

    Counters are accumulated when ops are created, so they do not depend on timing; kernels that skip
    regular loop iterations for extrapolation add those iterations' counters with `add_counters`.
    """

    def __init__(self, hw: HardwareProfile, warm_l2: bool = False, group_cores: bool = True):
        self.hw = hw
        self.warm_l2 = warm_l2
        self.group_cores = group_cores
        self.counters: dict[str, float] = {}
        self.ops: list[Op] = []
        self._last_on_pipe: dict[str, Op] = {}  # unit + pipe -> last op
        self._buffers: dict[tuple[str, str], int] = {}
        self._fractals: dict[tuple[int, int, int, bool], int] = {}
        self._reads: dict[tuple, tuple[tuple, tuple]] = {}  # gm_read and gm_write costs by arguments
        self._writes: dict[tuple, tuple[tuple, tuple]] = {}
        self.weights: dict[str, int] = {}
        self.phase = "main"
        # Index of the task (outer loop iteration) the ops being added belong to; with prefix_tasks > 0 the
        # counters of tasks below it are also kept apart (prefix_counters), see prefix_stats.
        self.task = 0
        self.prefix_tasks = 0
        self.prefix_counters: dict[str, float] = {}
        self.hbm = _Server(hw.hbm_bytes_per_cycle)
        self.l2 = _Server(hw.l2_bytes_per_cycle)
        self.stats: RunStats | None = None

    # ----- building -------------------------------------------------------------------------------
    def _add(self, unit: str, pipe: str, label: str, cycles: float, deps: Iterable[Dep], xfer=None) -> Op:
        ops = self.ops
        norm: list = []
        op = Op(unit, pipe, label, self.phase, cycles, xfer, norm, len(ops), self.task)
        append = norm.append
        for d in deps:
            if d is None:
                continue
            append(d)
            (d if d.__class__ is Op else d[0]).succs.append(op)
        key = unit + pipe
        last = self._last_on_pipe
        prev = last.get(key)
        if prev is not None:
            prev.next = op
            op.prev = prev
        last[key] = op
        op.pending = len(norm)
        ops.append(op)
        return op

    def groups(self, keys: list) -> list[tuple[int, int]]:
        """(representative index, weight) for each group of equal `keys` (one key per core or worker, in
        order); every index is its own group when group_cores is off."""
        return core_groups(keys, self.group_cores)

    def set_weight(self, unit: str, weight: int) -> None:
        """Let `unit` stand for `weight` identical units (cores with the same program): its GM transfers
        reserve `weight` times their bytes on the shared HBM and L2 servers, and its counters and busy time
        count `weight` times. Simulating one representative per group of identical cores is what keeps the
        engine fast; a test checks it against simulating every core."""
        self.weights[unit] = int(weight)

    def add_counters(self, delta: dict[str, float], times: int) -> None:
        """Add `times` copies of a counter delta (the counters of skipped regular iterations)."""
        if times:
            c = self.counters
            for k, v in delta.items():
                c[k] = c.get(k, 0) + v * times

    def snapshot(self) -> dict[str, float]:
        return dict(self.counters)

    def delta_since(self, snap: dict[str, float]) -> dict[str, float]:
        return {k: v - snap.get(k, 0) for k, v in self.counters.items() if v != snap.get(k, 0)}

    def alloc(self, unit: str, buffer: str, nbytes: int, what: str) -> None:
        """Reserve `nbytes` of an on-chip buffer ("L1", "L0A", "L0B", "L0C", "UB") of one unit.

        Raises:
            BufferCapacityError: the unit's allocations in that buffer exceed its capacity.
        """
        capacity = {
            "L1": self.hw.l1_bytes, "L0A": self.hw.l0a_bytes, "L0B": self.hw.l0b_bytes,
            "L0C": self.hw.l0c_bytes, "UB": self.hw.ub_bytes,
        }[buffer]
        key = (unit, buffer)
        used = self._buffers.get(key, 0) + int(nbytes)
        if used > capacity:
            raise BufferCapacityError(
                f"{buffer}: {what} needs {used} bytes in total, {capacity} bytes available on {self.hw.name}"
            )
        self._buffers[key] = used

    def compute(self, unit: str, pipe: str, cycles: float, deps: Sequence[Dep] = (), label: str = "") -> Op:
        """An op that occupies `pipe` for `cycles`."""
        return self._add(unit, pipe, label, cycles, deps)

    def cube(self, unit: str, m: int, n: int, k: int, int8: bool, deps: Sequence[Dep] = (), label="mmad") -> Op:
        """Mmad of (m x k) by (k x n) on the cube: ceil(m/16)*ceil(n/16)*ceil(k/kstep) fractal cycles plus
        the cube latency; kstep is 16 for fp16 and 32 for int8 (HARDWARE.md, pypto cost model)."""
        shape = (m, n, k, int8)
        fractals = self._fractals.get(shape)
        if fractals is None:  # programs repeat a few block shapes many times
            kstep = 32 if int8 else 16
            fractals = self._fractals[shape] = math.ceil(m / 16) * math.ceil(n / 16) * math.ceil(k / kstep)
        self._count(unit, (("matmuls", 1), ("cube_fractals", fractals)))
        return self._add(unit, "CUBE", label, fractals + self.hw.cube_latency_cycles, deps)

    def vector_repeats(self, nbytes: float) -> int:
        """Repeats of one vector pass over `nbytes` (256 B per repeat)."""
        return math.ceil(nbytes / self.hw.vector_bytes_per_repeat)

    def vector(self, unit: str, nbytes: float, deps: Sequence[Dep] = (), label="vec", passes: int = 1) -> Op:
        """`passes` dependent vector passes over `nbytes` each: instructions of at most 255 repeats, each
        paying the start-up latency plus one cycle per repeat."""
        repeats = self.vector_repeats(nbytes)
        instructions = max(1, math.ceil(repeats / self.hw.vector_max_repeats)) if repeats else 0
        self._count(unit, (("vector_instructions", instructions * passes), ("vector_repeats", repeats * passes)))
        cycles = passes * (instructions * self.hw.vector_startup_cycles + repeats)
        return self._add(unit, "VECTOR", label, cycles, deps)

    def vector_chain(self, unit: str, steps: int, nbytes_per_step: float, sync: str, deps=(), label="chain") -> Op:
        """A closed-form loop of `steps` dependent vector instructions over `nbytes_per_step` each.

        Each step waits for the previous one: `sync="scalar"` reads the last element with the scalar unit
        (vector->scalar sync, as ScanU's carry propagation does); `sync="barrier"` puts a vector pipe barrier
        between steps (as a vector-only scan does).
        """
        repeats = self.vector_repeats(nbytes_per_step)
        instructions = max(1, math.ceil(repeats / self.hw.vector_max_repeats))
        per_step = instructions * self.hw.vector_startup_cycles + repeats
        if sync == "scalar":
            per_step += self.hw.vector_scalar_sync_cycles + self.hw.scalar_op_cycles
            self._inc("vector_scalar_syncs", steps, unit)
        elif sync == "barrier":
            per_step += self.hw.vector_barrier_cycles
            self._inc("vector_barriers", steps, unit)
        else:
            raise ValueError(f"sync must be 'scalar' or 'barrier', got {sync!r}")
        self._inc("vector_instructions", instructions * steps, unit)
        self._inc("vector_repeats", repeats * steps, unit)
        return self._add(unit, "VECTOR", label, per_step * steps, deps)

    def _rounded(self, nbytes: float) -> float:
        g = self.hw.mte_granularity_bytes
        return -(-nbytes // g) * g

    def _inc(self, key: str, value: float, unit: str) -> None:
        self._count1(unit, key, value)

    def _count1(self, unit: str, key: str, value: float) -> None:
        """_count of a single counter."""
        v = value * self.weights.get(unit, 1)
        c = self.counters
        c[key] = c.get(key, 0) + v
        if self.task < self.prefix_tasks:
            p = self.prefix_counters
            p[key] = p.get(key, 0) + v

    def _count(self, unit: str, items) -> None:
        """Add (counter, value) pairs of one op, weighted by its unit's weight (one call per op: the engine's
        building is the timing model's hot path)."""
        c = self.counters
        w = self.weights.get(unit, 1)
        prefix = self.prefix_counters if self.task < self.prefix_tasks else None
        for key, value in items:
            v = value * w
            c[key] = c.get(key, 0) + v
            if prefix is not None:
                prefix[key] = prefix.get(key, 0) + v

    def gm_read(self, unit: str, pipe: str, nbytes: float, *, l2_hit: bool | float, aligned: bool = True,
                deps: Sequence[Dep] = (), label: str = "gm_read", serial: float = 1.0,
                nd2nz_unaligned: bool = False) -> Op:
        """Read `nbytes` from GM into a local buffer. A hit is served by L2 at the L2 rate, a miss by HBM at
        the per-core GM rate; both share the chip-wide server. `l2_hit` may be a fraction (the share of the
        bytes found in L2). Unaligned addresses lose bandwidth. `serial` > 1 says that many cores read the
        same 512-byte ranges at the same time and are served one after another (HGEMM paper §4.3.2).
        `nd2nz_unaligned`: a GM -> L1 load that converts ND rows to the fractal NZ layout on the way, whose row
        pitch is not a multiple of the profile's nd2nz_alignment_bytes: it runs at nd2nz_unaligned_efficiency
        instead of the alignment rate (CANN best practices, ND2NZ format conversion on the AIV core)."""
        # A program repeats a few kinds of transfer many times: their counters and costs are computed once.
        # The key holds nbytes' type too: an int size gives int byte counters, a float one float counters.
        key = (nbytes, nbytes.__class__, float(l2_hit), bool(aligned), serial, bool(nd2nz_unaligned))
        known = self._reads.get(key)
        if known is None:
            known = self._reads[key] = self._read_cost(nbytes, float(l2_hit), aligned, serial, bool(nd2nz_unaligned))
        counts, xfer = known
        self._count(unit, counts)
        return self._add(unit, pipe, label, 0.0, deps, xfer)

    def _read_cost(self, nbytes: float, hit: float, aligned: bool, serial: float,
                   slow_nd2nz: bool) -> tuple[tuple, tuple]:
        """Counters and (server demands, core cycles, latency) of one gm_read."""
        if nbytes < 0:
            raise ValueError(f"a GM read moves nbytes >= 0 bytes, got {nbytes}")
        hw = self.hw
        nbytes = self._rounded(nbytes)
        eff = hw.nd2nz_unaligned_efficiency if slow_nd2nz else (1.0 if aligned else hw.unaligned_efficiency)
        counts = [("bytes_gm_read", nbytes)]
        demands = []
        core_cycles = 0.0
        latency = hw.gm_read_latency_cycles if hit < 1.0 else hw.l2_hit_latency_cycles
        if hit > 0.0:
            hit_bytes = nbytes * hit
            counts.append(("bytes_l2_hit", hit_bytes))
            demands.append(("l2", hit_bytes / eff))
            core_cycles += hit_bytes / (hw.l2_read_bytes_per_cycle * eff)
        if hit < 1.0:
            # a miss is filled into L2 and delivered from it: it takes L2 bandwidth as well as HBM's
            miss_bytes = nbytes * (1.0 - hit)
            counts.append(("bytes_hbm_read", miss_bytes))
            demands.append(("hbm", miss_bytes / eff))
            demands.append(("l2", miss_bytes / eff))
            core_cycles += miss_bytes / (hw.gm_read_bytes_per_cycle * eff)
        # each transfer is counted under the rate it ran at: ND2NZ's (it replaces the alignment rate) or 70%
        if slow_nd2nz:
            counts.append(("bytes_nd2nz_unaligned", nbytes))
        elif not aligned:
            counts.append(("bytes_unaligned", nbytes))
        if serial > 1.0:
            counts.append(("bytes_serialised", nbytes * (serial - 1.0)))
        return tuple(counts), (tuple(demands), core_cycles * max(serial, 1.0), latency)

    def gm_write(self, unit: str, pipe: str, nbytes: float, *, writeback: bool, aligned: bool = True,
                 deps: Sequence[Dep] = (), label: str = "gm_write") -> Op:
        """Write `nbytes` to GM. Writes land in L2; `writeback` says the data reaches HBM (it is not
        overwritten while still resident), which then also takes HBM bandwidth."""
        key = (nbytes, nbytes.__class__, bool(writeback), bool(aligned))  # as in gm_read
        known = self._writes.get(key)
        if known is None:
            known = self._writes[key] = self._write_cost(nbytes, writeback, aligned)
        counts, xfer = known
        self._count(unit, counts)
        return self._add(unit, pipe, label, 0.0, deps, xfer)

    def _write_cost(self, nbytes: float, writeback: bool, aligned: bool) -> tuple[tuple, tuple]:
        """Counters and (server demands, core cycles, latency) of one gm_write."""
        if nbytes < 0:
            raise ValueError(f"a GM write moves nbytes >= 0 bytes, got {nbytes}")
        hw = self.hw
        nbytes = self._rounded(nbytes)
        eff = 1.0 if aligned else hw.unaligned_efficiency
        counts = [("bytes_gm_write", nbytes)]
        if writeback:
            demands = (("l2", nbytes / eff), ("hbm_writeback", nbytes / eff))
            counts.append(("bytes_hbm_write", nbytes))
        else:
            demands = (("l2", nbytes / eff),)
        if not aligned:
            counts.append(("bytes_unaligned", nbytes))
        return tuple(counts), (demands, nbytes / (hw.l2_write_bytes_per_cycle * eff), hw.gm_write_latency_cycles)

    def local_move(self, unit: str, pipe: str, nbytes: float, bytes_per_cycle: float, counter: str,
                   deps: Sequence[Dep] = (), label: str = "move") -> Op:
        """A move between on-chip buffers (L1->L0A/L0B on MTE1, L0C->L1 on FIXPIPE)."""
        self._count1(unit, counter, nbytes)
        return self._add(unit, pipe, label, nbytes / bytes_per_cycle, deps)

    def moved_out(self, op: Op) -> tuple[Op, float]:
        """A dependency on the moment a GM write has moved its data out of the local buffer (the pipe's
        release), before the write's latency has passed: the buffer slot is free from then on."""
        latency = op.xfer[2] if op.xfer is not None else 0.0
        return (op, -latency)

    def flag(self, op: Op) -> tuple[Op, float]:
        """A cross-core flag set when `op` finishes (AIC<->AIV exchange goes through GM)."""
        self._inc("cross_core_flags", 1, op.unit)
        return (op, float(self.hw.cross_core_flag_cycles))

    def sync_all(self, ops: Iterable[Op | None]) -> tuple[Op, float]:
        """SyncAll over the given last ops of every core; returns the dependency that releases them."""
        self._inc("sync_all", 1, "chip")
        barrier = self._add("chip", "SYNC", "SyncAll", 0.0, [o for o in ops if o is not None])
        return (barrier, float(self.hw.sync_all_cycles))

    # ----- running --------------------------------------------------------------------------------
    def unlink(self) -> None:
        """Drop the forward links between ops (successors, next op on the pipe) once the run is done: the
        dependencies and the previous op on the pipe point to earlier ops only, so the program then holds no
        reference cycles and is freed as soon as it is dropped."""
        for op in self.ops:
            op.succs = op.next = None

    def run(self) -> RunStats:
        """Schedule every op; returns makespan, phase spans and busy time per (unit, pipe), in cycles."""
        hbm = self.hbm
        servers = {"hbm": hbm, "l2": self.l2, "hbm_writeback": hbm}
        # L2 is write-back and HBM serves reads first: a write is done once it is in L2; its HBM transfer
        # (the eviction of the dirty lines) waits in a backlog drained while no read is served, and the
        # writer stalls only when that backlog outgrows L2.
        dirty_cycles = self.hw.l2_bytes / hbm.bytes_per_cycle
        weights = self.weights
        heap: list[tuple[float, int, Op]] = []
        push, pop = heapq.heappush, heapq.heappop

        for op in self.ops:
            if op.pending == 0 and op.prev is None:
                push(heap, (0.0, op.seq, op))
        processed = 0
        # The hottest loop of the timing model: earliest start times and the _Server rule are written inline
        # (comparisons instead of max(), whose call costs more; the results are the same).
        while heap:
            start, _, op = pop(heap)
            op.start = start
            xfer = op.xfer
            if xfer is None:
                op.release = op.end = start + op.cycles
            else:
                demands, core_cycles, latency = xfer
                data_end = start + core_cycles
                w = weights.get(op.unit, 1)
                for name, nbytes in demands:
                    server = servers[name]
                    free = server.free
                    served = nbytes / server.bytes_per_cycle * w
                    server.busy += served
                    if server is hbm:
                        if start > free:  # the idle gap since the last read drains the write-back backlog
                            backlog = hbm.backlog - (start - free)
                            hbm.backlog = backlog if backlog > 0.0 else 0.0  # noqa: FURB136
                            hbm.free = free = start
                        if name == "hbm_writeback":
                            backlog = hbm.backlog + served
                            if backlog > dirty_cycles:
                                # L2 is full of dirty lines: the excess is evicted now, ahead of later reads
                                free += backlog - dirty_cycles
                                hbm.free = free
                                backlog = dirty_cycles
                                if free > data_end:  # noqa: PLR1730
                                    data_end = free
                            hbm.backlog = backlog
                            continue
                    free = (free if free > start else start) + served  # noqa: FURB136
                    server.free = free
                    if free > data_end:  # noqa: PLR1730
                        data_end = free
                op.release = data_end
                op.end = data_end + latency
            op.done = True
            processed += 1
            # ready: the next op on this pipe (if its dependencies are done) and the successors whose last
            # dependency this was (if their pipe predecessor is done); each starts at its earliest time.
            nxt = op.next
            ready = [nxt] if nxt is not None and nxt.pending == 0 else []
            for succ in op.succs:
                succ.pending -= 1
                if succ.pending == 0:
                    prev = succ.prev
                    if prev is None or prev.done:
                        ready.append(succ)
            for r in ready:
                prev = r.prev
                t = prev.release if prev is not None else 0.0
                for d in r.deps:
                    e = d.end if d.__class__ is Op else d[0].end + d[1]
                    if e > t:  # noqa: PLR1730
                        t = e
                push(heap, (t, r.seq, r))
        if processed != len(self.ops):
            stuck = next(o for o in self.ops if not o.done)
            raise RuntimeError(f"deadlock in simulated program at {stuck.unit}.{stuck.pipe} {stuck.label}")

        self.unlink()
        makespan, phases, busy = _spans(self.ops)
        drain = hbm.free + hbm.backlog - makespan if hbm.backlog > 0.0 else 0.0
        drain = drain if drain > 0.0 else 0.0  # noqa: FURB136
        self.stats = RunStats(makespan + drain, phases, busy, self.hbm.busy, self.l2.busy,
                              {u: weights.get(u, 1) for u, _ in busy}, drain)
        return self.stats


def _spans(ops: Iterable[Op]) -> tuple[float, dict[str, tuple[float, float]], dict[tuple[str, str], float]]:
    """When the last of `ops` ended, the (start, end) span of each phase and the busy time of each
    (unit, pipe), in cycles. Comparisons instead of min()/max() calls: this runs once per op of every run."""
    phases: dict[str, tuple[float, float]] = {}
    busy: dict[tuple[str, str], float] = {}
    makespan = 0.0
    for op in ops:
        start, end = op.start, op.end
        if end > makespan:  # noqa: PLR1730
            makespan = end
        span = phases.get(op.phase)
        if span is None:
            phases[op.phase] = (start, end)
        elif start < span[0] or end > span[1]:
            phases[op.phase] = (min(span[0], start), max(span[1], end))
        unit = op.unit
        if unit != "chip":
            key = (unit, op.pipe)
            busy[key] = busy.get(key, 0.0) + (op.release - start)
    return makespan, phases, busy


def prefix_stats(engine: Engine, tasks: int, later: int) -> tuple[RunStats, dict[str, float], float]:
    """What the ops of tasks below `tasks` (Engine.task when they were added) measured in a finished run:
    the time their last op ended, the spans of their phases, their pipe busy time and HBM time, and their
    counters (kept apart when engine.prefix_tasks == tasks); and when the ops of tasks below `later` ended.
    Cycles."""
    if engine.prefix_tasks != tasks:
        raise ValueError(f"counters were kept for {engine.prefix_tasks} tasks, not {tasks}")
    weights = engine.weights
    hbm_rate, l2_rate = engine.hbm.bytes_per_cycle, engine.l2.bytes_per_cycle
    first = [op for op in engine.ops if op.task < tasks]
    later_end = max((op.end for op in engine.ops if tasks <= op.task < later), default=0.0)
    makespan, phases, busy = _spans(first)
    hbm = l2 = 0.0
    for op in first:
        if op.xfer is not None:
            w = weights.get(op.unit, 1)
            for name, nbytes in op.xfer[0]:
                if name == "l2":
                    l2 += nbytes * w / l2_rate
                else:
                    hbm += nbytes * w / hbm_rate
    stats = RunStats(makespan, phases, busy, hbm, l2, {u: weights.get(u, 1) for u, _ in busy})
    return stats, dict(engine.prefix_counters), max(makespan, later_end)


def unit_kind(unit: str) -> str:
    """'aic' or 'aiv' for a unit name like 'core3.aiv1'."""
    tail = unit.rsplit(".", 1)[-1]
    return "aic" if tail == "aic" else "aiv"
