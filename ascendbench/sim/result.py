"""Simulation results: time, phases, pipe busy time and counters; extrapolation and sequencing."""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field

from ascendbench.hardware import HardwareProfile
from ascendbench.sim.engine import DYNAMIC_COUNTERS, Engine, Op, RunStats, gc_paused, prefix_stats, unit_kind
from ascendbench.sim.l2 import L2Cache

__all__ = ["Gap", "RunCache", "SimResult", "Span", "dissimilarity", "fixed_cost", "partition", "sequence", "simulate",
           "simulate_2d", "simulate_scaled"]


def intervals(spans: dict[str, tuple[float, float]], makespan: float) -> list[tuple[str, float, float]]:
    """The run [0, makespan] cut into consecutive (phase, start, end) intervals, in time order.

    `spans` holds each phase's (first start, last end). Each instant belongs to the running phase that ends
    first (where phases overlap, as the HGEMM epilogue overlaps the GEMM, the later phase is charged only for
    the time it runs on after the other has ended); an instant in no phase's span (a wait between two phases)
    belongs to the phase that starts next, or to the last phase after all have ended."""
    if not spans:
        return []
    cuts = sorted({0.0, makespan, *(t for span in spans.values() for t in span if 0.0 <= t <= makespan)})
    order = sorted(spans, key=lambda p: (spans[p][0], spans[p][1]))
    out: list[tuple[str, float, float]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        if b <= a:
            continue
        active = [p for p in order if spans[p][0] <= a and spans[p][1] >= b]
        if active:
            owner = min(active, key=lambda p: spans[p][1])
        else:
            later = [p for p in order if spans[p][0] >= b]
            owner = later[0] if later else max(order, key=lambda p: spans[p][1])
        if out and out[-1][0] == owner:
            out[-1] = (owner, out[-1][1], b)
        else:
            out.append((owner, a, b))
    return out


def partition(spans: dict[str, tuple[float, float]], makespan: float) -> dict[str, float]:
    """Cycles of a run attributed to its phases so that they add up to `makespan` (see `intervals`), in the
    order the phases first run."""
    out: dict[str, float] = {}
    for name, a, b in intervals(spans, makespan):
        out[name] = out.get(name, 0.0) + b - a
    return out


def _layout(phases: dict[str, float]) -> list[tuple[str, float, float]]:
    """Phases (cycles, in order) laid end to end from 0: the intervals of a run known by its phase times only
    (an extrapolated or fixed-cost run)."""
    out, t = [], 0.0
    for name, cycles in phases.items():
        if cycles > 0:
            out.append((name, t, t + cycles))
            t += cycles
    return out


def _settle(phases: dict[str, float], makespan: float) -> dict[str, float]:
    """Phase times fitted one by one, made to add up to the fitted makespan: a shortfall (the makespan was
    raised to a busy-time or HBM bound that the fitted ends fell short of) goes to the longest phase, an
    excess is taken off proportionally."""
    phases = {p: max(v, 0.0) for p, v in phases.items()}
    total = sum(phases.values())
    if not phases or total <= 0.0:
        return phases
    if total > makespan:
        return {p: v * makespan / total for p, v in phases.items()}
    longest = max(phases, key=phases.get)
    phases[longest] += makespan - total
    return phases


@dataclass(frozen=True)
class Span:
    """One op on the timeline. Times in cycles from the kernel start: the op holds its pipe from start to
    release and its result is ready at end (release plus its latency)."""

    unit: str
    pipe: str
    label: str
    phase: str
    start: float
    end: float
    release: float = 0.0
    hbm_bytes: float = 0.0
    l2_bytes: float = 0.0
    flags_from: tuple = ()  # (unit, pipe, time set) of the cross-core flags the op waited for
    task: int = 0  # the task (outer loop iteration) the op belongs to, where the kernel numbers them (Engine.task)


@dataclass(frozen=True)
class Gap:
    """A stretch of a run that no op of its timeline shows, in cycles from the kernel start: the extrapolated
    steady state of loops simulated for a few iterations, the repeats of a part the timeline shows once, HBM
    contention of concurrent copies. `hbm_rate` and `l2_rate`: what HBM and L2 serve over it (bytes per cycle,
    as the servers count them, Engine._transfer); None: the mean of the stretch `like` (start, end) before it,
    whose pattern it repeats."""

    start: float
    end: float
    label: str
    hbm_rate: float | None = None
    l2_rate: float | None = None
    like: tuple[float, float] | None = None

    def shifted(self, by: float) -> Gap:
        like = None if self.like is None else (self.like[0] + by, self.like[1] + by)
        return Gap(self.start + by, self.end + by, self.label, self.hbm_rate, self.l2_rate, like)


class _RebuiltOps(Sequence):
    """The ops of a run whose measurements came from a RunCache: the program is built and run again (same
    program, same ops and times) the first time the timeline is needed, as only traces read it."""

    def __init__(self, rebuild: Callable[[], list]):
        self._rebuild: Callable[[], list] | None = rebuild
        self._ops: list | None = None

    def _get(self) -> list:
        if self._ops is None:
            self._ops = self._rebuild()
            self._rebuild = None
        return self._ops

    def __len__(self) -> int:
        return len(self._get())

    def __getitem__(self, i):
        return self._get()[i]

    def __iter__(self) -> Iterator:
        return iter(self._get())


class RunCache:
    """What simulate_2d measured for truncated programs, by a key that describes the program completely
    (least recently used entries are dropped beyond `maxsize`). Shapes of a workload often share truncated
    programs (the same per-core task counts, tiles and L2 hit shares), so most runs of a workload are
    looked up instead of simulated. Entries hold numbers only (a few kB), no ops. Thread-safe."""

    def __init__(self, maxsize: int = 4096):
        self.maxsize = maxsize
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable):
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
            else:
                self.hits += 1
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Hashable, entry) -> None:
        with self._lock:
            self._entries[key] = entry
            if len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class SimResult:
    """What the simulated machine reports for one kernel run.

    time_cycles: makespan in cycles of the AI-core clock; phases: cycles per phase name (summed over
    repetitions such as L2 chunks), adding up to time_cycles (see `partition`); busy: cycles each (unit, pipe) was occupied; counters: exact counts
    (bytes per level, matmuls, cube fractals, vector instructions/repeats, syncs); timeline: the spans of
    the ops actually simulated (for long runs, the simulated iterations only: see `extrapolated`).
    """

    hw: HardwareProfile
    time_cycles: float
    phases: dict[str, float]
    busy: dict[tuple[str, str], float]
    counters: dict[str, float]
    segments: list[tuple[list, float]] = field(default_factory=list, repr=False)
    extrapolated: bool = False
    hbm_busy_cycles: float = 0.0
    unit_weights: dict[str, int] = field(default_factory=dict)
    l2_end: L2Cache | None = field(default=None, repr=False, compare=False)
    # The run cut into consecutive (phase, start, end) intervals in cycles (`intervals`); None: the phases laid
    # end to end in their order.
    phase_intervals: list[tuple[str, float, float]] | None = field(default=None, repr=False, compare=False)
    # The stretches of the run the timeline's ops do not show (Gap), in time order.
    gaps: list[Gap] = field(default_factory=list, repr=False, compare=False)

    @property
    def intervals(self) -> list[tuple[str, float, float]]:
        """The whole run as consecutive (phase, start, end) intervals in cycles, adding up to time_cycles."""
        return self.phase_intervals if self.phase_intervals is not None else _layout(self.phases)

    @property
    def timeline(self) -> list[Span]:
        """Spans of the simulated ops (built on demand: only traces need them)."""
        return [
            Span(o.unit, pipe, label, o.phase, start + offset, end + offset, release + offset,
                 o.hbm_bytes, o.l2_bytes,
                 tuple((d[0].unit, d[0].pipe, d[0].end + offset) for d in o.deps
                       if d.__class__ is not Op and len(d) == 3), o.task)
            for ops, offset in self.segments
            for o in ops
            for pipe, label, start, release, end in o.spans()
        ]

    @property
    def time_s(self) -> float:
        return self.time_cycles / self.hw.clock_hz

    def phase_s(self, name: str) -> float:
        """Seconds spent in phase `name` (0 if absent)."""
        return self.phases.get(name, 0.0) / self.hw.clock_hz

    @property
    def phases_s(self) -> dict[str, float]:
        """Seconds per phase (`phases` holds cycles)."""
        return {k: v / self.hw.clock_hz for k, v in self.phases.items()}

    def utilisation(self) -> dict[str, dict[str, float]]:
        """Mean busy fraction per unit kind ('aic', 'aiv') and pipe, over the units that ran anything."""
        if self.time_cycles <= 0:
            return {}
        units: dict[str, float] = {}
        for unit, weight in self.unit_weights.items():
            units[unit_kind(unit)] = units.get(unit_kind(unit), 0) + weight
        sums: dict[tuple[str, str], float] = {}
        for (unit, pipe), cycles in self.busy.items():
            key = (unit_kind(unit), pipe)
            sums[key] = sums.get(key, 0.0) + cycles * self.unit_weights.get(unit, 1)
        out: dict[str, dict[str, float]] = {}
        for (kind, pipe), cycles in sorted(sums.items()):
            out.setdefault(kind, {})[pipe] = cycles / (units[kind] * self.time_cycles)
        return out


def sequence(parts: list[tuple[SimResult, int]]) -> SimResult:
    """Results run one after another, each repeated `count` times: times, phases, busy and counters add.
    The timeline keeps one instance of each part, placed at its first start time."""
    parts = [(r, c) for r, c in parts if c > 0]
    hw = parts[0][0].hw
    total = 0.0
    phases: Counter[str] = Counter()
    busy: Counter[tuple[str, str]] = Counter()
    counters: Counter[str] = Counter()
    segments: list[tuple[list, float]] = []
    spans: list[tuple[str, float, float]] = []
    hbm = 0.0
    extrapolated = False
    weights: dict[str, int] = {}
    gaps: list[Gap] = []
    for res, count in parts:
        for u, w in res.unit_weights.items():
            weights[u] = max(weights.get(u, 0), w)
        segments.extend((ops, offset + total) for ops, offset in res.segments)
        gaps.extend(g.shifted(total) for g in res.gaps)
        if count > 1 and res.segments:  # the timeline shows the first run of the part only
            gaps.append(Gap(total + res.time_cycles, total + count * res.time_cycles,
                            f"{count - 1:,} more runs of the part before", like=(total, total + res.time_cycles)))
        part = res.intervals
        if count <= _REPEATS_SHOWN:
            for r in range(count):
                at = total + r * res.time_cycles
                spans.extend((name, at + a, at + b) for name, a, b in part)
        else:  # many repeats: the first shown, the rest as one interval
            spans.extend((name, total + a, total + b) for name, a, b in part)
            name = part[-1][0] if len(part) == 1 else "repeats"
            spans.append((f"{name} x{count - 1}", total + res.time_cycles, total + count * res.time_cycles))
        total += res.time_cycles * count
        hbm += res.hbm_busy_cycles * count
        for k, v in res.phases.items():
            phases[k] += v * count
        for k, v in res.busy.items():
            busy[k] += v * count
        for k, v in res.counters.items():
            counters[k] += v * count
        extrapolated = extrapolated or res.extrapolated or count > 1
    l2_end = next((r.l2_end for r, _ in reversed(parts) if r.l2_end is not None), None)
    return SimResult(hw, total, dict(phases), dict(busy), dict(counters), segments, extrapolated, hbm, weights,
                     l2_end, spans, gaps)


_REPEATS_SHOWN = 64  # sequence(): repeats of a part laid out one by one in `intervals`, beyond which they are merged


def _run(hw: HardwareProfile, warm_l2: bool, build: Callable[[Engine, int], None], skip: int, cache, key,
         group: bool = True, l2: L2Cache | None = None):
    if cache is not None and key is not None and key in cache:
        return cache[key]
    engine = Engine(hw, warm_l2=warm_l2, group_cores=group, l2=l2.clone() if l2 is not None else None)
    with gc_paused():
        build(engine, skip)
        stats = engine.run()
    out = (engine, stats, partition(stats.phases, stats.makespan))
    if cache is not None and key is not None:
        cache[key] = out
    return out


def simulate(
    hw: HardwareProfile,
    build: Callable[[Engine, int], None],
    iterations: int,
    *,
    warm_l2: bool = False,
    keep: tuple[int, int] = (16, 24),
    exact_limit: int = 40,
    force_exact: bool = False,
    cache: dict | None = None,
    cache_key: Callable[[int], object] | None = None,
    l2: L2Cache | None = None,
    group_cores: bool = True,
) -> SimResult:
    """Simulate a program whose cores run a regular loop of `iterations` tiles each.

    `build(engine, skip)` emits the program with `skip` regular iterations removed from every core's loops
    (keeping at least three per loop) and adds their counters with `engine.add_counters`, so counters stay
    exact. Up to
    `exact_limit` iterations the whole program runs; force_exact also simulates every core instead of one
    representative per group of identical cores (Engine.set_weight). Beyond that, two truncated programs
    keeping `keep[0]` and `keep[1]` iterations are simulated and every time-like quantity (and what L2 and
    HBM served, DYNAMIC_COUNTERS) is extended linearly by the per-iteration steady-state increment:
    T(N) = T(k2) + (N - k2) * (T(k2) - T(k1)) / (k2 - k1),
    never below the extrapolated busy time of the busiest pipe, of HBM or of L2. A test checks that this agrees with
    the exact simulation within 1% on sizes that can run exactly.

    `l2`: what L2 holds when the program starts (copied; None: empty); the result's `l2_end` is what it holds
    at the end (of the larger truncated run when extrapolated). group_cores=False simulates every core in
    the truncated runs too. `cache` with `cache_key(skip)` (a hashable
    description of the truncated program and of the starting L2) lets calls whose truncated programs
    coincide share the simulated runs; the counters then come from a build that is not run.
    """
    key = (lambda skip: None) if cache_key is None else cache_key
    if force_exact or iterations <= exact_limit:
        engine, stats, phases = _run(hw, warm_l2, build, 0, cache, key(0), group=group_cores and not force_exact,
                                     l2=l2)
        counters = _count_only(hw, warm_l2, build, iterations) | stats.dynamic
        return _to_result(hw, engine, stats, phases, False, counters)
    k1, k2 = keep
    skip1, skip2 = iterations - k1, iterations - k2
    _, s1, p1 = _run(hw, warm_l2, build, skip1, cache, key(skip1), group=group_cores, l2=l2)
    engine, s2, p2 = _run(hw, warm_l2, build, skip2, cache, key(skip2), group=group_cores, l2=l2)
    static = _count_only(hw, warm_l2, build, iterations)
    return _extended(hw, engine, (s1, p1), (s2, p2), skip2 / (skip1 - skip2), static, bounded=True,
                     label=f"extrapolated steady state ({skip2:,} more iterations per loop)")


def simulate_scaled(
    hw: HardwareProfile,
    build: Callable[[Engine, int], None],
    units: int,
    count: Callable[[Engine], None],
    *,
    keep: tuple[int, int] = (16, 24),
    exact_limit: int = 40,
    force_exact: bool = False,
    l2: L2Cache | None = None,
    window: float = 0.0,
    group_cores: bool = True,
    steady: float = 0.0,
) -> SimResult:
    """Simulate a streaming kernel of `units` regular steps (tiles per core of its longest loop) by running
    smaller instances of the same problem and extrapolating.

    `build(engine, u)` emits the whole program of the problem scaled to u steps (every loop of every core
    shrinks in proportion, so cores still meet the same data at the same relative times). Up to
    `exact_limit` steps (or with force_exact) the real problem runs. Otherwise the problem is run at
    keep[0] and keep[1] steps, each with an L2 scaled by the same factor u / units (its contents and dirty
    share included), so that what is reused and what is evicted stays as in the full problem, but never
    smaller than `window` bytes (what the cores have in flight at once: a reuse a few steps apart must still
    hit); every time-like quantity and what L2 and HBM served (DYNAMIC_COUNTERS) is then extended linearly to
    `units` steps, as in `simulate`. Instances that are not self-similar (`dissimilarity`: the makespan does
    not grow, or a phase shrinks) are replaced by twice as large ones, twice at most, or by the exact run when
    that is at most twice as large again; if they still are not, the result's gap label says why.

    steady > 0: a steady-state check where it costs fewer steps than the exact run (a problem of more steps than
    the three instances of the check and at most twice as many runs exactly). The next instance (about
    1.5 times the larger, of the same parity: _next_keep) is run and the two latest pairs of instances
    extrapolated; when the two makespans differ by more than the share `steady`, the instances were not yet in
    the steady state and the pair moves up one instance, until the instances run would add up to the problem's
    steps (then the exact run takes their place) or the next would exceed _MAX_KEEP steps (then the gap label
    says the check failed).
    `count(engine)` builds the full program for its exact static counters (with loops truncated by
    kernels.programs.loop) without running it.

    `l2`: what L2 holds at the start (at any scale: L2Cache.rescaled); the result's `l2_end` is what the
    larger run's L2 held at the end, at its scale. group_cores=False simulates every core (Engine).
    """
    state = l2 if l2 is not None else L2Cache(hw.l2_cache_bytes)
    # Instances big enough that their L2 needs no floor (a floor breaks the self-similarity: the capacity's
    # share of the traffic would not scale), within reason.
    full = state.capacity / state.scale  # the capacity at full scale
    least = math.ceil(units * window / full) if window else 0
    if least > keep[0]:
        keep = (min(least, _MAX_KEEP), min(least, _MAX_KEEP) * keep[1] // keep[0])
    # The result's timeline is rebuilt (the same program from the same L2 state: the same ops and times) when
    # it is first read, as only traces read it: ops kept alive past the call cost a collection of all of
    # them by Python's garbage collector, about a tenth of the model's time.
    # With the steady-state check (below), a problem of up to twice the three instances' steps runs exactly: the
    # check would save at most half of it, and when it fails the exact run comes on top.
    three = keep[0] + keep[1] + _next_keep(keep[1])
    if force_exact or units <= max(exact_limit, keep[1]) or (steady and three < units <= 2 * three):
        group = group_cores and not force_exact
        start = state.rescaled(1.0) if state.scale != 1.0 else state
        engine, stats, phases = _run(hw, False, build_at(build, units), 0, None, None, group=group, l2=start)
        counters = _count_static(hw, count) | stats.dynamic
        ops = _RebuiltOps(lambda: _run(hw, False, build_at(build, units), 0, None, None, group=group,
                                       l2=start)[0].ops)
        return _to_result(hw, engine, stats, phases, False, counters, ops=ops)

    def instance(k: int) -> tuple:
        """(k, its starting L2, engine, stats, phase partition) of the problem scaled to k steps."""
        scale = min(1.0, max(k / units, window / full))
        start = state.rescaled(scale) if scale != state.scale else state  # _run copies it
        return (k, start, *_run(hw, False, build_at(build, k), 0, None, None, group=group_cores, l2=start))

    for retry in range(_RETRIES + 1):
        runs = [instance(k) for k in keep]
        (k1, _, _, s1, p1), (k2, start, engine, s2, p2) = runs
        issue = dissimilarity((s1, p1), (s2, p2), (units - k2) / (k2 - k1))
        # Instances that are not self-similar (not yet in the steady state, or on either side of a cliff) are
        # replaced by twice as large ones (_RETRIES times at most), or by the exact run when that is at most
        # twice their size again; otherwise the result's gap says so.
        if issue is None or retry == _RETRIES or 2 * keep[1] > _MAX_KEEP:
            break
        keep = (2 * keep[0] + keep[0] % 2, 2 * keep[1] + keep[1] % 2)  # of the same parity (_next_keep)
        if units <= 2 * keep[1]:
            return simulate_scaled(hw, build, units, count, keep=keep, exact_limit=units, l2=l2, window=window,
                                   group_cores=group_cores)
    # The steady-state check, where the three instances cost fewer steps than the exact run: a third instance
    # half as large again as the larger one. Where the two pairs' extrapolations differ by more than `steady`,
    # the instances were not yet in the steady state: the pair moves up one instance, or when that instance and
    # those run so far add up to the problem's steps, the exact run takes their place.
    spent = sum(keep)
    if steady and issue is None and spent + _next_keep(k2) < units:
        before = after = _line(s1, s2, k1, k2, units)
        while True:
            k3 = _next_keep(k2)
            if spent + k3 >= units:
                return simulate_scaled(hw, build, units, count, keep=(k1, k2), exact_limit=units, l2=l2,
                                       window=window, group_cores=group_cores)
            if k3 > _MAX_KEEP:
                issue = (f"not yet in the steady state (the last two pairs extrapolate to {before:,.0f} and "
                         f"{after:,.0f} cycles)")
                break
            spent += k3
            _, start3, engine3, s3, p3 = instance(k3)
            before, after = after, _line(s2, s3, k2, k3, units)  # the previous pair's line, and the new pair's
            k1, s1, p1, k2, start, engine, s2, p2 = k2, s2, p2, k3, start3, engine3, s3, p3
            if abs(after - before) <= steady * abs(after):
                break
    ops = _RebuiltOps(lambda: _run(hw, False, build_at(build, k2), 0, None, None, group=group_cores,
                                   l2=start)[0].ops)
    # Self-similar instances (dissimilarity): the makespan extends linearly like the rest. (No HBM bound: the
    # write-backs of dirty lines that allocations evict may still be queued when the kernel's last op ends.)
    return _extended(hw, engine, (s1, p1), (s2, p2), (units - k2) / (k2 - k1), _count_static(hw, count),
                     bounded=False, label=f"extrapolated steady state ({units:,} steps, {k2:,} simulated"
                     + (f"; the instances are not self-similar: {issue})" if issue else ")"), ops=ops)


def _line(s1: RunStats, s2: RunStats, k1: int, k2: int, units: int) -> float:
    """The makespan at `units` steps on the line through two instances' makespans at k1 and k2 steps."""
    return s2.makespan + (units - k2) * (s2.makespan - s1.makespan) / (k2 - k1)


def _next_keep(k: int) -> int:
    """The next instance of simulate_scaled's steady-state check: about 1.5 k steps, of the parity of k (the
    multi-core scans' instances keep the parity of their tiles per block: kernels.scan ScanKernel._chunk)."""
    return k + k // 2 + (k // 2) % 2


def dissimilarity(run1: tuple, run2: tuple, factor: float) -> str | None:
    """Why two scaled instances (stats, phase partition) of one problem, extended by `factor` times their
    difference as in simulate_scaled, are not self-similar: the makespan does not grow, or a phase that takes
    time in both shrinks (its increment per step is negative); None when neither happens. Instances that
    find different things resident (what L2 holds at the start not in proportion) show it: a phase then
    extrapolates to nothing while the exact run spends time in it."""
    (s1, p1), (s2, p2) = run1, run2
    if s2.makespan <= s1.makespan:
        return f"the makespan does not grow ({s1.makespan:,.0f} -> {s2.makespan:,.0f} cycles)"
    for name, v2 in p2.items():
        v1 = p1.get(name, 0.0)
        if v1 > 0.0 and v2 > 0.0 and v2 < v1 * (1.0 - _SHRINK):
            return (f"phase {name!r} shrinks ({v1:,.0f} -> {v2:,.0f} cycles; extrapolated "
                    f"{v2 + factor * (v2 - v1):,.0f})")
    return None


_SHRINK = 0.01  # dissimilarity: a phase shrinking by more than this share is not noise


def _extended(hw: HardwareProfile, engine: Engine, run1: tuple, run2: tuple, factor: float,
              static: dict[str, float], bounded: bool, label: str, ops: Sequence | None = None) -> SimResult:
    """The result of a program extended from two truncated runs (stats, phase partition): every time-like
    quantity and the dynamic counters grow by `factor` times their difference, T = T2 + factor (T2 - T1); the
    makespan is at least the busiest pipe's time, and, when `bounded`, HBM's and L2's time too. `static`: the
    full program's exact static counters; `ops`: the timeline's ops (None: the engine's)."""
    (s1, p1), (s2, p2) = run1, run2

    def extend(a2: float, a1: float) -> float:
        return a2 + factor * (a2 - a1)

    busy = {k: extend(v, s1.busy.get(k, 0.0)) for k, v in s2.busy.items()}
    hbm = extend(s2.hbm_busy, s1.hbm_busy)
    dynamic = {k: max(extend(s2.dynamic.get(k, 0.0), s1.dynamic.get(k, 0.0)), 0.0) for k in DYNAMIC_COUNTERS}
    counters = static | dynamic
    makespan = max(extend(s2.makespan, s1.makespan), max(busy.values(), default=0.0))
    l2 = extend(s2.l2_busy, s1.l2_busy)
    if bounded:
        makespan = max(makespan, hbm, l2, _hbm_bound(hw, counters))
    stats = RunStats(makespan, s2.phases, busy, hbm, s2.l2_busy, s2.unit_weights, dynamic)
    phases = _settle({k: extend(v, p1.get(k, 0.0)) for k, v in p2.items()}, makespan)
    gap = _steady_gap(hw, s2.makespan, makespan, hbm - s2.hbm_busy, l2 - s2.l2_busy, label)
    return _to_result(hw, engine, stats, phases, True, counters, gap, ops)


def _steady_gap(hw: HardwareProfile, shown: float, makespan: float, hbm_cycles: float, l2_cycles: float,
                label: str) -> list[Gap]:
    """The stretch after the simulated ops' end `shown` up to the extrapolated `makespan`, with what HBM and L2
    serve over it: the server time the extrapolation adds (cycles) at the servers' rates, spread over it."""
    if makespan <= shown:
        return []
    width = makespan - shown
    return [Gap(shown, makespan, label, hw.hbm_bytes_per_cycle * max(hbm_cycles, 0.0) / width,
                hw.l2_bytes_per_cycle * max(l2_cycles, 0.0) / width)]


_MAX_KEEP = 400  # simulate_scaled: the largest instance it runs to keep its L2 from needing a floor
_RETRIES = 2  # simulate_scaled: how often instances that are not self-similar are replaced by twice as large ones


def build_at(build: Callable[[Engine, int], None], units: int) -> Callable[[Engine, int], None]:
    """build(engine, units) as a builder of the simulate() form build(engine, skip) with nothing skipped."""
    return lambda engine, _skip: build(engine, units)


def _count_static(hw: HardwareProfile, count: Callable[[Engine], None], warm_l2: bool = False) -> dict[str, float]:
    """The static counters `count(engine)` adds to a fresh engine (built, not run)."""
    engine = Engine(hw, warm_l2=warm_l2)
    with gc_paused():
        count(engine)
    engine.unlink()
    return dict(engine.counters)


def _hbm_bound(hw: HardwareProfile, counters: dict[str, float]) -> float:
    """Cycles HBM needs at least for the bytes the counters say it moves."""
    return (counters.get("bytes_hbm_read", 0.0) + counters.get("bytes_hbm_write", 0.0)) / hw.hbm_bytes_per_cycle


def _count_only(hw, warm_l2, build, iterations: int) -> dict[str, float]:
    """Exact static counters of the full program, from the smallest truncated build (not run)."""
    return _count_static(hw, lambda engine: build(engine, iterations), warm_l2)


def _to_result(hw, engine: Engine, stats, phases, extrapolated: bool, counters: dict[str, float],
               gaps: list[Gap] | None = None, ops: Sequence | None = None) -> SimResult:
    # an extrapolated run has no timeline of its own: its phases are laid end to end in their order
    spans = _layout(phases) if extrapolated else intervals(stats.phases, stats.makespan)
    return SimResult(hw, stats.makespan, phases, dict(stats.busy), counters,
                     [(engine.ops if ops is None else ops, 0.0)], extrapolated,
                     stats.hbm_busy, dict(stats.unit_weights), engine.cache, spans, gaps or [])


def fixed_cost(hw: HardwareProfile, cycles: float, phase: str, **counters: float) -> SimResult:
    """A fixed cost with no ops (kernel launch, a SyncAll between two programs)."""
    return SimResult(hw, cycles, {phase: cycles}, {}, dict(counters), [], False, 0.0)


def simulate_2d(
    hw: HardwareProfile,
    build: Callable[[Engine, int, int], None],
    tasks: int,
    blocks: int,
    *,
    warm_l2: bool = False,
    keep_tasks: tuple[int, int] = (2, 4),
    keep_blocks: tuple[int, int] = (2, 4),
    force_exact: bool = False,
    every_core: bool = False,
    prefix: bool = False,
    cache: RunCache | None = None,
    cache_key: Callable[[int, int], Hashable | None] | None = None,
) -> SimResult:
    """Simulate a program of two nested regular loops: `tasks` per core, each of `blocks` inner iterations.

    `build(engine, skip_tasks, kept_blocks)` emits the program with `skip_tasks` tasks removed from every
    core and `kept_blocks` inner iterations per task. Where a loop is longer than the larger kept count, the
    time-like quantities are fitted with T(t, k) = a + b t + c k + d t k on the 2 x 2 grid of kept counts
    (a periodic steady state in both loops) and evaluated at the full counts; a test compares this with the
    full simulation. Counters are fitted the same way (exact for uniform tasks). force_exact runs every
    iteration; every_core also simulates every core instead of one representative per group.

    prefix: the smaller task count t1 is not run on its own but read from the larger run t2 (needs
    t2 - 2 > t1; `build` sets engine.task to each op's task index, numbered so that every core's last task
    has the same number): busy time, HBM time and counters of the ops of its first t1 tasks
    and a makespan stepped back from the run's end by the period measured between the ends of tasks t1
    and t2 - 2 (sim.engine.prefix_stats). It saves a third of the simulated
    ops; a test compares it with the full simulation.

    cache with cache_key(skip_tasks, kept_blocks): a hashable description of everything `build` emits for
    those arguments (None: do not cache), with which runs measured before (in this call or an earlier one)
    are looked up instead of simulated; the result is the same either way. The timeline is rebuilt (the last
    run built and run again) when it is first read.
    """
    if force_exact:
        keep_tasks, keep_blocks = (tasks, tasks), (blocks, blocks)
    ts = sorted({min(tasks, keep_tasks[0]), min(tasks, keep_tasks[1])}) if tasks > keep_tasks[1] else [tasks]
    ks = sorted({min(blocks, keep_blocks[0]), min(blocks, keep_blocks[1])}) if blocks > keep_blocks[1] else [blocks]
    from_prefix = prefix and len(ts) == 2 and ts[1] - 2 > ts[0]

    def run(t: int, k: int) -> tuple[Engine, dict]:
        """Build and run the program keeping t tasks and k blocks: its measurements, by (tasks, blocks)."""
        engine = Engine(hw, warm_l2=warm_l2, group_cores=not every_core)
        if from_prefix:
            engine.prefix_tasks = ts[0]
        with gc_paused():
            build(engine, tasks - t, k)
            stats = engine.run()
        out = {(t, k): (stats, partition(stats.phases, stats.makespan), dict(engine.counters) | stats.dynamic)}
        if from_prefix:
            t1, t2 = ts
            first, counters, end_b = prefix_stats(engine, t1, t2 - 2)
            # Work adds up task by task, so busy time, HBM time and counters are read off the first t1
            # tasks. Ends differ: a task inside the run is held back by its successors' transfers, and
            # near the end cores with fewer tasks finish and leave the others more bandwidth. The period
            # of a task is measured between the ends of tasks t1 and t2 - 2, which both still run
            # among successors on every core, and the run's end is stepped back by it.
            period = (end_b - first.makespan) / (t2 - 2 - t1)
            first.makespan = stats.makespan - (t2 - t1) * period
            # a phase's span steps back by the same period where its ops run in every task
            spans = {p: (lo, hi - ((t2 - t1) * period if p in first.phases else 0.0))
                     for p, (lo, hi) in stats.phases.items()}
            out[(t1, k)] = (first, partition(spans, first.makespan), counters)
        return engine, out

    runs: dict = {}
    ops: Sequence = []
    for t in ts[1:] if from_prefix else ts:
        for k in ks:
            key = None
            if cache is not None and cache_key is not None:
                program = cache_key(tasks - t, k)
                if program is not None:
                    # the program's description plus what simulate_2d itself sets on the engine
                    key = (program, hw, warm_l2, every_core, t, k, ts[0] if from_prefix else None)
            measured = cache.get(key) if key is not None else None
            if measured is None:
                measured = run(t, k)[1]
                if key is not None:
                    cache.put(key, measured)
            # The run's ops are freed here, before the garbage collector runs again (it would scan them all:
            # a sixth of a cold HGEMM shape); only traces read them, and they build and run the program again.
            ops = _RebuiltOps(lambda t=t, k=k: run(t, k)[0].ops)
            runs.update(measured)

    t1, t2, k1, k2 = ts[0], ts[-1], ks[0], ks[-1]
    # the four runs of the 2 x 2 grid (the same run where a loop is not truncated)
    r11, r21, r12, r22 = runs[(t1, k1)], runs[(t2, k1)], runs[(t1, k2)], runs[(t2, k2)]
    both, by_t, by_k = t2 > t1 and k2 > k1, t2 > t1, k2 > k1

    def fit4(v11: float, v21: float, v12: float, v22: float) -> float:
        d = (v22 - v21 - v12 + v11) / ((t2 - t1) * (k2 - k1)) if both else 0.0
        bt = (v21 - v11) / (t2 - t1) - d * k1 if by_t else 0.0
        ck = (v12 - v11) / (k2 - k1) - d * t1 if by_k else 0.0
        a = v11 - bt * t1 - ck * k1 - d * t1 * k1
        return a + bt * tasks + ck * blocks + d * tasks * blocks

    def fit_in(item: int, name) -> float:  # the fit of one entry of a dict of the runs' measurements
        return fit4(r11[item].get(name, 0.0), r21[item].get(name, 0.0), r12[item].get(name, 0.0),
                    r22[item].get(name, 0.0))

    s11, s21, s12, s22 = r11[0], r21[0], r12[0], r22[0]
    last_stats, _, last_counters = r22
    hbm = fit4(s11.hbm_busy, s21.hbm_busy, s12.hbm_busy, s22.hbm_busy)
    busy = {u: fit4(s11.busy.get(u, 0.0), s21.busy.get(u, 0.0), s12.busy.get(u, 0.0), s22.busy.get(u, 0.0))
            for u in last_stats.busy}
    l2_busy = fit4(s11.l2_busy, s21.l2_busy, s12.l2_busy, s22.l2_busy)
    # Busy time adds up op by op, so its fit is reliable; no run ends before its busiest pipe (or HBM, or L2) is
    # done, which bounds the makespan's fit from below when the truncated runs have not reached the steady state.
    makespan = max(fit4(s11.makespan, s21.makespan, s12.makespan, s22.makespan),
                   max(busy.values(), default=0.0), hbm, l2_busy)
    # Counters are exactly bilinear in (tasks, blocks) for the program's uniform tasks (the dynamic ones, what
    # L2 and HBM served, are fitted the same way).
    counters = {c: round(fit_in(2, c), 3) for c in last_counters}
    for c in DYNAMIC_COUNTERS:
        counters[c] = max(counters.get(c, 0.0), 0.0)
    makespan = max(makespan, _hbm_bound(hw, counters))
    phases = _settle({p: fit_in(1, p) for p in r22[1]}, makespan)
    extrapolated = len(ts) > 1 or len(ks) > 1
    gaps = _steady_gap(hw, last_stats.makespan, makespan, hbm - last_stats.hbm_busy,
                       l2_busy - last_stats.l2_busy,
                       f"extrapolated steady state ({tasks:,} tasks x {blocks:,} blocks per core, {ts[-1]:,} x "
                       f"{ks[-1]:,} simulated)") if extrapolated else []
    return SimResult(hw, makespan, phases, busy, counters, [(ops, 0.0)], extrapolated, hbm,
                     dict(last_stats.unit_weights), gaps=gaps)
