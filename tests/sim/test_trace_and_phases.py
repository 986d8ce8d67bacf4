"""Every simulated microsecond is accounted for: a run's phases add up to its time, and its Chrome trace shows the
whole run with slices that Perfetto can draw (on one lane, slices either nest or do not overlap)."""

import json
from collections import defaultdict

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels.batched_scan import BatchedScanParams, simulate_batched
from ascendbench.kernels.hgemm import GemmShape, HgemmParams, simulate_hgemm
from ascendbench.kernels.scan import SCAN_KERNELS, ScanParams
from ascendbench.sim.trace import chrome_trace

HW = load_profile("ascend-910b4")
ATLAS = load_profile("atlas-300t-a2")

RUNS = {
    "mcscan-ul1 1e7": lambda: SCAN_KERNELS["mcscan-ul1"].simulate(10**7, ScanParams(), HW),
    "mcscan 3 chunks": lambda: SCAN_KERNELS["mcscan"].simulate(3 * 2**24 + 5000, ScanParams(), HW),
    "mcscan int8": lambda: SCAN_KERNELS["mcscan"].simulate(3 * 10**6 + 7, ScanParams(dtype="int8"), HW),
    "scanu tail": lambda: SCAN_KERNELS["scanu"].simulate(200_001, ScanParams(s=64), HW),
    "vec-cumsum": lambda: SCAN_KERNELS["vec-cumsum"].simulate(100_000, ScanParams(), HW),
    "batched scanu": lambda: simulate_batched(24, 5000, BatchedScanParams(algorithm="scanu", s=64), HW).sim,
    "hgemm": lambda: simulate_hgemm(GemmShape(1000, 2000, 3000), HgemmParams(alpha=0.5, beta=0.5), ATLAS)[0],
}


@pytest.fixture(scope="module", params=list(RUNS))
def run(request):
    return RUNS[request.param]()


def test_phases_add_up_to_the_simulated_time(run):
    assert sum(run.phases.values()) == pytest.approx(run.time_cycles, rel=1e-9)
    intervals = run.intervals
    assert intervals[0][1] == 0.0 and intervals[-1][2] == pytest.approx(run.time_cycles, rel=1e-9)
    for (_, _, end), (_, start, _) in zip(intervals, intervals[1:]):
        assert start == pytest.approx(end, rel=1e-12, abs=1e-6)  # consecutive: no gap, no overlap


def test_trace_slices_nest_or_do_not_overlap_on_every_lane(run):
    trace = json.loads(json.dumps(chrome_trace(run)))  # what a file holds
    lanes = defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            lanes[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    assert lanes
    bad = 0
    for slices in lanes.values():
        slices.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list[float] = []
        for start, end in slices:
            while open_ends and open_ends[-1] <= start + 1e-6:
                open_ends.pop()
            if open_ends and end > open_ends[-1] + 1e-6:
                bad += 1
            open_ends.append(end)
    assert bad == 0


def test_trace_covers_the_whole_run_with_phases_and_counters(run):
    trace = chrome_trace(run)
    events = trace["traceEvents"]
    us = run.time_s * 1e6
    phase_slices = [e for e in events if e["ph"] == "X" and e.get("cat") == "phase"]
    # times are whole nanoseconds: the run's time rounded to one
    assert sum(e["dur"] for e in phase_slices) == pytest.approx(us, abs=5e-4)
    assert max(e["ts"] + e["dur"] for e in events if e["ph"] == "X") == pytest.approx(us, abs=5e-4)
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert any("HBM" in c for c in counters) and any("L2" in c for c in counters)
