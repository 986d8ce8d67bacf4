"""The papers' figures and tables redrawn from the simulator: data producers and matplotlib drawing.

Each figure is a `Figure` with an ID (`fig4.2`, `hgemm-fig4`, `table5`, ...), the paper's caption in our words,
its source, and `compute(ctx)` returning the plotted data as a JSON-ready dict:

    {"kind": "lines" | "scatter" | "bars" | "bars-panels" | "heatmap" | "table",
     "xlabel", "xscale", "ylabel": "time (ms)", "yunit": "ms", "yscale",
     "series": [{"label", "x", "y", "unit", "origin": "simulated" | "paper", ...}],
     "second": {"ylabel", "yunit", "yscale", "series"}        # optional lower panel sharing the x axis
     "paper": {"claims": [IDs], "values": [{"claim", "paper", "unit", "statement"}], "reason": str | None},
     "notes": [...]}

Every series carries the unit of its values, which is the unit in its axis label; the prefix (µs, ms; GB/s;
TFLOPS) is chosen per axis (plotting.si_scale). Series with origin "paper" are the numbers the papers publish,
read from claims.toml and hgemm_tables.toml only, with the claim IDs they come from ("claims") and the drawing:
"style": "point" (open black markers at x, y) or "level" (a dashed black line at each y over the span x[0] ..
x[-1]; "tags" name each level). Everything else is simulated with the kernels and timing model `ascendbench
run` uses. `paper` lists the claims drawn with the paper's values, or none and the reason (a qualitative
claim, or no number published). Axes follow the papers (log-log where the paper is). `render(fig, data)`
draws it with matplotlib, `draw(fig, data, path, fmt, dpi)` writes it as PNG, SVG or PDF.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from ascendbench.plotting import (
    DEFAULT_DPI,
    PAPER_LEVEL,
    PAPER_POINT,
    save_figure,
    si_scale,
    simulated_style,
    style,
)
from ascendbench.reference.claims import Context, hgemm_tables, load_claims, paper_value

__all__ = ["FIGURES", "Figure", "draw", "figure_ids", "render"]

SCAN_HW, HGEMM_HW = "ascend-910b4", "atlas-300t-a2"
STEP = 20 * 128 * 128  # the scan paper's sweep step: n = i * 20 * s^2
SWEEP = [i * STEP for i in (1, 2, 4, 8, 16, 32, 61, 122, 183, 244, 305)]
SINGLE = [128 * 128 * 2**k for k in range(12)]  # single-core sweep, 16K ... 33.5M
PHASE_SIZES = (SWEEP[4], SWEEP[7], SWEEP[-1])  # the sizes of Fig 6.4's bars
FIG4_SIZES = (128, 256, 512, 1024, 2048, 4096)  # M = N = K of HGEMM Fig 4


@dataclass(frozen=True)
class Figure:
    """One redrawable figure or table: id, paper ("scan" or "HGEMM"), caption (ours), source, compute."""

    id: str
    paper: str
    caption: str
    source: str
    compute: Callable[[Context], dict[str, Any]] | None


def _series(label, x, y, origin="simulated", **extra) -> dict[str, Any]:
    return {"label": label, "x": list(x), "y": [float(v) for v in y], "origin": origin, **extra}


def _claim(row_id: str):
    return next(c for c in load_claims() if c.id == row_id)


def _claim_names(claims: list[str]) -> str:
    """The claim IDs of a label, each claim once ("S-13 s=64", "S-13 s=128" -> "S-13"; "S-1", "S-2" as they are)."""
    return ", ".join(dict.fromkeys(c.split(" ")[0] for c in claims))


def _paper_series(claims: list[str], what: str, x, y, drawn: str, tags=None) -> dict[str, Any]:
    """A series of the papers' values: `drawn` "point" (markers at x, y) or "level" (each y over x[0]..x[-1]);
    labelled "paper (claim IDs): what"."""
    extra = {"tags": list(tags)} if tags else {}
    return _series(f"paper ({_claim_names(claims)}): {what}", x, y, "paper", claims=list(claims), style=drawn,
                   **extra)


def _no_paper(reason: str) -> dict[str, Any]:
    return {"claims": [], "values": [], "reason": reason}


def _paper_of(data: dict[str, Any], extra_claims=()) -> dict[str, Any]:
    """The "paper" entry of a figure: the claims of its paper series (and `extra_claims`, e.g. a table's),
    each with the value and unit claims.toml gives."""
    ids = [c for panel in (data, data.get("second") or {}) for s in panel.get("series", [])
           if s["origin"] == "paper" for c in s["claims"]]
    ids = list(dict.fromkeys([*ids, *extra_claims]))
    return {"claims": ids, "values": [{"claim": i, "paper": _claim(i).paper, "unit": _claim(i).unit,
                                       "statement": _claim(i).statement} for i in ids], "reason": None}


def _with_units(compute: Callable[[Context], dict[str, Any]]):
    """Wrap a compute function returning values in base units (yunit "s", "B/s", "FLOPS", "elem/s", "x",
    "%"; ylabel the bare quantity): choose an SI prefix per axis, scale that axis' series (y and kernel_y),
    give each series its unit, put the unit in the axis label, and fill in "paper" from the paper series."""

    def scale(panel: dict[str, Any]) -> None:
        series = panel["series"]
        factor, unit = si_scale([v for s in series for v in s["y"]], panel["yunit"])
        for s in series:
            for key in ("y", "kernel_y"):
                if key in s:
                    s[key] = [v * factor for v in s[key]]
            s["unit"] = unit
        panel["yunit"] = unit
        panel["ylabel"] = f"{panel['ylabel']} ({unit})"

    @wraps(compute)
    def wrapped(ctx: Context) -> dict[str, Any]:
        data = compute(ctx)
        if "yunit" in data:
            scale(data)
        if data.get("second"):
            scale(data["second"])
        if "paper" not in data:
            data["paper"] = _paper_of(data)
        if any(note.startswith(WINDOW_NOTE.split(";")[0]) for note in data.get("notes", [])):
            data.setdefault("sources", {})["host window"] = WINDOW_SOURCE
        if data["paper"]["reason"]:
            data.setdefault("notes", []).append(f"no paper values drawn: {data['paper']['reason']}")
        return data

    return wrapped


# ---- scan paper ---------------------------------------------------------------------------------------------

WINDOW_NOTE = ("times as the paper's profiling script measures them: the simulated kernel plus the host's launch "
               "steps between the two timing events (tensor allocation, tiling copy, synchronisation); the "
               "JSON's kernel_y gives the kernel alone")
# Where the model of those host steps lives, for the JSON only (a slide's reader needs what, not which file).
WINDOW_SOURCE = "ascendbench/sim/host.py"


def _scan_window(hw, kernel, n, **params):
    from ascendbench.reference.scan_claims import window

    return window(kernel, n, hw, **params)


def _scan_series(label, sizes, hw, kernel, unit, **params) -> dict[str, Any]:
    """One scan sweep as timed (y) and as the kernel alone (kernel_y); unit "s", "B/s" or "elem/s"."""
    from ascendbench.kernels import ScanParams

    p = ScanParams(**params)

    def value(n, seconds):
        return {"s": seconds, "B/s": n * (p.in_bytes + p.out_bytes) / seconds, "elem/s": n / seconds}[unit]

    windows = [_scan_window(hw, kernel, n, **params) for n in sizes]
    return _series(label, sizes, [value(n, w.window_s) for n, w in zip(sizes, windows)],
                   kernel_y=[value(n, w.kernel_s) for n, w in zip(sizes, windows)])


def _ratio(label, x, num, den) -> dict[str, Any]:
    return _series(label, x, [a / b for a, b in zip(num, den)])


def _lines(xlabel, ylabel, yunit, xscale, yscale, series, notes, second=None, **extra) -> dict[str, Any]:
    data = {"kind": "lines", "xlabel": xlabel, "ylabel": ylabel, "yunit": yunit, "xscale": xscale,
            "yscale": yscale, "series": series, "notes": notes, **extra}
    if second is not None:
        data["second"] = second
    return data


def _second(ylabel, yunit, series, yscale="linear") -> dict[str, Any]:
    return {"ylabel": ylabel, "yunit": yunit, "yscale": yscale, "series": series}


@_with_units
def fig_4_2(ctx):
    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(label, SINGLE, hw, k, "s")
              for label, k in (("vec_only (CumSum)", "vec-cumsum"), ("ScanU", "scanu"), ("ScanUL1", "scanul1"))]
    vec, u, ul1 = (s["y"] for s in series)
    big = SINGLE[-1]
    second = _second("speed-up over vec_only", "x", [
        _ratio("ScanU", SINGLE, vec, u), _ratio("ScanUL1", SINGLE, vec, ul1),
        _paper_series(["S-1", "S-2"], "ScanU, ScanUL1 at large n", [big, big],
                      [paper_value("S-1"), paper_value("S-2")], "point", tags=["S-1", "S-2"])])
    return _lines("n (elements)", "time", "s", "log", "log", series, [WINDOW_NOTE], second)


@_with_units
def fig_6_1(ctx):
    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(f"MCScan s={s}", SWEEP, hw, "mcscan", "B/s", s=s) for s in (32, 64, 128)]
    series.append(_scan_series("memcpy", SWEEP, hw, "memcpy", "B/s", out_dtype="fp32"))
    peak = paper_value("S-4") * hw.hbm_bandwidth_gbps * 1e9
    series.append(_paper_series(["S-4"], f"MCScan s=128 at large n, {paper_value('S-4'):.1%} of "
                                f"{hw.hbm_bandwidth_gbps:.0f} GB/s", [SWEEP[-1]], [peak], "point"))
    return _lines("n (elements)", "bandwidth", "B/s", "log", "linear", series,
                  [WINDOW_NOTE, "the torch.cumsum baseline of the paper is not modelled (vector-only multi-core "
                   "cumsum)"])


@_with_units
def fig_6_2(ctx):
    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(label, SWEEP, hw, k, "B/s") for label, k in (("MCScan", "mcscan"),
                                                                        ("MCScanUL1", "mcscan-ul1"))]
    series.append(_scan_series("memcpy", SWEEP, hw, "memcpy", "B/s", out_dtype="fp32"))
    mc, ul1, copy = (s["y"] for s in series)
    big = SWEEP[-1]
    second = _second("ratio", "x", [
        _ratio("MCScanUL1 / MCScan (speed-up)", SWEEP, ul1, mc),
        _ratio("MCScanUL1 / memcpy (bandwidth)", SWEEP, ul1, copy),
        _paper_series(["S-8a", "S-8b"], "at large n", [big, big], [paper_value("S-8a"), paper_value("S-8b")],
                      "point", tags=["S-8a", "S-8b"])])
    return _lines("n (elements)", "bandwidth", "B/s", "log", "linear", series,
                  [WINDOW_NOTE, "S-8b: `validate` compares with an fp16 clone (4 bytes per element), as the "
                   "paper does; the memcpy drawn here moves the scan's 6 bytes per element"], second)


@_with_units
def fig_6_3(ctx):
    hw = ctx.hw(SCAN_HW)
    split = _scan_series("MCScan s=128, L2 cache splitting", SWEEP, hw, "mcscan", "B/s")
    whole = _scan_series("MCScan s=128, no splitting", SWEEP, hw, "mcscan", "B/s", chunk=0)
    gain = _series("gain of splitting", SWEEP, [(a / b - 1) * 100 for a, b in zip(split["y"], whole["y"])])
    second = _second("gain of splitting", "%", [
        gain, _paper_series(["S-7"], "gain at large n", [SWEEP[-1]], [paper_value("S-7") * 100], "point")])
    return _lines("n (elements)", "bandwidth", "B/s", "log", "linear", [split, whole], [WINDOW_NOTE], second)


@_with_units
def fig_6_4(ctx):
    from ascendbench.kernels import SCAN_KERNELS, ScanParams

    hw = ctx.hw(SCAN_HW)
    series = []
    for label, k in (("MCScan", "mcscan"), ("MCScanUL1", "mcscan-ul1")):
        sims = [SCAN_KERNELS[k].simulate(n, ScanParams(), hw) for n in PHASE_SIZES]
        for phase in ("phase I", "phase II"):
            series.append(_series(f"{label} {phase}", [f"{n:,}" for n in PHASE_SIZES],
                                  [s.phases_s[phase] for s in sims]))
    return {"kind": "bars", "xlabel": "n (elements)", "ylabel": "time", "yunit": "s", "xscale": "linear",
            "yscale": "linear", "series": series, "notes": ["kernel time per phase (no host window)"],
            "paper": _no_paper("S-9 is an ordering (phase I of MCScanUL1 slightly longer than MCScan's, phase II "
                               "much shorter); the paper prints no phase times")}


@_with_units
def fig_6_5(ctx):
    from ascendbench.kernels.split import simulate_compress

    hw = ctx.hw(SCAN_HW)
    fast = [simulate_compress(n, "fp16", hw).time_s for n in SWEEP]
    slow = [simulate_compress(n, "fp16", hw, variant="scalar").time_s for n in SWEEP]
    moved = [n * 3 + (n // 2) * 2 for n in SWEEP]
    peak = paper_value("S-10") * 1e9  # claims.toml: GB/s
    return _lines("n (elements)", "bandwidth", "B/s", "log", "linear", [
        _series("compress (int8 MCScan, s=128)", SWEEP, [b / t for b, t in zip(moved, fast)]),
        _series("masked_select (scalar baseline)", SWEEP, [b / t for b, t in zip(moved, slow)]),
        _paper_series(["S-10"], "compress peak over the sweep", [SWEEP[0], SWEEP[-1]], [peak], "level",
                      tags=["S-10"])],
        ["fp16 values, uniformly random mask; the compress kernel scans its mask with s=128 only"])


@_with_units
def fig_6_6(ctx):
    from ascendbench.kernels.radix_sort import simulate_radix_sort

    hw = ctx.hw(SCAN_HW)
    sizes = SWEEP[:9]
    fast = [simulate_radix_sort(n, "fp16", hw).time_s for n in sizes]
    base = [simulate_radix_sort(n, "fp16", hw, variant="vector").time_s for n in sizes]
    lo, hi = paper_value("S-11")
    threshold = 525_000  # "for n > 525K" (S-11's statement)
    second = _second("speed-up over baseline", "x", [
        _ratio("radix sort / baseline", sizes, base, fast),
        _paper_series(["S-11"], "range for n > 525K", [threshold, sizes[-1]], [lo, hi], "level",
                      tags=["S-11 low", "S-11 high"])])
    return _lines("n (elements)", "time", "s", "log", "log",
                  [_series("radix sort (int8 MCScan)", sizes, fast), _series("baseline sort", sizes, base)], [],
                  second)


@_with_units
def fig_6_7(ctx):
    from ascendbench.reference.row_scan_claims import BATCHES, ROW_LENGTH, batched_bandwidth_gbps

    hw = ctx.hw(SCAN_HW)
    series = [_series(f"s={s}", BATCHES, [batched_bandwidth_gbps(hw, "scanu", b, ROW_LENGTH, s) * 1e9
                                         for b in BATCHES]) for s in (16, 32, 64, 128)]
    series.append(_series("baseline (vector only)", BATCHES,
                          [batched_bandwidth_gbps(hw, "vector", b, ROW_LENGTH, 128) * 1e9 for b in BATCHES]))
    levels = sorted({paper_value("S-13 s=64"), paper_value("S-13 s=128")})  # one level when they agree
    series.append(_paper_series(["S-13 s=64", "S-13 s=128"], "s=64, s=128", [BATCHES[0], BATCHES[-1]],
                                [v * 1e9 for v in levels], "level", tags=["S-13"] * len(levels)))
    return _lines("batch size (rows of 65,536)", "bandwidth", "B/s", "log", "linear", series,
                  [WINDOW_NOTE.split(";")[0]])


@_with_units
def fig_6_8(ctx):
    from ascendbench.kernels.topp import simulate_top_p
    from ascendbench.reference.sampling_claims import VOCABS

    hw = ctx.hw(SCAN_HW)
    series = [_series(f"s={s}", VOCABS, [simulate_top_p(n, hw, variant="radix", s=s).sim.time_s for n in VOCABS])
              for s in (32, 64, 128)]
    series.append(_series("baseline (sort + vector cumsum)", VOCABS,
                          [simulate_top_p(n, hw, variant="baseline").sim.time_s for n in VOCABS]))
    ref = series[2]["y"]
    second = _second("time / time(s=128)", "x", [_ratio(s["label"], VOCABS, s["y"], ref) for s in series[:2]])
    return _lines("vocabulary size", "time", "s", "log", "log", series,
                  ["one row (batch 1); the baseline multinomial stops at 2^24 categories; s = 32, 64, 128 lie "
                   "within a few % of each other: the lower panel gives each relative to s=128"], second,
                  paper=_no_paper("S-16a is an ordering (radix sort + MCScan grows less with the vocabulary than "
                                  "sort + vector cumsum); the paper prints no times for Fig 6.8"))


@_with_units
def fig_b_2(ctx):
    from ascendbench.reference.row_scan_claims import CROSS_BATCHES, CROSS_LENGTHS, CROSSOVER, crossover_grid

    grid = crossover_grid(ctx.hw(SCAN_HW))
    batch, length = CROSSOVER
    crossing = _series(f"paper (S-14): crossover at batch {batch}, length {length:,}", [length], [batch], "paper",
                       claims=["S-14"], style="crossover")
    return {"kind": "heatmap", "xlabel": "array length", "ylabel": "batch size", "x": list(CROSS_LENGTHS),
            "y": list(CROSS_BATCHES), "z": [[grid[(b, n)] for n in CROSS_LENGTHS] for b in CROSS_BATCHES],
            "zlabel": "time(ScanUL1) / time(ScanU) (x)", "zunit": "x", "series": [crossing],
            "notes": [WINDOW_NOTE.split(";")[0], "above 1 (red) ScanU is faster, below 1 (blue) ScanUL1; paper "
                      "(S-14): ScanU better for batch > 18 and length < 4K, ScanUL1 for batch < 18 and length > 4K"]}


@_with_units
def fig_b_3(ctx):
    from ascendbench.reference.row_scan_claims import INT8_SIZES

    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(label, INT8_SIZES, hw, "mcscan", "elem/s", dtype=d)
              for label, d in (("fp16", "fp16"), ("int8", "int8"))]
    return _lines("n (elements)", "throughput", "elem/s", "log", "linear", series, [WINDOW_NOTE],
                  paper=_no_paper("S-15 is qualitative (only a small gain of int8 over fp16; the 1.5x bound is "
                                  "this project's tolerance, not the paper's number)"))


@_with_units
def fig_b_4(ctx):
    from ascendbench.kernels.radix_sort import simulate_radix_sort

    hw = ctx.hw(SCAN_HW)
    sizes = SWEEP[:9]
    times = {p: [simulate_radix_sort(n, "fp16", hw, passes=p).time_s for n in sizes] for p in (16, 8, 4)}
    second = _second("speed-up over 16 passes", "x", [
        _ratio("8 passes", sizes, times[16], times[8]), _ratio("4 passes", sizes, times[16], times[4]),
        _paper_series(["S-12a", "S-12b"], "8 and 4 passes", [sizes[0], sizes[-1]],
                      [paper_value("S-12a"), paper_value("S-12b")], "level", tags=["S-12a", "S-12b"])])
    return _lines("n (elements)", "time", "s", "log", "log", [_series(f"{p} passes", sizes, times[p])
                                                             for p in (16, 8, 4)], [], second)


# ---- HGEMM paper --------------------------------------------------------------------------------------------

@_with_units
def hgemm_fig4(ctx):
    from ascendbench.kernels.hgemm_tiling import TABLE_1
    from ascendbench.reference.hgemm_claims import fig4_tflops

    data = fig4_tflops(ctx.hw(HGEMM_HW), FIG4_SIZES)
    series = [_series(f"M0 x N0 = {m0}x{n0}", [str(s) for s in FIG4_SIZES], [data[s][i] * 1e12 for s in FIG4_SIZES])
              for i, (m0, n0) in enumerate(TABLE_1.values())]
    return {"kind": "bars", "xlabel": "M = N = K", "ylabel": "throughput", "yunit": "FLOPS", "xscale": "linear",
            "yscale": "linear", "series": series, "notes": ["M0 x N0 of Table 1, K0 = 8, every optimisation off"],
            "paper": _no_paper("G-4 is an ordering (small M0/N0 much slower above 256); the paper's Fig 4 "
                               "values are not in its text or tables")}


@_with_units
def hgemm_fig5(ctx):
    from ascendbench.reference.hgemm_claims import FIG5_K0, fig5_tflops

    hw = ctx.hw(HGEMM_HW)
    series = [_series(f"M = N = K = {s}", FIG5_K0, [t * 1e12 for t in fig5_tflops(hw, s)]) for s in (1024, 2048, 4096)]
    return _lines("K0", "throughput", "FLOPS", "log", "linear", series, ["M0 = N0 = 32, every optimisation off"],
                  paper=_no_paper("G-5 is a trend (TFLOPS rise with K0); the paper's Fig 5 values are not in its "
                                  "text or tables"))


@_with_units
def hgemm_fig6(ctx):
    from ascendbench.kernels.hgemm import GemmShape, HgemmParams, resolve_tiling
    from ascendbench.reference.hgemm_claims import candidates
    from ascendbench.workloads import load_workload

    hw = ctx.hw(HGEMM_HW)
    series = []
    for name, shape in zip(("regular", "M-dominant", "K-dominant"), load_workload("fig6").shapes):
        cands = sorted(candidates(hw, shape[:3]), key=lambda c: c[1])
        chosen = resolve_tiling(GemmShape(*shape[:3]), HgemmParams(), hw)
        tile = f"{chosen.m0}x{chosen.n0}x{chosen.k0}"
        series.append(_series(f"{name} {shape[0]}x{shape[1]}x{shape[2]}",
                              [f"{m}x{n}x{k}" for _, (m, n, k) in cands], [t * 1e12 for t, _ in cands],
                              selected=tile))
    return {"kind": "bars-panels", "xlabel": "M0 x N0 x K0", "ylabel": "throughput", "yunit": "FLOPS",
            "xscale": "linear", "yscale": "linear", "series": series,
            "notes": ["every optimisation off; the selector's tiling in red"],
            "paper": _no_paper("G-6 is qualitative (the selector's tiling is the best candidate); the paper's Fig "
                               "6 values are not in its text or tables")}


def _random_tflops(ctx, count):
    from ascendbench.reference.hgemm_claims import random_tflops
    from ascendbench.workloads import load_workload

    def compute():
        hw = ctx.hw(HGEMM_HW)
        shapes = load_workload("random-5000").shapes[:count]
        return ([s[:3] for s in shapes], [random_tflops(hw, s[:3]) for s in shapes],
                [random_tflops(hw, s[:3], variant="gemm-example") for s in shapes])

    return ctx.memo(("random tflops", count), compute)


FIG10_SHAPES = 300
TABLE4_SHAPES = 1000


@_with_units
def hgemm_fig10(ctx):
    from ascendbench.reference.hgemm_claims import random_tflops

    hw = ctx.hw(HGEMM_HW)
    shapes, proposed, example = _random_tflops(ctx, FIG10_SHAPES)
    unpadded = [random_tflops(hw, s, padding=False) for s in shapes]
    idx = list(range(len(shapes)))
    ids = ("G-7b", "G-7a", "G-7d", "G-7c")
    levels = _paper_series(list(ids), "Table 4 over 5000 shapes", [idx[0], idx[-1]],
                           [paper_value(i) * 1e12 for i in ids], "level",
                           tags=["G-7b proposed max", "G-7a proposed avg", "G-7d GemmExample max",
                                 "G-7c GemmExample avg"])
    return {"kind": "scatter", "xlabel": "random shape (index)", "ylabel": "throughput", "yunit": "FLOPS",
            "xscale": "linear", "yscale": "linear",
            "series": [_series("proposed (padding)", idx, [t * 1e12 for t in proposed]),
                       _series("proposed, no padding", idx, [t * 1e12 for t in unpadded]),
                       _series("GemmExample", idx, [t * 1e12 for t in example]), levels],
            "notes": [f"first {len(shapes)} shapes of random-5000 (M, N, K uniform in [256, 10000])"]}


@_with_units
def hgemm_fig11(ctx):
    from ascendbench.reference.hgemm_claims import hpl_tflops

    rows = hpl_tflops(ctx.hw(HGEMM_HW))
    labels = [f"{m}x{n}x{k}" for (m, n, k), _ in rows]
    # the shapes come in runs of one M x N with K rising: one tick per run, centred
    groups: list[list] = []
    for i, ((m, n, _k), _t) in enumerate(rows):
        if groups and groups[-1][0] == f"{m}x{n}":
            groups[-1][2] = i
        else:
            groups.append([f"{m}x{n}", i, i])
    ks = sorted({k for (_m, _n, k), _t in rows})
    return _lines(f"M x N (hpl-mxp workload); within each group K rises {ks[0]} → {ks[-1]}", "throughput",
                  "FLOPS", "linear", "linear", [
        _series("proposed (simulated)", labels, [t * 1e12 for _, t in rows]),
        _paper_series(["G-8a", "G-8b"], "max and average", [labels[0], labels[-1]],
                      [paper_value("G-8a") * 1e12, paper_value("G-8b") * 1e12], "level", tags=["G-8a max", "G-8b avg"])],
        ["the paper lists no shapes: the workload samples its ranges"], xgroups=groups)


def _fixed(rows: list[list], places: int = 2) -> list[list]:
    """Table cells with every float at `places` decimals (strings), integers and text as they are."""
    return [[f"{v:.{places}f}" if isinstance(v, float) else v for v in row] for row in rows]


def table4(ctx):
    import numpy as np

    _, proposed, example = _random_tflops(ctx, TABLE4_SHAPES)
    p, e = np.array(proposed), np.array(example)
    paper = {row[0]: row for row in hgemm_tables()["table4"]["rows"]}
    rows = [["GemmExample", float(paper["gemm-example"][2]), float(e.max()), float(paper["gemm-example"][3]),
             float(e.mean()), float(paper["gemm-example"][4]), 1.0],
            ["proposed HGEMM", float(paper["proposed"][2]), float(p.max()), float(paper["proposed"][3]),
             float(p.mean()), float(paper_value("G-7e")), float(np.mean(p / e))]]
    data = {"kind": "table", "columns": ["kernel", "max TFLOPS paper", "max TFLOPS sim", "avg TFLOPS paper",
                                         "avg TFLOPS sim", "avg speed-up paper", "avg speed-up sim"],
            "rows": _fixed(rows), "series": [],
            "notes": [(f"simulated on the first {len(p)} shapes of random-5000; the paper used 5000 shapes "
                      "(`ascendbench validate --only G-7` evaluates all 5000)")]}
    data["paper"] = _paper_of(data, ("G-7a", "G-7b", "G-7c", "G-7d", "G-7e"))
    return data


def table5(ctx):
    from ascendbench.reference.hgemm_claims import time_us

    hw = ctx.hw(HGEMM_HW)
    rows = []
    for m, _tf, _us, _etf, e_us, _ptf, p_us in hgemm_tables()["table5"]["rows"]:
        rows.append([m, float(e_us), time_us(hw, (m, 28672, 7168), variant="gemm-example"), float(p_us),
                     time_us(hw, (m, 28672, 7168))])
    data = {"kind": "table", "columns": ["M", "GemmExample µs paper", "GemmExample µs sim", "proposed µs paper",
                                         "proposed µs sim"], "rows": _fixed(rows), "series": [],
            "notes": [("K = 7168, N = 28672, alpha = beta = 0.5; M = 8 and 512 of the proposed kernel are the "
                      "calibration claim G-9a (the model's L2 read bandwidth is fitted to M = 512; M = 8 is not fitted)")],
            "sources": {"fitted constant": "l2_read_bytes_per_cycle (hardware profile)"}}
    ids = [c.id for c in load_claims() if c.claim in ("G-9a", "G-9b")]
    data["paper"] = _paper_of(data, ids)
    return data


FIGURES: dict[str, Figure] = {f.id: f for f in (
    Figure("fig4.2", "scan", "single-core time of vec_only CumSum, ScanU, ScanUL1 (s=128)", "scan paper §4.1 Fig 4.2",
           fig_4_2),
    Figure("fig6.1", "scan", "MCScan bandwidth for s=32, 64, 128 and memcpy", "scan paper §6.1 Fig 6.1", fig_6_1),
    Figure("fig6.2", "scan", "MCScan vs MCScanUL1 bandwidth", "scan paper §6.1.1 Fig 6.2", fig_6_2),
    Figure("fig6.3", "scan", "MCScan with and without L2 cache splitting", "scan paper §6.1.1 Fig 6.3", fig_6_3),
    Figure("fig6.4", "scan", "phase I / phase II times of MCScan and MCScanUL1", "scan paper Fig 6.4", fig_6_4),
    Figure("fig6.5", "scan", "compress vs masked_select bandwidth", "scan paper §6.2 Fig 6.5", fig_6_5),
    Figure("fig6.6", "scan", "fp16 radix sort vs baseline sort time", "scan paper §6.3 Fig 6.6", fig_6_6),
    Figure("fig6.7", "scan", "batched scan bandwidth vs batch size, rows of 65K", "scan paper §6.4 Fig 6.7", fig_6_7),
    Figure("fig6.8", "scan", "top-p sampling time vs vocabulary size", "scan paper §6.5 Fig 6.8", fig_6_8),
    Figure("figB.2", "scan", "batched ScanUL1 / ScanU time ratio over batch and length", "scan paper B.1 Fig B.2",
           fig_b_2),
    Figure("figB.3", "scan", "MCScan elements per second, fp16 vs int8", "scan paper B.4 Fig B.3", fig_b_3),
    Figure("figB.4", "scan", "radix sort time with 16, 8, 4 passes", "scan paper B.5 Fig B.4", fig_b_4),
    Figure("hgemm-fig4", "HGEMM", "TFLOPS per M0 x N0 of Table 1, K0 = 8, square shapes", "HGEMM paper §4.2.2 Fig 4",
           hgemm_fig4),
    Figure("hgemm-fig5", "HGEMM", "TFLOPS vs K0, M0 = N0 = 32, square shapes", "HGEMM paper §4.2.2 Fig 5",
           hgemm_fig5),
    Figure("hgemm-fig6", "HGEMM", "TFLOPS of every candidate tiling, three shapes of equal flops",
           "HGEMM paper §4.2.3 Fig 6", hgemm_fig6),
    Figure("hgemm-fig10", "HGEMM", "TFLOPS over random shapes, with and without padding",
           "HGEMM paper §5.2 Fig 10", hgemm_fig10),
    Figure("hgemm-fig11", "HGEMM", "TFLOPS on HPL-MxP shapes", "HGEMM paper §5.3 Fig 11", hgemm_fig11),
    Figure("table4", "HGEMM", "random workloads: max / average TFLOPS and speed-up", "HGEMM paper §5.2 Table 4",
           table4),
    Figure("table5", "HGEMM", "OPT FFN shapes: durations", "HGEMM paper §5.4 Table 5", table5),
)}


def figure_ids() -> list[str]:
    return list(FIGURES)


# ---- drawing ------------------------------------------------------------------------------------------------

NOTE_FONTSIZE = 8.5
LEGEND_ROW_IN = 0.22  # a legend row above a panel (9 pt text and spacing), added to the figure's height


def render(fig: Figure, data: dict[str, Any]):
    """The matplotlib figure (Agg backend) of one figure's data, in the project's style (plotting.STYLE:
    nothing under 8 pt): 10 x 5 in (6.8 in with a second panel) with each panel's legend above it, in as many
    columns as fit, so the data get the whole width; 4 in per panel of bars-panels, tables sized to their
    cells. The papers' tags are placed where they cover no data marker. The caller closes it
    (matplotlib.pyplot.close).

    Raises KeyError, TypeError, ValueError or IndexError for data that is not a figure's (missing keys)."""
    import matplotlib

    matplotlib.use("Agg")
    with style():
        return _render(fig, data)


def _render(fig: Figure, data: dict[str, Any]):
    import matplotlib.pyplot as plt

    kind = data["kind"]
    second = data.get("second")
    if kind == "table":
        return _table(fig, data)
    if kind == "bars-panels":
        width, height = 4.2 * len(data["series"]), 0.26 * max(len(s["x"]) for s in data["series"]) + 1.6
    elif kind == "heatmap":
        width, height = 1.0 * len(data["x"]) + 2.8, 0.33 * len(data["y"]) + 2.0
    else:
        width, height = 10.0, (6.8 if second else 5.0)
    notes = _wrap("\n".join(data.get("notes", [])), width, NOTE_FONTSIZE)
    # below the plot: the notes' lines at 1.25 line spacing and a margin, added to the figure's height
    notes_height = (notes.count("\n") + 1) * NOTE_FONTSIZE * 1.3 / 72 + 0.15 if notes else 0.0
    if kind == "bars-panels":
        figure, axes = plt.subplots(1, len(data["series"]), figsize=(width, height), squeeze=False, sharex=True)
        axes = list(axes[0])
    elif second:
        figure, axes = plt.subplots(2, 1, figsize=(width, height), sharex=True, squeeze=False,
                                    gridspec_kw={"height_ratios": (2.2, 1)})
        axes = [axes[0][0], axes[1][0]]
    else:
        figure, ax0 = plt.subplots(figsize=(width, height))
        axes = [ax0]
    ax = axes[0]
    tags: list[tuple] = []  # the papers' tags, placed once the layout is final
    if kind in ("lines", "scatter"):
        looks: dict[str, dict] = {}  # one look per label across the panels (ScanU the same in both)
        _draw_lines(ax, data, kind, looks, tags)
        if second:
            _draw_lines(axes[1], {**second, "xscale": data["xscale"]}, "lines", looks, tags)
            axes[1].set_xlabel(data["xlabel"])
            ax.set_xlabel("")
        else:
            ax.set_xlabel(data["xlabel"])
        for ax_i in axes:  # after both panels: a shared x axis' scale is set by each
            if ax_i.get_xscale() == "log" and ax_i is ax:
                _log_ticks(ax_i.xaxis, [v for line in ax_i.lines for v in line.get_xdata()])
            if ax_i.get_yscale() == "log":
                _log_ticks(ax_i.yaxis, [v for line in ax_i.lines for v in line.get_ydata()])
    elif kind == "bars":
        import numpy as np

        groups = data["series"][0]["x"]
        bar = 0.8 / len(data["series"])
        pos = np.arange(len(groups))
        for i, s in enumerate(data["series"]):
            ax.bar(pos + i * bar - 0.4 + bar / 2, s["y"], bar, label=s["label"])
        ax.set_xticks(pos, groups)
        ax.set_xlabel(data["xlabel"])
        ax.set_ylabel(data["ylabel"])
        ax.grid(True, axis="y")
        ax.grid(False, axis="x")
    elif kind == "bars-panels":
        from matplotlib.patches import Patch

        for ax_i, s in zip(axes, data["series"]):
            colors = ["tab:red" if x == s["selected"] else "tab:blue" for x in s["x"]]
            ax_i.barh(range(len(s["x"])), s["y"], color=colors)
            ax_i.set_yticks(range(len(s["x"])), s["x"])
            ax_i.set_title(s["label"])
            ax_i.set_xlabel(data["ylabel"])  # the values run along x
            ax_i.grid(True, axis="x")
            ax_i.grid(False, axis="y")
        axes[0].set_ylabel(data["xlabel"])
        axes[-1].legend(handles=[Patch(color="tab:red", label="selector's tiling"),
                                 Patch(color="tab:blue", label="other candidates")], loc="lower right")
    elif kind == "heatmap":
        _heatmap(figure, ax, data)
    rows = sum(_legend(ax_i, width) for ax_i in axes) if kind in ("lines", "scatter", "bars") else 0
    height += notes_height + rows * LEGEND_ROW_IN
    figure.set_size_inches(width, height)
    figure.suptitle(_wrap(f"{fig.caption}\n(simulated; {fig.source})", width, 11))
    if notes:
        figure.text(0.01, 0.04 / height, notes, fontsize=NOTE_FONTSIZE, va="bottom")
    figure.tight_layout(rect=(0.015, notes_height / height, 1, 1))  # rotated tick labels reach left of the axes
    _place_tags(figure, tags)
    return figure


def _positions(series_x, categories: list[str] | None):
    """x values to plot: numbers as they are, category labels as their index among `categories`."""
    if categories is None:
        return series_x
    return [categories.index(x) for x in series_x]


# Where a tag may go, in order of preference: (anchor, dx, dy, ha, va), offsets in points from the anchor. A
# point's tag around its marker; a level's above or below its right end, then its left end, then farther off.
_POINT_SPOTS = [("point", dx, dy, ha, va) for dx, dy, ha, va in (
    (0, 8, "center", "bottom"), (0, -8, "center", "top"), (-8, 0, "right", "center"), (8, 0, "left", "center"),
    (-7, 7, "right", "bottom"), (7, 7, "left", "bottom"), (-7, -7, "right", "top"), (7, -7, "left", "top"),
    (0, 22, "center", "bottom"), (0, -22, "center", "top"), (-22, 0, "right", "center"), (-22, 14, "right", "bottom"),
    (-22, -14, "right", "top"))]
_LEVEL_SPOTS = [(end, dx, dy, ha, va) for end, dx, dy, ha, va in (
    ("end", 0, 5, "right", "bottom"), ("end", 0, -5, "right", "top"), ("start", 0, 5, "left", "bottom"),
    ("start", 0, -5, "left", "top"), ("mid", 0, 5, "center", "bottom"), ("mid", 0, -5, "center", "top"),
    ("end", -40, 5, "right", "bottom"), ("end", -40, -5, "right", "top"), ("start", 40, 5, "left", "bottom"),
    ("start", 40, -5, "left", "top"))]


def _draw_lines(ax, panel: dict[str, Any], kind: str, looks: dict[str, dict], tags: list[tuple]) -> None:
    """The series of one panel: simulated in varying colours, markers and line styles (`looks`: label ->
    style, shared by the panels of a figure), the paper's in PAPER_POINT / PAPER_LEVEL with each value's tag
    (appended to `tags` as (axes, annotation, anchors, spots, own level line) for _place_tags); the panel's
    labels and scales. With "xgroups" ([label, first, last] per run of categories) one tick per run, centred."""
    series = panel["series"]
    first = next((s for s in series if s["origin"] != "paper"), series[0])
    categories = first["x"] if first["x"] and isinstance(first["x"][0], str) else None
    for s in series:
        if s["origin"] != "paper":
            if s["label"] not in looks:
                looks[s["label"]] = {"color": f"C{len(looks) % 10}", **simulated_style(len(looks))}
            look = looks[s["label"]]
            if kind == "scatter":
                ax.plot(s["x"], s["y"], marker=".", linestyle="none", markersize=4, color=look["color"],
                        label=s["label"])
            else:
                ax.plot(_positions(s["x"], categories), s["y"], label=s["label"], **look)
        elif s.get("style") == "level":
            x0, x1 = _positions([s["x"][0], s["x"][-1]], categories)
            for i, y in enumerate(s["y"]):
                (level,) = ax.plot([x0, x1], [y, y], label=s["label"] if i == 0 else None, **PAPER_LEVEL)
                if s.get("tags"):
                    note = ax.annotate(s["tags"][i], (x1, y), xytext=(0, 0), textcoords="offset points",
                                       fontsize=8.5, bbox=_TAG_BOX, zorder=7, in_layout=False)
                    mid = (x0 * x1) ** 0.5 if panel.get("xscale") == "log" and categories is None else (x0 + x1) / 2
                    tags.append((ax, note, {"start": (x0, y), "mid": (mid, y), "end": (x1, y)}, _LEVEL_SPOTS,
                                 level))
        else:
            ax.plot(_positions(s["x"], categories), s["y"], label=s["label"], **PAPER_POINT)
            for x, y, tag in zip(_positions(s["x"], categories), s["y"], s.get("tags") or []):
                note = ax.annotate(tag, (x, y), xytext=(0, 0), textcoords="offset points", fontsize=8.5,
                                   bbox=_TAG_BOX, zorder=7, in_layout=False)  # placed inside the axes later
                tags.append((ax, note, {"point": (x, y)}, _POINT_SPOTS, None))
    ax.grid(True, which="major")
    if categories is not None and panel.get("xgroups"):
        groups = panel["xgroups"]
        ax.set_xticks([(a + b) / 2 for _, a, b in groups], [label for label, _, _ in groups])
        ax.grid(False, axis="x")  # a rule between runs instead of one through each
        for _, _, last in groups[:-1]:  # a light rule between runs
            ax.axvline(last + 0.5, color="grey", linewidth=0.8, alpha=0.5, zorder=0)
    elif categories is not None:
        ticks = range(0, len(categories), max(1, math.ceil(len(categories) / 8)))
        ax.set_xticks(list(ticks), [categories[i] for i in ticks], rotation=25, ha="right")
    else:
        ax.set_xscale(panel.get("xscale", "linear"))
    ax.set_yscale(panel["yscale"])
    ax.set_ylabel(panel["ylabel"])


_TAG_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 0.5}


def _legend(ax, width_in: float) -> int:
    """The axes' legend above it, in as many columns as fit the figure's width; returns its rows (0: none)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return 0
    renderer = ax.figure.canvas.get_renderer()
    room = (width_in - 1.6) * ax.figure.dpi  # less the y axis and its labels
    n = len(handles)

    def place(ncols: int):
        # matplotlib fills a legend column by column: order the entries so that they read along the rows
        rows = math.ceil(n / ncols)
        order = [i * ncols + j for j in range(ncols) for i in range(rows) if i * ncols + j < n]
        return ax.legend([handles[i] for i in order], [labels[i] for i in order], loc="lower left",
                         bbox_to_anchor=(0.0, 1.01), borderaxespad=0.0, frameon=False, ncols=ncols,
                         columnspacing=1.5)

    ncols = n
    while ncols > 1 and place(ncols).get_window_extent(renderer).width > room:
        ncols -= 1
    rows = math.ceil(n / ncols)
    place(math.ceil(n / rows))  # as few rows, filled evenly (5 entries: 3 + 2, not 4 + 1)
    return rows


def _log_ticks(axis, values) -> None:
    """Readable ticks on a log axis: values from 0.001 to 9,999 as plain numbers (0.2, 1, 50, not 10^x);
    a few powers of 2 under 10,000 (batch sizes) each a tick; and over at most 3 decades the 2s and 5s
    labelled too, so that a tick lies near the data."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

    def plain(v, _pos=None):
        if v <= 0:
            return ""
        if 1e-3 <= v < 1e4:
            return f"{v:,.6g}"
        exponent = round(math.log10(v))
        return f"$10^{{{exponent}}}$" if math.isclose(v, 10.0 ** exponent, rel_tol=1e-9) else ""

    data = sorted({float(v) for v in values if v > 0 and math.isfinite(v)})
    if not data:
        return
    if len(data) <= 12 and data[-1] < 1e4 and all(v.is_integer() and int(v) & (int(v) - 1) == 0 for v in data):
        axis.set_major_locator(FixedLocator(data))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos=None: f"{v:,.0f}"))
        axis.set_minor_locator(NullLocator())
        return
    axis.set_major_formatter(FuncFormatter(plain))
    if math.log10(data[-1] / data[0]) <= 3:
        axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        axis.set_minor_formatter(FuncFormatter(plain))
    else:
        axis.set_minor_formatter(NullFormatter())


def _obstacles(ax, skip) -> tuple:
    """The data of `ax` in display pixels: marker centres with their radii, and points every 2 px along the
    drawn lines (but `skip`, a tag's own level)."""
    import numpy as np

    centres, radii, along = [], [], []
    for line in ax.lines:
        if not line.get_visible() or line is skip:
            continue
        xy = line.get_transform().transform(line.get_xydata())
        if line.get_marker() not in (None, "None", "", " "):
            centres.append(xy)
            radii += [line.get_markersize() / 2 * ax.figure.dpi / 72 + 1] * len(xy)
        if line.get_linestyle() not in ("None", "", " ") and len(xy) > 1:
            for a, b in zip(xy[:-1], xy[1:]):
                steps = max(2, int(np.hypot(*(b - a)) / 2))
                along.append(a + np.linspace(0, 1, steps)[:, None] * (b - a))
    return (np.concatenate(centres) if centres else np.empty((0, 2)), np.array(radii),
            np.concatenate(along) if along else np.empty((0, 2)))


def _place_tags(figure, tags: list[tuple]) -> None:
    """Put each paper tag at the first of its spots where it lies inside its axes and covers no data marker,
    no tag placed before it and no drawn line; else where it covers the fewest (markers and tags first)."""
    if not tags:
        return
    renderer = figure.canvas.get_renderer()
    placed: dict[int, list] = {}
    for ax, note, anchors, spots, own in tags:
        centres, radii, along = _obstacles(ax, own)
        inside = ax.get_window_extent(renderer)
        best = None
        for spot in spots:
            _put(note, anchors, *spot)
            box = _tag_box(note, renderer)
            on_marker = ((centres[:, 0] > box.x0 - radii) & (centres[:, 0] < box.x1 + radii)
                         & (centres[:, 1] > box.y0 - radii) & (centres[:, 1] < box.y1 + radii)).sum()
            on_line = ((along[:, 0] > box.x0) & (along[:, 0] < box.x1) & (along[:, 1] > box.y0)
                       & (along[:, 1] < box.y1)).sum()
            out = box.x0 < inside.x0 or box.x1 > inside.x1 or box.y0 < inside.y0 or box.y1 > inside.y1
            score = 1000 * out + 100 * (on_marker + sum(box.overlaps(t) for t in placed.get(id(ax), ()))) + on_line
            if best is None or score < best[0]:
                best = (score, spot)
            if score == 0:
                break
        _put(note, anchors, *best[1])
        placed.setdefault(id(ax), []).append(_tag_box(note, renderer))


def _tag_box(note, renderer):
    """A tag's box as drawn (its white patch; matplotlib moves the patch only when drawing the text)."""
    note.update_positions(renderer)
    note.update_bbox_position_size(renderer)
    return note.get_bbox_patch().get_window_extent(renderer)


def _put(note, anchors, anchor, dx, dy, ha, va) -> None:
    note.xy, note.xyann = anchors[anchor], (dx, dy)
    note.set_horizontalalignment(ha)
    note.set_verticalalignment(va)



def _log_index(values: list[float], value: float) -> float:
    """Where `value` falls among the cells of a log-spaced heat-map axis (cell centres at 0, 1, ...)."""
    logs = [math.log(v) for v in values]
    lv = math.log(value)
    for i in range(len(logs) - 1):
        if logs[i] <= lv <= logs[i + 1]:
            return i + (lv - logs[i]) / (logs[i + 1] - logs[i])
    return 0.0 if lv < logs[0] else len(logs) - 1.0


def _cell_edge(index: float, count: int) -> float:
    """The cell edge of a heat-map axis nearest a position (`index`, from _log_index): between the two cells
    it falls between, or below the cell it names exactly; so that a line there strikes no cell's number."""
    edge = index - 0.5 if float(index).is_integer() else math.floor(index) + 0.5
    return min(max(edge, -0.5), count - 0.5)


def _heatmap(figure, ax, data: dict[str, Any]) -> None:
    from matplotlib.colors import TwoSlopeNorm

    z = data["z"]
    norm = TwoSlopeNorm(vcenter=1.0, vmin=min(0.5, min(map(min, z))), vmax=max(1.5, max(map(max, z))))
    im = ax.imshow(z, origin="lower", cmap="coolwarm", aspect="auto", norm=norm)
    ax.set_xticks(range(len(data["x"])), [f"{v:,}" for v in data["x"]])
    ax.set_yticks(range(len(data["y"])), data["y"])
    ax.grid(False)
    for i, row in enumerate(z):
        for j, v in enumerate(row):
            dark = abs(norm(v) - 0.5) > 0.35
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8, color="white" if dark else "black")
    for s in data["series"]:  # the paper's crossover, on the cells' edges (not through their numbers)
        col = _cell_edge(_log_index(data["x"], s["x"][0]), len(data["x"]))
        row = _cell_edge(_log_index(data["y"], s["y"][0]), len(data["y"]))
        ax.axvline(col, label=s["label"], **PAPER_LEVEL)
        ax.axhline(row, **PAPER_LEVEL)
    figure.colorbar(im, ax=ax, label=data["zlabel"])
    ax.set_xlabel(data["xlabel"])
    ax.set_ylabel(data["ylabel"])
    if data["series"]:
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), borderaxespad=0.0, frameon=False)


def _table(fig: Figure, data: dict[str, Any]):
    """A table as a figure just large enough for its cells, the caption above, the notes below."""
    import matplotlib.pyplot as plt

    columns, rows = data["columns"], data["rows"]
    cells = [[str(v) for v in r] for r in rows]
    # column widths from the longest text, in inches at 10 pt (DejaVu Sans averages under 0.6 em)
    widths = [max(len(str(head)) * 0.7, *(len(c) * 0.6 for c in col)) * 10 / 72 + 0.25  # bold heads wider
              for head, *col in zip(columns, *cells)]
    width = max(sum(widths), 5.0)
    notes = _wrap("\n".join(data.get("notes", [])), width, NOTE_FONTSIZE)
    title = _wrap(f"{fig.caption}\n(simulated; {fig.source})", width, 11)
    row_in = 0.3
    notes_in = (notes.count("\n") + 1) * NOTE_FONTSIZE * 1.3 / 72 + 0.1 if notes else 0.0
    title_in = (title.count("\n") + 1) * 11 * 1.3 / 72 + 0.15
    table_in = row_in * (len(rows) + 1)
    height = title_in + table_in + notes_in + 0.1
    figure = plt.figure(figsize=(width, height))
    ax = figure.add_axes((0, (notes_in + 0.05) / height, 1, table_in / height))
    ax.axis("off")
    table = ax.table(cellText=cells, colLabels=columns, colWidths=[w / width for w in widths], loc="center",
                     cellLoc="right", bbox=(0, 0, sum(widths) / width, 1))
    table.auto_set_font_size(False)
    table.set_fontsize(10)
    for (r, _c), cell in table.get_celld().items():
        if r == 0:
            cell.set_text_props(fontweight="bold")
            cell.set_facecolor("#eeeeee")
    figure.text(0.5, 1 - 0.05 / height, title, ha="center", va="top", fontsize=11)
    if notes:
        figure.text(0.01, 0.05 / height, notes, fontsize=NOTE_FONTSIZE, va="bottom")
    return figure


def _wrap(text: str, width_in: float, fontsize: float) -> str:
    """`text` with each line wrapped to fit `width_in` inches at `fontsize` points (DejaVu Sans letters
    average under 0.6 em; 0.62 leaves room for wide ones)."""
    import textwrap

    chars = max(20, int((width_in - 0.2) * 72 / (0.62 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


def draw(fig: Figure, data: dict[str, Any], path, fmt: str = "png", dpi: int = DEFAULT_DPI) -> None:
    """Write one figure's data as `fmt` (png, svg or pdf; `dpi` dots per inch for PNG) to `path`, a file name
    or a binary file object."""
    import matplotlib.pyplot as plt

    figure = render(fig, data)
    try:
        with style():
            save_figure(figure, path, fmt, dpi)
    finally:
        plt.close(figure)
