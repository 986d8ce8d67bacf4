"""Chrome trace event format export of a simulated timeline (viewable in Perfetto or chrome://tracing)."""

from __future__ import annotations

import json
from pathlib import Path

from ascendbench.sim.result import SimResult

__all__ = ["chrome_trace", "write_chrome_trace"]

_PIPE_ORDER = {"MTE2": 0, "MTE1": 1, "CUBE": 2, "FIXPIPE": 3, "VECTOR": 4, "MTE3": 5, "SCALAR": 6}


def chrome_trace(result: SimResult, name: str = "kernel") -> dict:
    """The timeline as a Chrome trace document: one process per AI core, one thread per unit and pipe
    (e.g. "aiv1 VECTOR"), complete events ("ph": "X") with times in microseconds."""
    us_per_cycle = 1e6 / result.hw.clock_hz
    events: list[dict] = []
    pids: dict[str, int] = {}
    tids: dict[tuple[str, str], int] = {}
    for span in result.timeline:
        core, _, unit = span.unit.partition(".")
        pid = pids.setdefault(core, int(core[4:]) if core.startswith("core") and core[4:].isdigit() else 999)
        key = (span.unit, span.pipe)
        if key not in tids:
            unit_rank = 0 if unit == "aic" else 1 + int(unit[3:] or 0) if unit.startswith("aiv") else 9
            tids[key] = unit_rank * 10 + _PIPE_ORDER.get(span.pipe, 9)
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key],
                           "args": {"name": f"{unit} {span.pipe}"}})
        events.append({
            "ph": "X", "name": span.label, "cat": span.phase, "pid": pid, "tid": tids[key],
            "ts": span.start * us_per_cycle, "dur": max(span.end - span.start, 0.0) * us_per_cycle,
        })
    for core, pid in pids.items():
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": core}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "kernel": name,
            "hardware": result.hw.name,
            "extrapolated": result.extrapolated,
            "note": ("long loops were simulated for a few iterations and extrapolated; the trace shows the "
                     "simulated iterations") if result.extrapolated else "every op simulated",
        },
    }


def write_chrome_trace(result: SimResult, path: Path, name: str = "kernel") -> None:
    from ascendbench.store.io import atomic_write_text

    atomic_write_text(Path(path), json.dumps(chrome_trace(result, name)))
