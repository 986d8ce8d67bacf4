"""Traces of every kernel as Perfetto imports them: whole nanoseconds, slices that nest or do not overlap on their
track (Perfetto drops the others), flows bound to slices, bandwidth counters within the profile's peaks,
extrapolated stretches marked on every track, args on the slices."""

import json
import math
from collections import defaultdict

import pytest

from ascendbench.hardware import load_profile
from ascendbench.kernels.registry import REGISTRY
from ascendbench.sim import engine as engine_module
from ascendbench.sim.trace import chrome_trace, served

HW = load_profile("ascend-910b4")
ATLAS = load_profile("atlas-300t-a2")  # run hgemm's default hardware

# A small problem of every kernel in the registry
SMALL = {
    "scan": {"n": 40_000, "algorithm": "mcscan"}, "batched-scan": {"batch": 3, "length": 5000},
    "segmented-scan": {"n": 30_000}, "split": {"n": 5000}, "split-values": {"n": 5000}, "compress": {"n": 5000},
    "sort": {"n": 3000, "dtype": "int16"}, "topk": {"n": 5000, "k": 100}, "topp": {"vocab": 1000, "batch": 2},
    "sample": {"n": 4000, "samples": 7}, "hgemm": {"m": 64, "n": 48, "k": 32},
}
# the runs: a gemm phase Perfetto dropped, extrapolated single-core and multi-core scans
LARGER = {
    "hgemm 2048x128x2048": ("hgemm", {"m": 2048, "n": 128, "k": 2048}),
    "scanu 1e6": ("scan", {"n": 10**6, "algorithm": "scanu"}),
    "scan 1e7": ("scan", {"n": 10**7}),
    "scan 1e8": ("scan", {"n": 10**8}),
}
CASES = {name: (name, problem) for name, problem in SMALL.items()} | LARGER


def _simulate(kernel: str, problem: dict):
    spec = REGISTRY[kernel]
    return spec.simulate(spec.params(problem), ATLAS if kernel == "hgemm" else HW)


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    sim = _simulate(*CASES[request.param])
    text = json.dumps(chrome_trace(sim, request.param))
    return request.param, sim, json.loads(text)


def _ns(us: float) -> int:
    """A time as Perfetto's JSON importer reads it: llround(us * 1000)."""
    return int(math.copysign(math.floor(abs(us) * 1000.0 + 0.5), us))


def perfetto_slices(trace: dict) -> tuple[dict, int]:
    """The slices Perfetto keeps per (pid, tid) as (start, end) ns, and how many it drops: in time order (file
    order among equal starts), a slice that starts inside the open one and ends after it overlaps without
    nesting (slice_tracker.cc)."""
    tracks = defaultdict(list)
    for i, e in enumerate(trace["traceEvents"]):
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), i))
    kept, dropped = defaultdict(list), 0
    for key, slices in tracks.items():
        open_ends: list[int] = []
        for start, end, _ in sorted(slices, key=lambda s: (s[0], s[2])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                dropped += 1
                continue
            open_ends.append(end)
            kept[key].append((start, end))
    return kept, dropped


def test_times_are_whole_nanoseconds_and_no_slice_is_dropped(case):
    name, sim, trace = case
    for e in trace["traceEvents"]:
        for field in ("ts", "dur"):
            if field in e:
                assert abs(e[field] * 1000 - round(e[field] * 1000)) < 1e-6, (name, e)
    kept, dropped = perfetto_slices(trace)
    assert dropped == 0
    assert sum(len(s) for s in kept.values()) == sum(e["ph"] == "X" for e in trace["traceEvents"])
    phases = [s for s in kept[(1000, 0)]]
    assert phases[0][0] == 0 and phases[-1][1] == round(sim.time_s * 1e9)  # consecutive, the whole run
    assert all(a[1] == b[0] for a, b in zip(phases, phases[1:]))
    if name == "hgemm 2048x128x2048":
        gemm = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == "gemm" and e["cat"] == "phase"]
        assert len(gemm) == 1 and (_ns(gemm[0]["ts"]), _ns(gemm[0]["ts"]) + _ns(gemm[0]["dur"])) in phases


def test_counter_bins_stay_within_the_peak_bandwidths(case):
    name, sim, trace = case
    hw = sim.hw
    bins = defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "C":
            bins[e["name"]].append(e["args"]["GB/s"])
    assert len(bins["HBM GB/s"]) == len(bins["L2 GB/s"]) == 401  # 400 bins and a 0 at the end
    # the servers' rates: HBM's achievable share of its peak, L2's peak
    assert max(bins["HBM GB/s"]) <= hw.hbm_bandwidth_gbps * hw.hbm_efficiency * (1 + 1e-9)
    assert max(bins["L2 GB/s"]) <= hw.l2_bandwidth_gbps * (1 + 1e-9)
    assert max(bins["HBM GB/s"]) > 0 and max(bins["L2 GB/s"]) > 0
    # every byte HBM served is counted once: what the replayed servers serve adds up to the model's HBM time at
    # its rate (top-p's concurrent rows show the one row simulated), and the bins hold what they serve by the
    # run's end (all of it unless the model's HBM time outlasts the run, as its queued write-backs may)
    rows = served(sim)["hbm"]
    model = sim.hbm_busy_cycles * hw.hbm_bytes_per_cycle
    if name != "topp":
        assert rows[:, 2].sum() == pytest.approx(model, rel=1e-9)
    counted = sum(bins["HBM GB/s"]) * sim.time_s / 400 * 1e9
    if rows[-1, 1] <= sim.time_cycles:
        assert counted == pytest.approx(rows[:, 2].sum(), rel=1e-9)
    else:
        assert counted < rows[:, 2].sum()
    assert (rows[1:, 0] >= rows[:-1, 1] - 1e-9).all()  # one transfer at a time


def test_flows_start_and_end_inside_a_slice_of_their_track(case):
    name, sim, trace = case
    kept, _ = perfetto_slices(trace)
    ends = defaultdict(dict)
    for e in trace["traceEvents"]:
        if e["ph"] in "sf":
            t = _ns(e["ts"])
            assert any(a <= t < b or a == t == b for a, b in kept[(e["pid"], e["tid"])]), (name, e)
            ends[e["id"]][e["ph"]] = t
    # one arrow per cross-core flag an op waited for
    assert len(ends) == sum(len(s.flags_from) for s in sim.timeline)
    assert all(set(v) == {"s", "f"} and v["s"] <= v["f"] for v in ends.values())
    if name in ("batched-scan", "hgemm", "scanu 1e6"):
        assert ends


def test_extrapolated_stretches_are_marked_on_every_track_with_their_rates(case):
    name, sim, trace = case
    events = trace["traceEvents"]
    gaps = [(round(g.start * 1e9 / sim.hw.clock_hz), round(g.end * 1e9 / sim.hw.clock_hz), g.label)
            for g in sim.gaps]
    assert bool(gaps) == (name in ("scanu 1e6", "scan 1e8", "sort", "topp", "topk", "sample")), gaps
    if not gaps:
        assert not any(e.get("cat") == "extrapolated" for e in events)
        return
    marked = defaultdict(list)
    for e in events:
        if e["ph"] == "X" and e["cat"] == "extrapolated":
            marked[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["name"]))
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"} - {(1000, 0)}
    assert set(marked) == tracks  # every track but the phases
    assert all(sorted(m) == sorted(g for g in gaps if g[1] > g[0]) for m in marked.values())
    # the trace ends at the simulated time; no op runs over the marked stretches
    end = round(sim.time_s * 1e9)
    assert max(_ns(e["ts"]) + _ns(e["dur"]) for e in events if e["ph"] == "X") == end
    if name in ("scanu 1e6", "scan 1e8"):
        # the runs showed 41% and 23.6% of their time: the rest is marked now
        assert all(label.startswith(("extrapolated steady state", "3 more runs")) for *_, label in gaps), gaps
        assert sum(b - a for a, b, _ in gaps) > 0.5 * end
        if name == "scanu 1e6":
            assert gaps[-1][1] == end
        # what HBM serves over the last stretch: the extrapolation's rate times its length
        rows = served(sim)["hbm"]
        last = sim.gaps[-1]
        assert rows[-1, 0] >= last.start  # its stream, the last thing served
        assert rows[-1, 2] == pytest.approx(last.hbm_rate * (last.end - last.start), rel=1e-9)
        assert last.hbm_rate > 0 and last.l2_rate > 0


def test_only_the_units_that_stand_for_others_say_so_and_slices_carry_args(case):
    name, sim, trace = case
    events = trace["traceEvents"]
    assert not any("stands for" in e["args"]["name"] for e in events if e["name"] == "process_name")
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    weights = sim.unit_weights
    for (pid, _), label in threads.items():
        if pid == 1000:
            continue
        unit = label.split()[0]
        core = f"core{pid}"
        weight = weights.get(f"{core}.{unit}", 1)
        kind = unit.rstrip("0123456789").upper()
        assert (f"(stands for {weight} {kind}s)" in label) == (weight > 1), (label, weight)
    if name == "hgemm 2048x128x2048":
        assert any("stands for" in label for label in threads.values())
    iterations = defaultdict(list)
    moved = defaultdict(int)
    for e in events:
        if e["ph"] != "X" or e["pid"] == 1000 or e["cat"] == "extrapolated":
            continue
        args = e["args"]
        stands = weights.get(f"core{e['pid']}.{threads[(e['pid'], e['tid'])].split()[0]}", 1)
        assert args.get("stands for", 1) == stands
        if e["name"].endswith("(in flight)"):
            assert args["latency cycles"] > 0
            continue
        # a slice lasts its cycles held, within the nanosecond its ends are rounded to
        assert abs(args["cycles held"] * 1e9 / sim.hw.clock_hz - _ns(e["dur"])) <= 1.0 + 1e-9
        iterations[(e["pid"], e["tid"], e["name"])].append(args["iteration"])
        pipe = threads[(e["pid"], e["tid"])].split()[1]
        if "L2 bytes" in args:  # GM transfers: MTE2 (GM to the core), MTE3 and FIXPIPE (back); all pass L2
            moved[pipe] += 1
            assert args["L2 bytes"] > 0 and args.get("HBM bytes", 0) >= 0
    assert iterations
    assert set(moved) <= {"MTE2", "MTE3", "FIXPIPE"} and moved["MTE2"] > 0
    assert all(v == list(range(len(v))) for v in iterations.values())  # counted per label on each pipe


def test_the_counters_replay_the_engines_servers(monkeypatch):
    """served() serves the ops' requests as the engine's servers did: the same busy stretches."""
    calls = []
    original = engine_module._Server.serve

    def serve(self, start, nbytes):
        begin = max(start, self.free)
        end = original(self, start, nbytes)
        calls.append((self.bytes_per_cycle, begin, end))
        return end

    monkeypatch.setattr(engine_module._Server, "serve", serve)
    sim = _simulate("scan", {"n": 200_000, "algorithm": "mcscan"})
    assert not sim.extrapolated and len(sim.segments) == 1
    offset = sim.segments[0][1]
    replay = served(sim)

    def merged(rows):
        out = []
        for a, b in sorted(rows):
            if b <= a:
                continue
            if out and a <= out[-1][1] + 1e-6:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return out

    for mem, rate in (("hbm", HW.hbm_bytes_per_cycle), ("l2", HW.l2_bytes_per_cycle)):
        engine_rows = [(a + offset, b + offset) for r, a, b in calls if r == rate]
        expected, got = merged(engine_rows), merged(replay[mem][:, :2].tolist())
        assert len(got) == len(expected) > 0
        assert sum(got, []) == pytest.approx(sum(expected, []), abs=1e-6)
