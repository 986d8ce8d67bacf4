"""Chrome trace event format export of a simulated run (viewable in Perfetto or chrome://tracing).

The trace shows the whole run: a "run" process with the phases laid end to end (they add up to the simulated
time) and counter tracks of the HBM and L2 bandwidth in use; one process per AI core with one track per unit
and pipe holding the ops while they hold the pipe ("aiv0 MTE2"), and tracks for the time their results are
still in flight after that ("aiv0 MTE2 in flight", one sub-track per overlapping op, so that slices on a track
never overlap without nesting, Perfetto's rule); SyncAll barriers on the run's "SyncAll" track; cross-core
flags as flow arrows from the op that sets them to the op that waits. A core simulated once for a group of
identical cores says how many it stands for. Extrapolated runs show the ops of the smaller simulated
instances (each at its part's start) over the full-length phases.
"""

from __future__ import annotations

import json
from pathlib import Path

from ascendbench.sim.result import SimResult

__all__ = ["chrome_trace", "write_chrome_trace"]

_PIPE_ORDER = {"MTE2": 0, "MTE1": 1, "CUBE": 2, "FIXPIPE": 3, "VECTOR": 4, "MTE3": 5, "SCALAR": 6}
_RUN_PID = 1000  # the "run" process: phases, SyncAll, bandwidth counters
_COUNTER_BINS = 400


def _unit_rank(unit: str) -> int:
    name = unit.partition(".")[2]
    if name == "aic":
        return 0
    if name.startswith("aiv") and name[3:].isdigit():
        return 1 + int(name[3:])
    return 9


def chrome_trace(result: SimResult, name: str = "kernel") -> dict:
    """The simulated run as a Chrome trace document (times in microseconds); see the module docstring."""
    us = 1e6 / result.hw.clock_hz
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": _RUN_PID, "args": {"name": f"{name} (whole run)"}},
        {"ph": "M", "name": "process_sort_index", "pid": _RUN_PID, "args": {"sort_index": -1}},
        {"ph": "M", "name": "thread_name", "pid": _RUN_PID, "tid": 0, "args": {"name": "phases"}},
        {"ph": "M", "name": "thread_name", "pid": _RUN_PID, "tid": 1, "args": {"name": "SyncAll"}},
    ]
    for phase, a, b in result.intervals:
        events.append({"ph": "X", "name": phase, "cat": "phase", "pid": _RUN_PID, "tid": 0,
                       "ts": a * us, "dur": (b - a) * us})
    pids: dict[str, int] = {}
    tids: dict[tuple[str, str], int] = {}
    lanes: dict[tuple[str, str], list[float]] = {}  # in-flight sub-tracks: when each is free again
    flows = 0
    spans = result.timeline
    for span in spans:
        if span.unit == "chip":
            if span.pipe == "SYNC":
                events.append({"ph": "X", "name": span.label, "cat": span.phase, "pid": _RUN_PID, "tid": 1,
                               "ts": span.start * us, "dur": max(span.end - span.start, 0.0) * us})
            continue
        core, _, unit = span.unit.partition(".")
        if core not in pids:
            pids[core] = int(core[4:]) if core.startswith("core") and core[4:].isdigit() else 999
        pid = pids[core]
        key = (span.unit, span.pipe)
        if key not in tids:
            tids[key] = _unit_rank(span.unit) * 100 + _PIPE_ORDER.get(span.pipe, 9) * 10
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key],
                           "args": {"name": f"{unit} {span.pipe}"}})
        tid = tids[key]
        events.append({"ph": "X", "name": span.label, "cat": span.phase, "pid": pid, "tid": tid,
                       "ts": span.start * us, "dur": max(span.release - span.start, 0.0) * us})
        if span.end > span.release:
            free = lanes.setdefault(key, [])
            lane = next((i for i, t in enumerate(free) if t <= span.release), None)
            if lane is None:
                lane = len(free)
                free.append(0.0)
                events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + 1 + lane,
                               "args": {"name": f"{unit} {span.pipe} in flight" + (f" {lane + 1}" if lane else "")}})
            free[lane] = span.end
            events.append({"ph": "X", "name": f"{span.label} (in flight)", "cat": span.phase, "pid": pid,
                           "tid": tid + 1 + lane, "ts": span.release * us, "dur": (span.end - span.release) * us})
        for src_unit, src_pipe, at in span.flags_from:
            src_core = src_unit.partition(".")[0]
            if src_core not in pids or (src_unit, src_pipe) not in tids:
                continue
            flows += 1
            events.append({"ph": "s", "id": flows, "name": "cross-core flag", "cat": "flag",
                           "pid": pids[src_core], "tid": tids[(src_unit, src_pipe)], "ts": at * us})
            events.append({"ph": "f", "bp": "e", "id": flows, "name": "cross-core flag", "cat": "flag",
                           "pid": pid, "tid": tid, "ts": span.start * us})
    weights = result.unit_weights
    for core, pid in pids.items():
        stands = max((w for u, w in weights.items() if u.partition(".")[0] == core), default=1)
        label = core if stands <= 1 else f"{core} (stands for {stands} identical cores)"
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": label}})
    events.extend(_counters(spans, us))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "kernel": name,
            "hardware": result.hw.name,
            "simulated_time_us": result.time_s * 1e6,
            "extrapolated": result.extrapolated,
            "note": ("the ops shown are those of the smaller instances of the problem that were simulated; the "
                     "phases track spans the whole run") if result.extrapolated else "every op simulated",
        },
    }


def _counters(spans, us: float) -> list[dict]:
    """HBM and L2 bandwidth in use (GB/s) as counter tracks: each op's bytes spread over the time it held its
    pipe, summed in bins."""
    busy = [s for s in spans if (s.hbm_bytes or s.l2_bytes) and s.release > s.start]
    if not busy:
        return []
    end = max(s.release for s in busy)
    width = end / _COUNTER_BINS
    hbm = [0.0] * _COUNTER_BINS
    l2 = [0.0] * _COUNTER_BINS
    for s in busy:
        rate_h, rate_l = s.hbm_bytes / (s.release - s.start), s.l2_bytes / (s.release - s.start)
        first, last = int(s.start / width), min(int(s.release / width), _COUNTER_BINS - 1)
        for b in range(first, last + 1):
            overlap = min(s.release, (b + 1) * width) - max(s.start, b * width)
            if overlap > 0:
                hbm[b] += rate_h * overlap
                l2[b] += rate_l * overlap
    seconds = width * us * 1e-6
    out = []
    for b in range(_COUNTER_BINS):
        out.append({"ph": "C", "name": "HBM GB/s", "pid": _RUN_PID, "ts": b * width * us,
                    "args": {"GB/s": hbm[b] / seconds / 1e9}})
        out.append({"ph": "C", "name": "L2 GB/s", "pid": _RUN_PID, "ts": b * width * us,
                    "args": {"GB/s": l2[b] / seconds / 1e9}})
    return out


def write_chrome_trace(result: SimResult, path: Path, name: str = "kernel") -> None:
    from ascendbench.store.io import atomic_write_text

    atomic_write_text(Path(path), json.dumps(chrome_trace(result, name)))
