"""The event engine of the simulated NPU: in-order pipes, dependencies, shared HBM and L2.

An *op* is one instruction (or one closed-form inner loop) on one pipe of one unit. Pipes of a unit run
concurrently; ops on one pipe start in program order. An op occupies its pipe for its issue cycles (the
next op on the pipe may start then) and its result is ready `latency` cycles later (dependent ops wait for
that): the pypto cost model of the A2/A3 pipes (hicann/pypto framework/src/cost_model/simulation_ca/A2A3/
model/pipe.cpp) times vector, cube and transfer instructions this way. An op starts when the previous op on
its pipe has released the pipe and every dependency has finished (plus the dependency's delay, e.g. a
cross-core flag).

GM transfers additionally reserve time on the chip-wide HBM and L2 servers, which serve requests in the order
they start (first come, first served, whole transfers), so cores transferring at the same time share the
bandwidth. A representative core standing for a group of identical cores reserves its group's bytes.

L2 (sim/l2.py) is least recently used and write-back. A transfer that names its GM range (`region`) is
looked up in it when it starts: resident bytes hit, the rest is read from HBM and allocated; a write
allocates its range dirty; the dirty bytes an allocation evicts are written to HBM at that moment, taking
HBM time from everyone (the writer does not wait for them). Transfers that give only a hit share (`l2_hit`)
or a `writeback` flag (the kernels without addresses) allocate anonymous data; their written-back writes
take HBM time when they are written.

Ops are processed in order of start time with one heap (the SimPy approach), so the shared servers and L2
see requests in time order.
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from operator import add

from ascendbench.hardware import HardwareProfile
from ascendbench.sim.l2 import L2Cache

__all__ = ["DYNAMIC_COUNTERS", "PIPES", "BufferCapacityError", "Dep", "Engine", "Op", "Parts", "core_groups",
           "gc_paused"]

# Pipe names, as Ascend's profiler shows them (SYNC: chip-wide barriers).
PIPES = ("MTE2", "MTE1", "CUBE", "FIXPIPE", "VECTOR", "MTE3", "SCALAR", "SYNC")
# Counters that depend on what L2 holds, so on timing: measured by running, extrapolated like times.
DYNAMIC_COUNTERS = ("bytes_l2_hit", "bytes_hbm_read", "bytes_hbm_write")


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
    """One instruction on one pipe. Times are in cycles, set when the engine runs: `start`, `release` (the
    pipe is free again) and `end` (the result is ready: release plus the op's latency)."""

    __slots__ = (
        "cycles",
        "deps",
        "done",
        "end",
        "hbm_bytes",
        "l2_bytes",
        "label",
        "latency",
        "next",
        "parts",
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
                 task: int = 0, latency: float = 0.0):
        self.unit = unit
        self.pipe = pipe
        self.label = label
        self.phase = phase
        self.cycles = cycles
        self.latency = latency
        self.xfer = xfer  # None, or a transfer description (see Engine._transfer)
        self.deps = deps  # list of Op or (Op, delay_cycles)
        self.succs = []
        self.pending = 0
        self.prev = None
        self.next = None
        self.done = False
        self.seq = seq
        self.task = task
        self.hbm_bytes = 0.0  # bytes this op moved to or from HBM (its group's), for the trace's counters
        self.l2_bytes = 0.0
        self.parts: Parts | None = None  # the ops a composite stands for, set when it runs

    def spans(self) -> list[tuple[str, str, float, float, float]]:
        """(pipe, label, start, release, end) of the ops this op stands for: itself, or a composite's parts."""
        if self.parts is not None:
            return self.parts.spans
        return [(self.pipe, self.label, self.start, self.release, self.end)]

    def __repr__(self) -> str:
        if not self.done:
            return f"Op({self.unit}.{self.pipe} {self.label}, not run)"
        return f"Op({self.unit}.{self.pipe} {self.label} {self.start:.0f}-{self.end:.0f})"


class Parts:
    """The ops a composite op (Engine.composite) stands for, once it has run: `spans`, their (pipe, label,
    start, release, end) in program order (given as a list, or as a function returning it, called the first
    time they are read: only timelines read them); `busy`, per pipe, in order of first use, each op's busy
    time (release - start, in program order: busy time adds them one by one, as it adds separate ops); and
    `end`, their latest end."""

    __slots__ = ("_spans", "busy", "end")

    def __init__(self, spans: list[tuple[str, str, float, float, float]] | Callable[[], list],
                 busy: list[tuple[str, list[float]]], end: float):
        self._spans, self.busy, self.end = spans, busy, end

    @property
    def spans(self) -> list[tuple[str, str, float, float, float]]:
        if callable(self._spans):
            self._spans = self._spans()
        return self._spans


Dep = Op | tuple[Op, float] | None


@dataclass
class _Server:
    """A chip-wide bandwidth resource served first come, first served: a request of `nbytes` from each of
    `weight` identical cores starting at `start` begins when the server is free (max(start, free)) and keeps
    it busy for weight * nbytes / bytes_per_cycle (Engine.run)."""

    bytes_per_cycle: float
    free: float = 0.0
    busy: float = 0.0

    def serve(self, start: float, nbytes: float) -> float:
        """Reserve the server for `nbytes` (already weighted) from `start`; returns when they are served."""
        served = nbytes / self.bytes_per_cycle
        self.busy += served
        begin = start if start > self.free else self.free
        self.free = begin + served
        return self.free


@dataclass
class RunStats:
    """What one engine run measured: times in cycles, dynamic counters (DYNAMIC_COUNTERS) in bytes."""

    makespan: float  # until the last op ends
    phases: dict[str, tuple[float, float]]
    busy: dict[tuple[str, str], float]
    hbm_busy: float
    l2_busy: float
    unit_weights: dict[str, int] = field(default_factory=dict)
    dynamic: dict[str, float] = field(default_factory=dict)


class Engine:
    """Builds a program of ops for the simulated chip and runs it.

    Args:
        hw: the hardware profile.
        warm_l2: whether data touched before the kernel is still resident in L2 (kernels consult it).
        group_cores: let kernels simulate one representative per group of cores with identical programs
            (see `set_weight`); False simulates every core.
        l2: the L2 contents the kernel starts with (sim.l2.L2Cache, taken over by the engine); None: empty.

    Static counters (instructions, bytes moved between GM and the cores, syncs) are accumulated when ops are
    created, so they do not depend on timing; kernels that skip regular loop iterations for extrapolation add
    those iterations' counters with `add_counters`. What L2 and HBM served (DYNAMIC_COUNTERS) is measured
    when the program runs (`stats.dynamic`).
    """

    def __init__(self, hw: HardwareProfile, warm_l2: bool = False, group_cores: bool = True,
                 l2: L2Cache | None = None):
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
        self._addressed_costs: dict[tuple, tuple] = {}  # _addressed's counters and rates by arguments
        self.weights: dict[str, int] = {}
        self.phase = "main"
        # Index of the task (outer loop iteration) the ops being added belong to; with prefix_tasks > 0 the
        # counters of tasks below it are also kept apart (prefix_counters), see prefix_stats.
        self.task = 0
        self.prefix_tasks = 0
        self.prefix_counters: dict[str, float] = {}
        self.hbm = _Server(hw.hbm_bytes_per_cycle)
        self.l2 = _Server(hw.l2_bytes_per_cycle)
        self.cache = l2 if l2 is not None else L2Cache(hw.l2_cache_bytes)
        self.stats: RunStats | None = None

    # ----- building -------------------------------------------------------------------------------
    def _add(self, unit: str, pipe: str, label: str, cycles: float, deps: Iterable[Dep], xfer=None,
             latency: float = 0.0) -> Op:
        ops = self.ops
        norm: list = []
        op = Op(unit, pipe, label, self.phase, cycles, xfer, norm, len(ops), self.task, latency)
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
        reserve `weight` times their bytes on the shared HBM and L2 servers and in L2, and its counters and
        busy time count `weight` times. Simulating one representative per group of identical cores is what
        keeps the engine fast; a test checks it against simulating every core."""
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

    def compute(self, unit: str, pipe: str, cycles: float, deps: Sequence[Dep] = (), label: str = "",
                latency: float = 0.0) -> Op:
        """An op that occupies `pipe` for `cycles`; its result is ready `latency` cycles after that."""
        return self._add(unit, pipe, label, cycles, deps, latency=latency)

    def cube(self, unit: str, m: int, n: int, k: int, int8: bool, deps: Sequence[Dep] = (), label="mmad") -> Op:
        """Mmad of (m x k) by (k x n) on the cube: ceil(m/16)*ceil(n/16)*ceil(k/kstep) fractal cycles, then
        the cube latency before the result is in L0C; kstep is 16 for fp16 and 32 for int8 (pypto cost model
        pipe.cpp CalcMmad, def.h CUBE_PE_TAB)."""
        fractals = self.cube_cycles(m, n, k, int8)
        self._count(unit, (("matmuls", 1), ("cube_fractals", fractals)))
        return self._add(unit, "CUBE", label, fractals, deps, latency=self.hw.cube_latency_cycles)

    def vector_repeats(self, nbytes: float) -> int:
        """Repeats of one vector pass over `nbytes` (256 B per repeat)."""
        return math.ceil(nbytes / self.hw.vector_bytes_per_repeat)

    def _vector_cost(self, nbytes: float, per_repeat: float) -> tuple[int, int, float]:
        """(instructions, repeats, issue cycles) of one vector pass over `nbytes`: instructions of at most
        vector_max_repeats repeats each (AscendC splits longer ones), issued back to back."""
        repeats = self.vector_repeats(nbytes)
        instructions = max(1, math.ceil(repeats / self.hw.vector_max_repeats)) if repeats else 0
        return instructions, repeats, repeats * per_repeat

    def vector(self, unit: str, nbytes: float, deps: Sequence[Dep] = (), label="vec", passes: int = 1,
               per_repeat: float = 1.0, latency: float | None = None) -> Op:
        """`passes` dependent vector passes over `nbytes` each. A pass issues one uop per repeat (256 B) times
        `per_repeat` (1 for element-wise ops and casts; vector_reduce_cycles_per_repeat for reductions) and its
        result is ready `latency` cycles after the last uop (default vector_startup_cycles): pypto pipe.cpp
        CalcVecOp and CalcVconv. A later pass starts when the previous one's result is ready."""
        hw = self.hw
        lat = hw.vector_startup_cycles if latency is None else latency
        instructions, repeats, issue = self._vector_cost(nbytes, per_repeat)
        self._count(unit, (("vector_instructions", instructions * passes), ("vector_repeats", repeats * passes)))
        cycles = passes * issue + (passes - 1) * lat
        return self._add(unit, "VECTOR", label, cycles, deps, latency=lat)

    def ub_copy(self, unit: str, nbytes: float, deps: Sequence[Dep] = (), label="DataCopy UB->UB") -> Op:
        """DataCopy between two UB buffers on the vector pipe: one cycle per 256 bytes and a data-path latency
        (pypto pipe.cpp CalcMovUbUb; the GE performance table's Ub2ub agrees)."""
        instructions, repeats, issue = self._vector_cost(nbytes, 1.0)
        self._count(unit, (("vector_instructions", instructions), ("vector_repeats", repeats)))
        return self._add(unit, "VECTOR", label, issue, deps, latency=self.hw.ub_copy_latency_cycles)

    def vector_chain(self, unit: str, steps: int, nbytes_per_step: float, sync: str, deps=(), label="chain",
                     scalar_reads: int = 1, ops_per_step: int = 1) -> Op:
        """A closed-form loop of `steps` dependent steps of `ops_per_step` vector instructions over
        `nbytes_per_step` each.

        `sync="scalar"`: the carry loop of the scan kernels (kernel_complete_rows.h:153-157: Adds on a row,
        then GetValue of its last element for the next row's Adds). Each step issues its instructions, the
        scalar unit waits for the vector pipe (the V->S event the compiler inserts before GetValue), loads
        `scalar_reads` values from UB and runs the loop's scalar bookkeeping, then issues the next step.
        `sync="barrier"`: dependent vector instructions separated by PipeBarrier<PIPE_V> (a step waits for the
        previous one's result, then the barrier).
        """
        hw = self.hw
        instructions, repeats, issue = self._vector_cost(nbytes_per_step, 1.0)
        lat = hw.vector_startup_cycles
        if sync == "scalar":
            per_step = (ops_per_step * issue + lat + hw.vector_scalar_sync_cycles
                        + scalar_reads * hw.scalar_load_cycles + hw.carry_loop_scalar_ops * hw.scalar_op_cycles)
            self._inc("vector_scalar_syncs", steps, unit)
        elif sync == "barrier":
            per_step = ops_per_step * issue + lat + hw.vector_barrier_cycles
            self._inc("vector_barriers", steps, unit)
        else:
            raise ValueError(f"sync must be 'scalar' or 'barrier', got {sync!r}")
        self._inc("vector_instructions", instructions * ops_per_step * steps, unit)
        self._inc("vector_repeats", repeats * ops_per_step * steps, unit)
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

    def gm_read(self, unit: str, pipe: str, nbytes: float, *, l2_hit: bool | float | None = None,
                region: tuple | None = None, aligned: bool = True, deps: Sequence[Dep] = (),
                label: str = "gm_read", serial: float = 1.0, nd2nz_unaligned: bool = False) -> Op:
        """Read `nbytes` from GM into a local buffer.

        Give either `region` = (buffer name, byte offset): the GM range read, looked up in L2 when the read
        starts (resident bytes hit; the rest is read from HBM and allocated); or `l2_hit`: the share of the
        bytes found in L2, decided by the kernel (misses allocate anonymous data). A hit is served by L2 at the
        L2 rate, a miss by HBM at the per-core GM rate; both share the chip-wide servers. Unaligned addresses
        lose bandwidth. `serial` > 1 says that many cores read the same 512-byte ranges at the same time and
        are served one after another (HGEMM paper §4.3.2). `nd2nz_unaligned`: a GM -> L1 load that converts ND
        rows to the fractal NZ layout on the way, whose row pitch is not a multiple of the profile's
        nd2nz_alignment_bytes: it runs at nd2nz_unaligned_efficiency instead of the alignment rate (CANN best
        practices, ND2NZ format conversion on the AIV core).

        Raises:
            ValueError: nbytes < 0, or not exactly one of region and l2_hit.
        """
        if (region is None) == (l2_hit is None):
            raise ValueError("gm_read takes exactly one of region and l2_hit")
        if region is not None:
            return self._addressed(unit, pipe, nbytes, region, False, aligned, deps, label, serial,
                                   bool(nd2nz_unaligned))
        return self.transfer(unit, pipe, self.read_kind(nbytes, l2_hit=l2_hit, aligned=aligned, serial=serial,
                                                        nd2nz_unaligned=nd2nz_unaligned), deps, label)

    def read_kind(self, nbytes: float, *, l2_hit: bool | float, aligned: bool = True, serial: float = 1.0,
                  nd2nz_unaligned: bool = False) -> tuple[tuple, tuple]:
        """What a gm_read with `l2_hit` (no region) counts and costs, for `transfer`: a program that repeats a
        transfer many times can look it up once. Arguments and errors as gm_read's."""
        # The key holds nbytes' type too: an int size gives int byte counters, a float one float counters.
        key = (nbytes, nbytes.__class__, float(l2_hit), bool(aligned), serial, bool(nd2nz_unaligned))
        known = self._reads.get(key)
        if known is None:
            known = self._reads[key] = self._read_cost(nbytes, float(l2_hit), aligned, serial, bool(nd2nz_unaligned))
        return known

    def transfer(self, unit: str, pipe: str, kind: tuple[tuple, tuple], deps: Sequence[Dep] = (),
                 label: str = "transfer") -> Op:
        """A GM transfer of a kind from read_kind or write_kind (gm_read or gm_write with those arguments)."""
        counts, xfer = kind
        self._count(unit, counts)
        return self._add(unit, pipe, label, 0.0, deps, xfer, latency=xfer[3])

    def _efficiency(self, aligned: bool, slow_nd2nz: bool) -> float:
        hw = self.hw
        return hw.nd2nz_unaligned_efficiency if slow_nd2nz else (1.0 if aligned else hw.unaligned_efficiency)

    def _alignment_counts(self, nbytes: float, aligned: bool, slow_nd2nz: bool, serial: float) -> list:
        # each transfer is counted under the rate it ran at: ND2NZ's (it replaces the alignment rate) or 70%
        counts = []
        if slow_nd2nz:
            counts.append(("bytes_nd2nz_unaligned", nbytes))
        elif not aligned:
            counts.append(("bytes_unaligned", nbytes))
        if serial > 1.0:
            counts.append(("bytes_serialised", nbytes * (serial - 1.0)))
        return counts

    def _read_cost(self, nbytes: float, hit: float, aligned: bool, serial: float,
                   slow_nd2nz: bool) -> tuple[tuple, tuple]:
        """Counters and ("r", server demands, core cycles, latency, hit bytes, miss bytes) of a gm_read with a
        given hit share."""
        if nbytes < 0:
            raise ValueError(f"a GM read moves nbytes >= 0 bytes, got {nbytes}")
        hw = self.hw
        nbytes = self._rounded(nbytes)
        eff = self._efficiency(aligned, slow_nd2nz)
        counts = [("bytes_gm_read", nbytes), *self._alignment_counts(nbytes, aligned, slow_nd2nz, serial)]
        hit_bytes, miss_bytes = nbytes * hit, nbytes * (1.0 - hit)
        demands = []
        core_cycles = 0.0
        if hit_bytes > 0.0:
            demands.append(("l2", hit_bytes / eff))
            core_cycles += hit_bytes / (hw.l2_read_bytes_per_cycle * eff)
        if miss_bytes > 0.0:
            # a miss is filled into L2 and delivered from it: it takes L2 bandwidth as well as HBM's
            demands.append(("hbm", miss_bytes / eff))
            demands.append(("l2", miss_bytes / eff))
            core_cycles += miss_bytes / (hw.gm_read_bytes_per_cycle * eff)
        latency = hw.gm_read_latency_cycles if hit < 1.0 else hw.l2_hit_latency_cycles
        return tuple(counts), ("r", tuple(demands), core_cycles * max(serial, 1.0), latency, hit_bytes, miss_bytes)

    def gm_write(self, unit: str, pipe: str, nbytes: float, *, writeback: bool | None = None,
                 region: tuple | None = None, aligned: bool = True, deps: Sequence[Dep] = (),
                 label: str = "gm_write") -> Op:
        """Write `nbytes` to GM. Writes land in L2. Give either `region` = (buffer name, byte offset): the
        range is allocated dirty in L2 and reaches HBM when it is evicted; or `writeback`: the kernel's word
        that the data reaches HBM (it is not overwritten while still resident), in which case it takes HBM
        bandwidth when it is written.

        Raises:
            ValueError: nbytes < 0, or not exactly one of region and writeback.
        """
        if (region is None) == (writeback is None):
            raise ValueError("gm_write takes exactly one of region and writeback")
        if region is not None:
            return self._addressed(unit, pipe, nbytes, region, True, aligned, deps, label, 1.0, False)
        kind = self.write_kind(nbytes, writeback=writeback, aligned=aligned)
        return self.transfer(unit, pipe, kind, deps, label)

    def write_kind(self, nbytes: float, *, writeback: bool, aligned: bool = True) -> tuple[tuple, tuple]:
        """What a gm_write with `writeback` (no region) counts and costs, for `transfer` (see read_kind)."""
        key = (nbytes, nbytes.__class__, bool(writeback), bool(aligned))  # as in read_kind
        known = self._writes.get(key)
        if known is None:
            known = self._writes[key] = self._write_cost(nbytes, writeback, aligned)
        return known

    def _write_cost(self, nbytes: float, writeback: bool, aligned: bool) -> tuple[tuple, tuple]:
        """Counters and ("w", server demands, core cycles, latency, bytes written back to HBM, HBM time they
        take in bytes at full rate) of a gm_write without region."""
        if nbytes < 0:
            raise ValueError(f"a GM write moves nbytes >= 0 bytes, got {nbytes}")
        hw = self.hw
        nbytes = self._rounded(nbytes)
        eff = self._efficiency(aligned, False)
        counts = [("bytes_gm_write", nbytes), *self._alignment_counts(nbytes, aligned, False, 1.0)]
        # a written-back write lands in L2 like any other; its HBM write-back takes HBM time from everyone
        # without holding the writer, as an addressed write's evictions do (_transfer)
        return tuple(counts), ("w", (("l2", nbytes / eff),), nbytes / (hw.l2_write_bytes_per_cycle * eff),
                               hw.gm_write_latency_cycles, nbytes if writeback else 0.0,
                               nbytes / eff if writeback else 0.0)

    def _addressed(self, unit: str, pipe: str, nbytes: float, region: tuple, write: bool, aligned: bool,
                   deps, label: str, serial: float, slow_nd2nz: bool) -> Op:
        """A transfer of a named GM range, resolved against L2 when it runs (Engine.run)."""
        # a program repeats a few kinds of transfer many times: their counters and rates are computed once (the
        # key holds nbytes' type, as in gm_read)
        key = (nbytes, nbytes.__class__, write, aligned, slow_nd2nz, serial)
        known = self._addressed_costs.get(key)
        if known is None:
            if nbytes < 0:
                raise ValueError(f"a GM {'write' if write else 'read'} moves nbytes >= 0 bytes, got {nbytes}")
            rounded = self._rounded(nbytes)
            counts = (("bytes_gm_write" if write else "bytes_gm_read", rounded),
                      *self._alignment_counts(rounded, aligned, slow_nd2nz, serial))
            eff = self._efficiency(aligned, slow_nd2nz)  # writes never convert to NZ: slow_nd2nz is False
            # a read's latency is decided when it runs (an L2 hit answers sooner); a write's is fixed
            latency = self.hw.gm_write_latency_cycles if write else self.hw.gm_read_latency_cycles
            known = self._addressed_costs[key] = (counts, rounded, eff, max(serial, 1.0), latency)
        counts, nbytes, eff, serial, latency = known
        self._count(unit, counts)
        buf, offset = region
        xfer = ("aw" if write else "ar", buf, float(offset), float(offset) + nbytes, nbytes, eff, serial)
        return self._add(unit, pipe, label, 0.0, deps, xfer, latency=latency)

    def local_move(self, unit: str, pipe: str, nbytes: float, bytes_per_cycle: float, counter: str,
                   deps: Sequence[Dep] = (), label: str = "move", latency: float = 0.0) -> Op:
        """A move between on-chip buffers (L1->L0A/L0B on MTE1, L0C->L1 on FIXPIPE)."""
        self._count1(unit, counter, nbytes)
        return self._add(unit, pipe, label, nbytes / bytes_per_cycle, deps, latency=latency)

    def composite(self, unit: str, pipe: str, label: str, deps: Sequence[Dep], schedule) -> Op:
        """An op that stands for a run of ops of `unit` on pipes no other unit shares and that touch no shared
        server (e.g. the MTE1 moves and Mmads of one L1 panel): one op to build and schedule instead of many.

        It joins `pipe`'s program order and runs once `deps` are done; then `schedule(op)` gives the times of
        the ops it stands for, exactly as the engine would have, from its dependencies (and from state the
        kernel carries between composites of a chain): it sets op.parts (Parts), op.start to their earliest
        start and op.latency so that release + latency is when the ops that depend on the composite may start,
        and returns the release. Busy time, phases, the makespan and the timeline count the parts; the kernel
        adds their counters."""
        return self._add(unit, pipe, label, 0.0, deps, ("c", schedule))

    def count(self, unit: str, items: Iterable[tuple[str, float]]) -> None:
        """Add the (counter, value) pairs of ops a composite stands for, weighted by `unit`'s weight as the
        counters of its separate ops would be."""
        self._count(unit, items)

    def cube_cycles(self, m: int, n: int, k: int, int8: bool = False) -> int:
        """Fractal cycles of one Mmad (see `cube`)."""
        shape = (m, n, k, int8)
        fractals = self._fractals.get(shape)
        if fractals is None:  # programs repeat a few block shapes many times
            kstep = 32 if int8 else 16
            fractals = self._fractals[shape] = math.ceil(m / 16) * math.ceil(n / 16) * math.ceil(k / kstep)
        return fractals

    def moved_out(self, op: Op) -> tuple[Op, None]:
        """A dependency on the moment an op has released its pipe (for a GM write: its data has left the
        local buffer, before the write's latency has passed): the buffer slot is free from then on."""
        return (op, None)

    def flag(self, op: Op, count: bool = True) -> tuple[Op, float, str]:
        """A cross-core flag (ffts_cross_core_sync / wait_flag_dev, tcuscan_utils.h:1192-1228) set when `op`
        finishes, seen by the waiting core cross_core_flag_cycles later (a dependency; the third item marks it
        as a flag for the trace)."""
        if count:
            self._inc("cross_core_flags", 1, op.unit)
        return (op, float(self.hw.cross_core_flag_cycles), "flag")

    def sync_all(self, ops: Iterable[Op | None]) -> Op:
        """SyncAll over the given last ops of every core; returns the barrier op, which ends when the cores
        are released (its span is the SyncAll's latency). SyncAll<false> on the 910B is three rounds of
        hardware flags (asc-devkit impl/basic_api/dav_c220/kernel_operator_sync_impl.h SyncAllImpl: each
        AIV flags its AIC, the AICs sync among themselves, each AIC flags its AIVs): sync_all_cycles."""
        self._inc("sync_all", 1, "chip")
        phase, self.phase = self.phase, "SyncAll"
        barrier = self._add("chip", "SYNC", "SyncAll", float(self.hw.sync_all_cycles),
                            [o for o in ops if o is not None])
        self.phase = phase
        return barrier

    # ----- running --------------------------------------------------------------------------------
    def unlink(self) -> None:
        """Drop the forward links between ops (successors, next op on the pipe) once the run is done: the
        dependencies and the previous op on the pipe point to earlier ops only, so the program then holds no
        reference cycles and is freed as soon as it is dropped."""
        for op in self.ops:
            op.succs = op.next = None

    def _transfer(self, op: Op, start: float, w: float, dyn: dict[str, float], prefix: dict | None) -> float:
        """Serve the transfer `op` starting at `start` (L2 lookup, servers, evictions); returns when its data
        has moved (the pipe is free again), without the latency. `dyn` (and `prefix`, for the ops of a prefix
        of tasks, see prefix_stats) accumulate the dynamic counters."""
        hw = self.hw
        x = op.xfer
        kind = x[0]
        if kind == "c":  # a composite (Engine.composite): its parts use no shared server
            return x[1](op)
        hbm, l2s, cache = self.hbm, self.l2, self.cache
        data_end = start
        evicted = hit_moved = miss_moved = written_back = 0.0
        hbm_taken = l2_taken = 0.0  # what this op takes of each server (an unaligned byte takes 1 / efficiency)
        if kind == "r" or kind == "w":
            _, demands, core_cycles, _, hit_or_hbm, last = x
            data_end += core_cycles
            for name, nbytes in demands:
                if name == "hbm":
                    end = hbm.serve(start, nbytes * w)
                    hbm_taken += nbytes * w
                else:
                    end = l2s.serve(start, nbytes * w)
                    l2_taken += nbytes * w
                if end > data_end:
                    data_end = end
            if kind == "r":
                miss_bytes = last
                if miss_bytes:
                    evicted = cache.allocate(miss_bytes * w, False)
                hit_moved, miss_moved = hit_or_hbm * w, miss_bytes * w
            elif hit_or_hbm:
                # a written-back write: its HBM write-back takes HBM time from everyone without holding the
                # writer, as an addressed write's evictions do
                written_back = hit_or_hbm * w
                hbm.serve(start, last * w)
                hbm_taken += last * w
        else:
            _, buf, lo, hi, nbytes, eff, serial = x
            hit, evicted = cache.access(buf, lo, hi, w, kind == "aw")
            l2_taken = nbytes / eff * w
            end = l2s.serve(start, l2_taken)
            if kind == "aw":
                data_end += nbytes / (hw.l2_write_bytes_per_cycle * eff)
            else:
                hit_bytes, miss_bytes = nbytes * hit, nbytes * (1.0 - hit)
                data_end += (hit_bytes / hw.l2_read_bytes_per_cycle + miss_bytes / hw.gm_read_bytes_per_cycle) \
                    / eff * serial
                if miss_bytes > 0.0:
                    end = max(end, hbm.serve(start, miss_bytes / eff * w))
                    hbm_taken += miss_bytes / eff * w
                hit_moved, miss_moved = hit_bytes * w, miss_bytes * w
                # a read that found everything resident completes at L2 latency
                op.latency = hw.l2_hit_latency_cycles if miss_bytes <= 0.0 else hw.gm_read_latency_cycles
            if end > data_end:
                data_end = end
        if evicted > 0.0:
            # the eviction of dirty lines takes HBM time from everyone; the allocating transfer does not wait
            hbm.serve(start, evicted)
            written_back += evicted
            hbm_taken += evicted
        op.hbm_bytes, op.l2_bytes = hbm_taken, l2_taken
        dyn["bytes_l2_hit"] += hit_moved
        dyn["bytes_hbm_read"] += miss_moved
        dyn["bytes_hbm_write"] += written_back
        if prefix is not None:
            prefix["bytes_l2_hit"] += hit_moved
            prefix["bytes_hbm_read"] += miss_moved
            prefix["bytes_hbm_write"] += written_back
        return data_end

    def run(self) -> RunStats:
        """Schedule every op; returns makespan, phase spans, busy time per (unit, pipe) and dynamic counters."""
        weights = self.weights
        heap: list[tuple[float, int, Op]] = []
        push, pop = heapq.heappush, heapq.heappop
        dyn = dict.fromkeys(DYNAMIC_COUNTERS, 0.0)
        prefix_dyn = dict.fromkeys(DYNAMIC_COUNTERS, 0.0)
        prefix_tasks = self.prefix_tasks
        transfer = self._transfer

        heads = [op for op in self.ops if op.prev is None]  # the first op of each pipe, in program order
        for op in heads:
            if op.pending == 0:
                push(heap, (0.0, op.seq, op))
        processed = 0
        # The hottest loop of the timing model: earliest start times are written inline (comparisons instead
        # of max(), whose call costs more; the results are the same).
        while heap:
            start, _, op = pop(heap)
            op.start = start
            xfer = op.xfer
            if xfer is None:
                op.release = release = start + op.cycles
                op.end = release + op.latency
            else:
                op.release = transfer(op, start, weights.get(op.unit, 1), dyn,
                                      prefix_dyn if op.task < prefix_tasks else None)
                op.end = op.release + op.latency
            op.done = True
            processed += 1
            # ready: the next op on this pipe (if its dependencies are done) and the successors whose last
            # dependency this was (if their pipe predecessor is done); each starts at its earliest time.
            nxt = op.next
            succs = op.succs
            if succs:
                ready = [nxt] if nxt is not None and nxt.pending == 0 else []
                for succ in succs:
                    succ.pending -= 1
                    if succ.pending == 0:
                        prev = succ.prev
                        if prev is None or prev.done:
                            ready.append(succ)
            elif nxt is not None and nxt.pending == 0:
                ready = (nxt,)
            else:
                continue
            for r in ready:
                prev = r.prev
                t = prev.release if prev is not None else 0.0
                for d in r.deps:
                    if d.__class__ is Op:
                        e = d.end
                    else:
                        e = d[0].release if d[1] is None else d[0].end + d[1]
                    if e > t:  # noqa: PLR1730
                        t = e
                push(heap, (t, r.seq, r))
        if processed != len(self.ops):
            stuck = next(o for o in self.ops if not o.done)
            raise RuntimeError(f"deadlock in simulated program at {stuck.unit}.{stuck.pipe} {stuck.label}")

        makespan, phases, busy = _pipe_spans(heads, self.ops)
        self.prefix_dynamic = prefix_dyn
        self.stats = RunStats(makespan, phases, busy, self.hbm.busy, self.l2.busy,
                              {u: weights.get(u, 1) for u, _ in busy}, dyn)
        return self.stats


def _spans(ops: Iterable[Op]) -> tuple[float, dict[str, tuple[float, float]], dict[tuple[str, str], float]]:
    """When the last of `ops` ended, the (start, end) span of each phase and the busy time of each
    (unit, pipe), in cycles, in program order. Comparisons instead of min()/max() calls: this runs once per op
    of the ops it is given."""
    phases: dict[str, tuple[float, float]] = {}
    busy: dict[tuple[str, str], float] = {}
    makespan = 0.0
    get = busy.get
    for op in ops:
        start, end = op.start, op.end
        unit = op.unit
        parts = op.parts
        if parts is not None:  # a composite: its parts one by one (the same sums as separate ops), its span theirs
            for pipe, times in parts.busy:
                key = (unit, pipe)
                busy[key] = reduce(add, times, get(key, 0.0))
            if parts.end > end:  # noqa: PLR1730
                end = parts.end
        elif unit != "chip":
            key = (unit, op.pipe)
            busy[key] = get(key, 0.0) + (op.release - start)
        if end > makespan:  # noqa: PLR1730
            makespan = end
        span = phases.get(op.phase)
        if span is None:
            phases[op.phase] = (start, end)
        elif start < span[0] or end > span[1]:
            phases[op.phase] = (min(span[0], start), max(span[1], end))
    return makespan, phases, busy


def _pipe_spans(heads: list[Op], ops: list[Op]) -> tuple[float, dict[str, tuple[float, float]],
                                                          dict[tuple[str, str], float]]:
    """_spans of a whole finished run (`ops`, in program order), from the first op of each pipe (`heads`, in
    program order) along the pipes, and Engine.unlink in the same pass: a pipe's busy time is summed in local
    variables, in program order (the same sums as _spans), and a phase's span is updated once per stretch of
    its ops on a pipe, instead of a dictionary look-up per op. A composite's parts add their busy time to
    their pipes, in program order as _spans adds them, as long as each such pipe gets busy time from one
    pipe's walk only (as the panel composites of HGEMM on the CUBE pipe give MTE1 and CUBE theirs);
    otherwise the sums are those of _spans in program order. The dictionaries have _spans' order (first op
    of each phase, of each (unit, pipe) adding busy time)."""
    spans: dict[str, tuple[float, float]] = {}
    first: dict[str, int] = {}  # phase -> seq of its first op
    # (seq of the first op adding busy time, its part's index in the composite, (unit, pipe), busy time)
    sums: list[tuple[int, int, tuple[str, str], float]] = []
    parts_busy: dict[tuple[str, str], list] = {}  # key -> [seq, part index, pipe walk, [busy times, ...]]
    makespan = 0.0
    for walk, op in enumerate(heads):
        unit, pipe = op.unit, op.pipe
        total = 0.0
        own = -1  # seq of the pipe's first op that is not a composite
        phase = op.phase
        lo, hi, seq = op.start, -math.inf, op.seq
        while op is not None:
            nxt = op.next
            op.succs = op.next = None
            start, end = op.start, op.end
            parts = op.parts
            if parts is None:
                total += op.release - start
                if own < 0:
                    own = op.seq
            else:
                if parts.end > end:  # noqa: PLR1730
                    end = parts.end
                for i, (part_pipe, times) in enumerate(parts.busy):
                    entry = parts_busy.get((unit, part_pipe))
                    if entry is None:
                        parts_busy[(unit, part_pipe)] = [op.seq, i, walk, [times]]
                    else:
                        entry[3].append(times)
                        if entry[2] != walk:
                            entry[2] = -1  # parts of composites on two pipes: _spans' order decides
            if end > makespan:  # noqa: PLR1730
                makespan = end
            if op.phase != phase:
                span = spans.get(phase)
                spans[phase] = (lo, hi) if span is None else (min(span[0], lo), max(span[1], hi))
                if seq < first.get(phase, seq + 1):
                    first[phase] = seq
                phase, lo, hi, seq = op.phase, start, end, op.seq
            else:
                if start < lo:  # noqa: PLR1730
                    lo = start
                if end > hi:  # noqa: PLR1730
                    hi = end
            op = nxt
        span = spans.get(phase)
        spans[phase] = (lo, hi) if span is None else (min(span[0], lo), max(span[1], hi))
        if seq < first.get(phase, seq + 1):
            first[phase] = seq
        if own >= 0 and unit != "chip":
            sums.append((own, 0, (unit, pipe), total))
    if parts_busy:
        walked = {key for _, _, key, _ in sums}
        for key, (seq, i, walk, lists) in parts_busy.items():
            if walk < 0 or key in walked:  # busy time from two walks: added in program order by _spans
                return _spans(ops)
            total = 0.0
            for times in lists:
                total = reduce(add, times, total)
            sums.append((seq, i, key, total))
        sums.sort()
    busy = {key: total for _, _, key, total in sums}
    return makespan, {p: spans[p] for p in sorted(spans, key=first.__getitem__)}, busy


def prefix_stats(engine: Engine, tasks: int, later: int) -> tuple[RunStats, dict[str, float], float]:
    """What the ops of tasks below `tasks` (Engine.task when they were added) measured in a finished run:
    the time their last op ended, the spans of their phases, their pipe busy time and HBM time, and their
    counters (kept apart when engine.prefix_tasks == tasks, the dynamic ones included); and when the ops of
    tasks below `later` ended. Cycles."""
    if engine.prefix_tasks != tasks:
        raise ValueError(f"counters were kept for {engine.prefix_tasks} tasks, not {tasks}")
    weights = engine.weights
    hbm_rate, l2_rate = engine.hbm.bytes_per_cycle, engine.l2.bytes_per_cycle
    first = [op for op in engine.ops if op.task < tasks]
    later_end = max((op.end if op.parts is None else max(op.end, op.parts.end)
                     for op in engine.ops if tasks <= op.task < later), default=0.0)
    makespan, phases, busy = _spans(first)
    hbm = sum(op.hbm_bytes for op in first) / hbm_rate
    l2 = sum(op.l2_bytes for op in first) / l2_rate
    counters = dict(engine.prefix_counters)
    counters.update(engine.prefix_dynamic)
    stats = RunStats(makespan, phases, busy, hbm, l2, {u: weights.get(u, 1) for u, _ in busy},
                     dict(engine.prefix_dynamic))
    return stats, counters, max(makespan, later_end)


def unit_kind(unit: str) -> str:
    """'aic' or 'aiv' for a unit name like 'core3.aiv1'."""
    tail = unit.rsplit(".", 1)[-1]
    return "aic" if tail == "aic" else "aiv"
