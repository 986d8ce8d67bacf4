"""Chrome trace event format export of a simulated run (viewable in Perfetto or chrome://tracing).

The trace shows the whole run: a "run" process with the phases laid end to end (they add up to the simulated
time) and counter tracks of the HBM and L2 bandwidth in use; one process per AI core with one track per unit
and pipe holding the ops while they hold the pipe ("aiv0 MTE2"), and tracks for the time their results are
still in flight after that ("aiv0 MTE2 in flight", one sub-track per overlapping op, so that slices on a track
never overlap without nesting, Perfetto's rule); SyncAll barriers on the run's "SyncAll" track; cross-core
flags as flow arrows from the op that sets them to the op that waits. A unit simulated once for a group of
identical units says on its tracks how many it stands for. Each op's slice carries its cycles, the bytes HBM
and L2 served for it and its iteration (args).

Stretches of the run that no simulated op shows (the extrapolated steady state of long loops, repeats of a part
shown once: SimResult.gaps) are one slice on every track, so the trace ends at the simulated time. The
counters count bytes when HBM and L2 serve them (the engine's first-come-first-served servers, replayed), and
over such a stretch the rates of the extrapolation, so no bin exceeds the servers' rates.

Times are whole nanoseconds: every slice's start and end is the run's time rounded to the nanosecond, and its
duration their difference, written in microseconds with three decimals. Perfetto's JSON importer reads `ts` and
`dur` as microseconds and rounds each to the nanosecond (json_trace_tokenizer.cc, CoerceToTs: llround(v * 1000)),
so it gets exactly these integers; it ignores `displayTimeUnit` (older versions read timestamps as nanoseconds
when it said "ns"), so the trace does not set it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from ascendbench.sim.result import SimResult

__all__ = ["chrome_trace", "write_chrome_trace"]

_PIPE_ORDER = {"MTE2": 0, "MTE1": 1, "CUBE": 2, "FIXPIPE": 3, "VECTOR": 4, "MTE3": 5, "SCALAR": 6}
_RUN_PID = 1000  # the "run" process: phases, SyncAll, bandwidth counters
_COUNTER_BINS = 400
_ARGS_NOTE = ("slice args: cycles held (the pipe), latency cycles (until the result is ready), HBM bytes and L2 "
              "bytes served for the op (of every unit its unit stands for), iteration (the op's count among the "
              "ops of its label on its pipe, from 0: the tile or row index of a loop that issues it once per "
              "tile or row), task (where the kernel numbers its tasks)")


def _unit_rank(unit: str) -> int:
    name = unit.partition(".")[2]
    if name == "aic":
        return 0
    if name.startswith("aiv") and name[3:].isdigit():
        return 1 + int(name[3:])
    return 9


def _us(ns: int) -> float:
    """Whole nanoseconds as the microseconds a trace file holds (three decimals, read back exactly)."""
    return ns / 1000


def _inside(start: int, end: int) -> int:
    """An instant of the slice [start, end] (ns) at which Perfetto binds a flow to it: strictly inside when it
    lasts 2 ns or more."""
    return start + (end - start) // 2


def chrome_trace(result: SimResult, name: str = "kernel") -> dict:
    """The simulated run as a Chrome trace document; see the module docstring."""
    ns_per_cycle = 1e9 / result.hw.clock_hz

    def ns(cycles: float) -> int:
        return round(cycles * ns_per_cycle)

    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": _RUN_PID, "args": {"name": f"{name} (whole run)"}},
        {"ph": "M", "name": "process_sort_index", "pid": _RUN_PID, "args": {"sort_index": -1}},
        {"ph": "M", "name": "thread_name", "pid": _RUN_PID, "tid": 0, "args": {"name": "phases"}},
        {"ph": "M", "name": "thread_name", "pid": _RUN_PID, "tid": 1, "args": {"name": "SyncAll"}},
    ]

    def slice_(label: str, cat: str, pid: int, tid: int, a: int, b: int, args: dict | None = None) -> None:
        event = {"ph": "X", "name": label, "cat": cat, "pid": pid, "tid": tid, "ts": _us(a), "dur": _us(b - a)}
        if args:
            event["args"] = args
        events.append(event)

    for phase, a, b in result.intervals:
        slice_(phase, "phase", _RUN_PID, 0, ns(a), ns(b))
    pids: dict[str, int] = {}
    tids: dict[tuple[str, str], int] = {}
    tracks: set[tuple[int, int]] = set()
    lanes: dict[tuple[str, str], list[int]] = {}  # in-flight sub-tracks: when each is free again (ns)
    weights = result.unit_weights
    spans = result.timeline
    tasks = any(s.task for s in spans)
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    last_slice: dict[tuple[str, str, float], tuple[int, int, int, int]] = {}  # op's end -> its last slice
    flows: list[tuple[tuple, tuple]] = []
    for span in spans:
        if span.unit == "chip":
            if span.pipe == "SYNC":
                slice_(span.label, span.phase, _RUN_PID, 1, ns(span.start), ns(max(span.end, span.start)))
                tracks.add((_RUN_PID, 1))
            continue
        core, _, unit = span.unit.partition(".")
        if core not in pids:
            pids[core] = int(core[4:]) if core.startswith("core") and core[4:].isdigit() else 999
            events.append({"ph": "M", "name": "process_name", "pid": pids[core], "args": {"name": core}})
        pid = pids[core]
        key = (span.unit, span.pipe)
        stands = weights.get(span.unit, 1)
        for_others = f" (stands for {stands} {unit.rstrip('0123456789').upper()}s)" if stands > 1 else ""
        if key not in tids:
            tids[key] = _unit_rank(span.unit) * 100 + _PIPE_ORDER.get(span.pipe, 9) * 10
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key],
                           "args": {"name": f"{unit} {span.pipe}{for_others}"}})
        tid = tids[key]
        start, release, end = ns(span.start), ns(max(span.release, span.start)), ns(max(span.end, span.start))
        args: dict = {"cycles held": round(span.release - span.start, 3)}
        if span.end > span.release:
            args["latency cycles"] = round(span.end - span.release, 3)
        if span.hbm_bytes:
            args["HBM bytes"] = round(span.hbm_bytes)
        if span.l2_bytes:
            args["L2 bytes"] = round(span.l2_bytes)
        args["iteration"] = seen[(span.unit, span.pipe, span.label)]
        seen[(span.unit, span.pipe, span.label)] += 1
        if tasks:
            args["task"] = span.task
        if stands > 1:
            args["stands for"] = stands
        slice_(span.label, span.phase, pid, tid, start, release, args)
        tracks.add((pid, tid))
        last = (pid, tid, start, release)
        if end > release:
            free = lanes.setdefault(key, [])
            lane = next((i for i, t in enumerate(free) if t <= release), None)
            if lane is None:
                lane = len(free)
                free.append(0)
                events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + 1 + lane,
                               "args": {"name": f"{unit} {span.pipe} in flight" + (f" {lane + 1}" if lane else "")
                                        + for_others}})
            free[lane] = end
            slice_(f"{span.label} (in flight)", span.phase, pid, tid + 1 + lane, release, end,
                   {k: args[k] for k in ("latency cycles", "iteration", "stands for") if k in args})
            tracks.add((pid, tid + 1 + lane))
            last = (pid, tid + 1 + lane, release, end)
        last_slice[(span.unit, span.pipe, span.end)] = last
        for source in span.flags_from:
            if source in last_slice:
                flows.append((last_slice[source], (pid, tid, start, release)))
    for gap in result.gaps:  # on every track: no op runs there
        if ns(gap.end) > ns(gap.start):
            for pid, tid in sorted(tracks | {(_RUN_PID, 2)}):
                slice_(gap.label, "extrapolated", pid, tid, ns(gap.start), ns(gap.end))
    if result.gaps:
        events.append({"ph": "M", "name": "thread_name", "pid": _RUN_PID, "tid": 2,
                       "args": {"name": "not simulated op by op"}})
    for i, ((spid, stid, sa, sb), (dpid, dtid, da, db)) in enumerate(flows, 1):
        # Perfetto binds a flow's ends to the slices open at their instants on their tracks: inside them
        events.append({"ph": "s", "id": i, "name": "cross-core flag", "cat": "flag", "pid": spid, "tid": stid,
                       "ts": _us(_inside(sa, sb))})
        events.append({"ph": "f", "bp": "e", "id": i, "name": "cross-core flag", "cat": "flag", "pid": dpid,
                       "tid": dtid, "ts": _us(_inside(da, db))})
    events.extend(_counters(result, spans, ns))
    return {
        "traceEvents": events,
        "otherData": {
            "kernel": name,
            "hardware": result.hw.name,
            "simulated_time_us": result.time_s * 1e6,
            "extrapolated": result.extrapolated,
            "note": ("not every op was simulated: the ops shown are those of the part simulated op by op (a "
                     "shortened loop or a smaller instance of the problem, or the first of identical repeated "
                     "runs), each followed by the stretch it stands for, marked by one slice on every track "
                     "(its name says which: extrapolated steady state, or more runs of the part before); the "
                     "phases track spans the whole run") if result.extrapolated else "every op simulated",
            "args": _ARGS_NOTE,
            "counters": ("GB/s that HBM and L2 serve, in bins: bytes counted when the first-come-first-served "
                         "servers of the model serve them (an unaligned byte takes 1/efficiency of a byte), "
                         "over extrapolated stretches the extrapolation's rates"),
        },
    }


def served(result: SimResult, spans=None) -> dict[str, np.ndarray]:
    """What HBM and L2 serve over the run: for "hbm" and "l2" an array of (begin, end, bytes) rows in cycles,
    disjoint and in time order.

    The ops' requests (Span.hbm_bytes, l2_bytes, as the engine's servers took them) are served first come,
    first served at the servers' rates from the op's start, as the engine served them (Engine._transfer), one
    run after another (a backlog one run leaves delays the next); each gap of the run (SimResult.gaps) is a
    stream of its bytes from when the server is free, spread up to its end (or, at most at the server's rate,
    beyond). A gap that repeats a stretch (Gap.like) serves what the requests made in that stretch asked for, at
    the same mean rate."""
    hw = result.hw
    spans = result.timeline if spans is None else spans
    rates = {"hbm": hw.hbm_bytes_per_cycle, "l2": hw.l2_bytes_per_cycle}
    requests = sorted(
        [(s.start, 0, i, s) for i, s in enumerate(spans) if s.hbm_bytes or s.l2_bytes]
        + [(g.start, 1, i, g) for i, g in enumerate(result.gaps)], key=lambda r: r[:3])
    out: dict[str, list[tuple[float, float, float]]] = {"hbm": [], "l2": []}
    asked: dict[str, list[tuple[float, float]]] = {"hbm": [], "l2": []}  # (request time, bytes)
    free = {"hbm": 0.0, "l2": 0.0}
    for at, kind, _, item in requests:
        for mem, rate in rates.items():
            if kind == 0:
                nbytes = item.hbm_bytes if mem == "hbm" else item.l2_bytes
            elif item.like is None:
                nbytes = (item.hbm_rate if mem == "hbm" else item.l2_rate) * (item.end - item.start)
            else:
                a, b = item.like
                nbytes = sum(n for t, n in asked[mem] if a <= t < b) * (item.end - item.start) / (b - a)
            if nbytes <= 0:
                continue
            begin = max(at, free[mem])
            # an op's transfer takes the server at its rate; a gap's stream spreads up to the gap's end
            free[mem] = begin + (nbytes / rate if kind == 0 else max(item.end - begin, nbytes / rate))
            out[mem].append((begin, free[mem], nbytes))
            asked[mem].append((at, nbytes))
    return {mem: np.array(rows, dtype=float).reshape(-1, 3) for mem, rows in out.items()}


def _cumulative(rows, t):
    """Bytes served by time t (cycles) by disjoint (begin, end, bytes) rows in time order, each served evenly."""
    if not len(rows):
        return np.zeros_like(np.asarray(t, dtype=float))
    rows = np.asarray(rows, dtype=float)
    begin, end, nbytes = rows[:, 0], rows[:, 1], rows[:, 2]
    done = np.concatenate([[0.0], np.cumsum(nbytes)])
    t = np.asarray(t, dtype=float)
    j = np.searchsorted(end, t, side="right")  # rows over by t
    k = np.minimum(j, len(rows) - 1)
    part = np.where(j < len(rows), nbytes[k] * np.clip((t - begin[k]) / (end[k] - begin[k]), 0.0, 1.0), 0.0)
    return done[j] + part


def _counters(result: SimResult, spans, ns) -> list[dict]:
    """HBM and L2 bandwidth in use (GB/s) as counter tracks: the bytes served (`served`) in bins over the run."""
    total = result.time_cycles
    if total <= 0:
        return []
    edges = np.linspace(0.0, total, _COUNTER_BINS + 1)
    seconds = (total / _COUNTER_BINS) / result.hw.clock_hz
    out = []
    rows = served(result, spans)
    for mem, label in (("hbm", "HBM GB/s"), ("l2", "L2 GB/s")):
        gbps = np.diff(_cumulative(rows[mem], edges)) / seconds / 1e9
        for b in range(_COUNTER_BINS):
            out.append({"ph": "C", "name": label, "pid": _RUN_PID, "ts": _us(ns(edges[b])),
                        "args": {"GB/s": float(gbps[b])}})
        out.append({"ph": "C", "name": label, "pid": _RUN_PID, "ts": _us(ns(total)), "args": {"GB/s": 0.0}})
    return out


def write_chrome_trace(result: SimResult, path: Path, name: str = "kernel") -> None:
    from ascendbench.store.io import atomic_write_text

    atomic_write_text(Path(path), json.dumps(chrome_trace(result, name), separators=(",", ":")))
