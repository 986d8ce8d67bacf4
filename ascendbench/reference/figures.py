"""The papers' figures and tables redrawn from the simulator: data producers and matplotlib drawing.

Each figure is a `Figure` with an ID (`fig4.2`, `hgemm-fig4`, `table5`, ...), the paper's caption in our words,
its source, and `compute(ctx)` returning the plotted data as JSON-ready dicts:
    {"kind": "lines" | "bars" | "barh" | "heatmap" | "table", "xlabel", "ylabel", "xscale", "yscale",
     "series": [{"label", "x", "y", "origin": "simulated" | "paper"}], "notes": [...], ...}
Series with origin "paper" are the numbers the paper publishes (claims.toml, hgemm_tables.toml); everything
else is simulated with the same kernels and timing model `ascendbench run` uses. Axes follow the papers
(log-log where the paper is). `render(fig, data)` draws it with matplotlib, `draw(fig, data, path, fmt, dpi)`
writes it as PNG, SVG or PDF.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ascendbench.plotting import DEFAULT_DPI, save_figure
from ascendbench.reference.claims import Context, hgemm_tables, paper_value

__all__ = ["FIGURES", "Figure", "draw", "figure_ids", "render"]

SCAN_HW, HGEMM_HW = "ascend-910b4", "atlas-300t-a2"
STEP = 20 * 128 * 128  # the scan paper's sweep step: n = i * 20 * s^2
SWEEP = [i * STEP for i in (1, 2, 4, 8, 16, 32, 61, 122, 183, 244, 305)]
SINGLE = [128 * 128 * 2**k for k in range(12)]  # single-core sweep, 16K ... 33.5M


@dataclass(frozen=True)
class Figure:
    """One redrawable figure or table: id, paper ("scan" or "HGEMM"), caption (ours), source, compute."""

    id: str
    paper: str
    caption: str
    source: str
    compute: Callable[[Context], dict[str, Any]]


def _series(label, x, y, origin="simulated", **extra) -> dict[str, Any]:
    return {"label": label, "x": list(x), "y": [float(v) for v in y], "origin": origin, **extra}


# ---- scan paper ---------------------------------------------------------------------------------------------

WINDOW_NOTE = ("times as the paper's profiling script takes them: the kernel inside its wrapper's host window "
               "(sim/host.py); each series' kernel_y in the JSON is the kernel alone")


def _scan_window(hw, kernel, n, **params):
    from ascendbench.reference.scan_claims import window

    return window(kernel, n, hw, **params)


def _scan_series(label, sizes, hw, kernel, unit, **params) -> dict[str, Any]:
    """One scan sweep as timed (y) and as the kernel alone (kernel_y); unit "ms", "GB/s" or "Gelem/s"."""
    from ascendbench.kernels import ScanParams

    p = ScanParams(**params)

    def value(n, seconds):
        return {"ms": seconds * 1e3, "GB/s": n * (p.in_bytes + p.out_bytes) / seconds / 1e9,
                "Gelem/s": n / seconds / 1e9}[unit]

    windows = [_scan_window(hw, kernel, n, **params) for n in sizes]
    return _series(label, sizes, [value(n, w.window_s) for n, w in zip(sizes, windows)],
                   kernel_y=[value(n, w.kernel_s) for n, w in zip(sizes, windows)])


def fig_4_2(ctx):
    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(label, SINGLE, hw, k, "ms")
              for label, k in (("vec_only (CumSum)", "vec-cumsum"), ("ScanU", "scanu"), ("ScanUL1", "scanul1"))]
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "time (ms)", "xscale": "log", "yscale": "log",
            "series": series, "notes": [WINDOW_NOTE, (f"paper (large n): ScanU {paper_value('S-1')}x and ScanUL1 "
                                        f"{paper_value('S-2')}x faster than vec_only; simulated at n={SINGLE[-1]:,}: "
                                        f"{series[0]['y'][-1] / series[1]['y'][-1]:.2f}x and "
                                        f"{series[0]['y'][-1] / series[2]['y'][-1]:.2f}x")]}


def fig_6_1(ctx):
    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(f"MCScan s={s}", SWEEP, hw, "mcscan", "GB/s", s=s) for s in (32, 64, 128)]
    series.append(_scan_series("memcpy", SWEEP, hw, "memcpy", "GB/s", out_dtype="fp32"))
    peak = paper_value("S-4") * hw.hbm_bandwidth_gbps
    series.append(_series("paper: MCScan s=128 peak (37.5% of 800 GB/s)", [SWEEP[-1]], [peak], "paper"))
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "bandwidth (GB/s)", "xscale": "log",
            "yscale": "linear", "series": series,
            "notes": [WINDOW_NOTE, "the torch.cumsum baseline of the paper is not modelled (vector-only multi-core cumsum)"]}


def fig_6_2(ctx):
    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(label, SWEEP, hw, k, "GB/s") for label, k in (("MCScan", "mcscan"), ("MCScanUL1", "mcscan-ul1"))]
    series.append(_scan_series("memcpy", SWEEP, hw, "memcpy", "GB/s", out_dtype="fp32"))
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "bandwidth (GB/s)", "xscale": "log",
            "yscale": "linear", "series": series,
            "notes": [WINDOW_NOTE, (f"paper: MCScanUL1 {paper_value('S-8a')}x MCScan, {paper_value('S-8b') * 100:.1f}% of memcpy; "
                      f"simulated at n={SWEEP[-1]:,}: {series[1]['y'][-1] / series[0]['y'][-1]:.2f}x, "
                      f"{series[1]['y'][-1] / series[2]['y'][-1] * 100:.1f}%")]}


def fig_6_3(ctx):
    hw = ctx.hw(SCAN_HW)
    split = _scan_series("MCScan s=128, L2 cache splitting", SWEEP, hw, "mcscan", "GB/s")
    whole = _scan_series("MCScan s=128, no splitting", SWEEP, hw, "mcscan", "GB/s", chunk=0)
    on, off = split["y"], whole["y"]
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "bandwidth (GB/s)", "xscale": "log",
            "yscale": "linear", "series": [split, whole],
            "notes": [WINDOW_NOTE, (f"paper: +{paper_value('S-7') * 100:.0f}% with splitting; simulated at n={SWEEP[-1]:,}: "
                      f"+{(on[-1] / off[-1] - 1) * 100:.0f}%")]}


def fig_6_4(ctx):
    from ascendbench.kernels import SCAN_KERNELS, ScanParams

    hw = ctx.hw(SCAN_HW)
    sizes = [SWEEP[4], SWEEP[7], SWEEP[-1]]
    series = []
    for label, k in (("MCScan", "mcscan"), ("MCScanUL1", "mcscan-ul1")):
        sims = [SCAN_KERNELS[k].simulate(n, ScanParams(), hw) for n in sizes]
        for phase in ("phase I", "phase II"):
            series.append(_series(f"{label} {phase}", [f"{n:,}" for n in sizes],
                                  [s.phases[phase] * 1e3 for s in sims]))
    return {"kind": "bars", "xlabel": "n (elements)", "ylabel": "time (ms)", "xscale": "linear", "yscale": "linear",
            "series": series, "notes": ["paper: phase I of MCScanUL1 slightly longer, phase II much shorter"]}


def fig_6_5(ctx):
    from ascendbench.kernels.split import simulate_compress

    hw = ctx.hw(SCAN_HW)
    fast = [simulate_compress(n, "fp16", hw).time_s for n in SWEEP]
    slow = [simulate_compress(n, "fp16", hw, variant="scalar").time_s for n in SWEEP]
    moved = [n * 3 + (n // 2) * 2 for n in SWEEP]
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "bandwidth (GB/s)", "xscale": "log",
            "yscale": "linear",
            "series": [_series("compress (int8 MCScan, s=128)", SWEEP, [b / t / 1e9 for b, t in zip(moved, fast)]),
                       _series("masked_select (scalar baseline)", SWEEP, [b / t / 1e9 for b, t in zip(moved, slow)]),
                       _series("paper: compress peak", [SWEEP[-1]], [paper_value("S-10")], "paper")],
            "notes": ["fp16 values, uniformly random mask; the compress kernel scans its mask with s=128 only"]}


def fig_6_6(ctx):
    from ascendbench.kernels.radix_sort import simulate_radix_sort

    hw = ctx.hw(SCAN_HW)
    sizes = SWEEP[:9]
    fast = [simulate_radix_sort(n, "fp16", hw).time_s * 1e3 for n in sizes]
    base = [simulate_radix_sort(n, "fp16", hw, variant="vector").time_s * 1e3 for n in sizes]
    lo, hi = paper_value("S-11")
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "time (ms)", "xscale": "log", "yscale": "log",
            "series": [_series("radix sort (int8 MCScan)", sizes, fast), _series("baseline sort", sizes, base)],
            "notes": [(f"paper: {lo}x-{hi}x faster than the baseline for n > 525K; simulated "
                      f"{min(b / f for b, f in zip(base[1:], fast[1:])):.2f}x-"
                      f"{max(b / f for b, f in zip(base[1:], fast[1:])):.2f}x")]}


def fig_6_7(ctx):
    from ascendbench.reference.row_scan_claims import BATCHES, ROW_LENGTH, batched_bandwidth_gbps

    hw = ctx.hw(SCAN_HW)
    series = [_series(f"s={s}", BATCHES, [batched_bandwidth_gbps(hw, "scanu", b, ROW_LENGTH, s) for b in BATCHES])
              for s in (16, 32, 64, 128)]
    series.append(_series("baseline (vector only)", BATCHES,
                          [batched_bandwidth_gbps(hw, "vector", b, ROW_LENGTH, 128) for b in BATCHES]))
    series.append(_series("paper: s=64, 128 peak", [BATCHES[-1]], [paper_value("S-13 s=128")], "paper"))
    return {"kind": "lines", "xlabel": "batch size (rows of 65,536)", "ylabel": "bandwidth (GB/s)", "xscale": "log",
            "yscale": "linear", "series": series, "notes": [WINDOW_NOTE.split(";")[0]]}


def fig_6_8(ctx):
    from ascendbench.kernels.topp import simulate_top_p
    from ascendbench.reference.sampling_claims import VOCABS

    hw = ctx.hw(SCAN_HW)
    series = [_series(f"s={s}", VOCABS, [simulate_top_p(n, hw, variant="radix", s=s).sim.time_s * 1e3
                                         for n in VOCABS]) for s in (32, 64, 128)]
    series.append(_series("baseline (sort + vector cumsum)", VOCABS,
                          [simulate_top_p(n, hw, variant="baseline").sim.time_s * 1e3 for n in VOCABS]))
    return {"kind": "lines", "xlabel": "vocabulary size", "ylabel": "time (ms)", "xscale": "log", "yscale": "log",
            "series": series, "notes": ["one row (batch 1); the baseline multinomial stops at 2^24 categories"]}


def fig_b_2(ctx):
    from ascendbench.reference.row_scan_claims import CROSS_BATCHES, CROSS_LENGTHS, crossover_grid

    grid = crossover_grid(ctx.hw(SCAN_HW))
    return {"kind": "heatmap", "xlabel": "array length", "ylabel": "batch size", "x": list(CROSS_LENGTHS),
            "y": list(CROSS_BATCHES), "z": [[grid[(b, n)] for n in CROSS_LENGTHS] for b in CROSS_BATCHES],
            "zlabel": "time(ScanUL1) / time(ScanU)", "series": [],
            "notes": [WINDOW_NOTE.split(";")[0],
                      "paper: ScanU better for batch > 18 and length < 4K, ScanUL1 for batch < 18 and length > 4K"]}


def fig_b_3(ctx):
    from ascendbench.reference.row_scan_claims import INT8_SIZES

    hw = ctx.hw(SCAN_HW)
    series = [_scan_series(label, INT8_SIZES, hw, "mcscan", "Gelem/s", dtype=d)
              for label, d in (("fp16", "fp16"), ("int8", "int8"))]
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "Gelem/s", "xscale": "log", "yscale": "linear",
            "series": series, "notes": [WINDOW_NOTE, "paper: only a small gain of int8 over fp16"]}


def fig_b_4(ctx):
    from ascendbench.kernels.radix_sort import simulate_radix_sort

    hw = ctx.hw(SCAN_HW)
    sizes = SWEEP[:9]
    series = [_series(f"{p} passes", sizes, [simulate_radix_sort(n, "fp16", hw, passes=p).time_s * 1e3 for n in sizes])
              for p in (16, 8, 4)]
    return {"kind": "lines", "xlabel": "n (elements)", "ylabel": "time (ms)", "xscale": "log", "yscale": "log",
            "series": series,
            "notes": [f"paper: 8 passes {paper_value('S-12a')}x, 4 passes {paper_value('S-12b')}x faster than 16"]}


# ---- HGEMM paper --------------------------------------------------------------------------------------------

def hgemm_fig4(ctx):
    from ascendbench.kernels.hgemm_tiling import TABLE_1
    from ascendbench.reference.hgemm_claims import fig4_tflops

    sizes = (128, 256, 512, 1024, 2048, 4096)
    data = fig4_tflops(ctx.hw(HGEMM_HW), sizes)
    series = [_series(f"{m0}x{n0}", [str(s) for s in sizes], [data[s][i] * 1e3 for s in sizes])
              for i, (m0, n0) in enumerate(TABLE_1.values())]
    return {"kind": "barh", "xlabel": "GFLOPS", "ylabel": "M = N = K", "xscale": "linear", "yscale": "linear",
            "series": series, "notes": ["M0 x N0 of Table 1, K0 = 8, every optimisation off"]}


def hgemm_fig5(ctx):
    from ascendbench.reference.hgemm_claims import FIG5_K0, fig5_tflops

    hw = ctx.hw(HGEMM_HW)
    series = [_series(f"M = N = K = {s}", FIG5_K0, fig5_tflops(hw, s)) for s in (1024, 2048, 4096)]
    return {"kind": "lines", "xlabel": "K0", "ylabel": "TFLOPS", "xscale": "log", "yscale": "linear",
            "series": series, "notes": ["M0 = N0 = 32, every optimisation off"]}


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
                              [f"{m}x{n}x{k}" for _, (m, n, k) in cands], [t for t, _ in cands], selected=tile))
    return {"kind": "bars-panels", "xlabel": "M0 x N0 x K0", "ylabel": "TFLOPS", "xscale": "linear",
            "yscale": "linear", "series": series, "notes": ["every optimisation off; the selector's tiling in red"]}


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


def hgemm_fig10(ctx):
    from ascendbench.reference.hgemm_claims import random_tflops

    hw = ctx.hw(HGEMM_HW)
    shapes, proposed, example = _random_tflops(ctx, FIG10_SHAPES)
    unpadded = [random_tflops(hw, s, padding=False) for s in shapes]
    idx = list(range(len(shapes)))
    return {"kind": "scatter", "xlabel": "random shape (index)", "ylabel": "TFLOPS", "xscale": "linear",
            "yscale": "linear",
            "series": [_series("proposed (padding)", idx, proposed), _series("proposed, no padding", idx, unpadded),
                       _series("GemmExample", idx, example)],
            "notes": [f"first {len(shapes)} shapes of random-5000 (M, N, K uniform in [256, 10000])"]}


def hgemm_fig11(ctx):
    from ascendbench.reference.hgemm_claims import hpl_tflops

    rows = hpl_tflops(ctx.hw(HGEMM_HW))
    values = [t for _, t in rows]
    labels = [f"{m}x{n}x{k}" for (m, n, k), _ in rows]
    return {"kind": "lines", "xlabel": "M x N x K (hpl-mxp workload)", "ylabel": "TFLOPS", "xscale": "linear",
            "yscale": "linear", "series": [
                _series("proposed (simulated)", labels, values),
                _series("paper: max", labels, [paper_value("G-8a")] * len(labels), "paper"),
                _series("paper: average", labels, [paper_value("G-8b")] * len(labels), "paper")],
            "notes": ["the paper lists no shapes: the workload samples its ranges"]}


def table4(ctx):
    import numpy as np

    _, proposed, example = _random_tflops(ctx, TABLE4_SHAPES)
    p, e = np.array(proposed), np.array(example)
    paper = {row[0]: row for row in hgemm_tables()["table4"]["rows"]}
    rows = [["GemmExample", paper["gemm-example"][2], round(float(e.max()), 2), paper["gemm-example"][3],
             round(float(e.mean()), 2), paper["gemm-example"][4], 1.0],
            ["proposed HGEMM", paper["proposed"][2], round(float(p.max()), 2), paper["proposed"][3],
             round(float(p.mean()), 2), paper_value("G-7e"), round(float(np.mean(p / e)), 2)]]
    return {"kind": "table", "columns": ["kernel", "max TFLOPS paper", "max sim", "avg TFLOPS paper", "avg sim",
                                         "avg speed-up paper", "avg speed-up sim"], "rows": rows, "series": [],
            "notes": [(f"simulated on the first {len(p)} shapes of random-5000; the paper used 5000 shapes "
                      "(`ascendbench validate --only G-7` evaluates all 5000)")]}


def table5(ctx):
    from ascendbench.reference.hgemm_claims import time_us

    hw = ctx.hw(HGEMM_HW)
    rows = []
    for m, _tf, _us, _etf, e_us, _ptf, p_us in hgemm_tables()["table5"]["rows"]:
        rows.append([m, e_us, round(time_us(hw, (m, 28672, 7168), variant="gemm-example"), 2), p_us,
                     round(time_us(hw, (m, 28672, 7168)), 2)])
    return {"kind": "table", "columns": ["M", "GemmExample µs paper", "GemmExample µs sim", "proposed µs paper",
                                         "proposed µs sim"], "rows": rows, "series": [],
            "notes": [("K = 7168, N = 28672, alpha = beta = 0.5; M = 8 and 512 of the proposed kernel are the "
                      "calibration claim G-9a (l2_read_bytes_per_cycle is fitted on M = 512; M = 8 is not fitted)")]}


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
    Figure("figB.3", "scan", "MCScan Gelem/s, fp16 vs int8", "scan paper B.4 Fig B.3", fig_b_3),
    Figure("figB.4", "scan", "radix sort time with 16, 8, 4 passes", "scan paper B.5 Fig B.4", fig_b_4),
    Figure("hgemm-fig4", "HGEMM", "GFLOPS per M0 x N0 of Table 1, K0 = 8, square shapes", "HGEMM paper §4.2.2 Fig 4",
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

def render(fig: Figure, data: dict[str, Any]):
    """The matplotlib figure (Agg backend) of one figure's data: 7 x 4.5 in, 9.5 in wide with a legend beside
    the plot, 4 in per panel. The caller closes it (matplotlib.pyplot.close)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kind = data["kind"]
    panels = len(data["series"]) if kind == "bars-panels" else 1
    height = 1.6 + 0.3 * len(data["rows"]) if kind == "table" else 4.5
    legend = kind not in ("table", "bars-panels", "heatmap")
    width = 4 * panels if panels > 1 else (9.5 if legend else 7)  # room for the legend beside the plot
    notes = _wrap("\n".join(data.get("notes", [])), width, NOTE_FONTSIZE)
    # below the plot: the notes' lines at 1.25 line spacing and a margin, added to the figure's height
    notes_height = (notes.count("\n") + 1) * NOTE_FONTSIZE * 1.25 / 72 + 0.1 if notes else 0.0
    height += notes_height
    figure, axes = plt.subplots(1, panels, figsize=(width, height), squeeze=False)
    ax = axes[0][0]
    if kind in ("lines", "scatter"):
        for s in data["series"]:
            if s["origin"] == "paper" and len(s["x"]) > 1:
                style = {"linestyle": "--", "color": "black" if "max" in s["label"] else "gray"}
            elif s["origin"] == "paper":
                style = {"marker": "*", "markersize": 14, "linestyle": "none", "color": "black"}
            else:
                style = {"marker": "o", "markersize": 3} if kind == "lines" else {"marker": ".", "linestyle": "none",
                                                                                   "markersize": 3}
            ax.plot(s["x"] if not isinstance(s["x"][0], str) else range(len(s["x"])), s["y"], label=s["label"],
                    **style)
        if isinstance(data["series"][0]["x"][0], str):
            labels = data["series"][0]["x"]
            ticks = range(0, len(labels), max(1, len(labels) // 8))
            ax.set_xticks(list(ticks), [labels[i] for i in ticks], rotation=30, fontsize=7)
    elif kind in ("bars", "barh"):
        import numpy as np

        groups = data["series"][0]["x"]
        bar = 0.8 / len(data["series"])
        pos = np.arange(len(groups))
        for i, s in enumerate(data["series"]):
            (ax.barh if kind == "barh" else ax.bar)(pos + i * bar - 0.4 + bar / 2, s["y"], bar, label=s["label"])
        (ax.set_yticks if kind == "barh" else ax.set_xticks)(pos, groups)
    elif kind == "bars-panels":
        for ax_i, s in zip(axes[0], data["series"]):
            colors = ["tab:red" if x == s["selected"] else "tab:blue" for x in s["x"]]
            ax_i.bar(range(len(s["x"])), s["y"], color=colors)
            ax_i.set_xticks(range(len(s["x"])), s["x"], rotation=90, fontsize=6)
            ax_i.set_title(s["label"], fontsize=8)
            ax_i.set_ylabel(data["ylabel"])
    elif kind == "heatmap":
        im = ax.imshow(data["z"], origin="lower", cmap="coolwarm", aspect="auto", vmin=0, vmax=2)
        ax.set_xticks(range(len(data["x"])), data["x"], rotation=45, fontsize=7)
        ax.set_yticks(range(len(data["y"])), data["y"], fontsize=7)
        for i, row in enumerate(data["z"]):
            for j, v in enumerate(row):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=5)
        figure.colorbar(im, ax=ax, label=data["zlabel"])
    elif kind == "table":
        ax.axis("off")
        table = ax.table(cellText=[[str(v) for v in r] for r in data["rows"]], colLabels=data["columns"],
                         loc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(7)
        table.auto_set_column_width(range(len(data["columns"])))  # wide enough for each column's text
        table.scale(1, 1.3)
    if kind not in ("table", "bars-panels"):
        ax.set_xlabel(data["xlabel"])
        ax.set_ylabel(data["ylabel"])
        if kind != "heatmap":
            if kind not in ("bars", "barh"):  # setting a scale would reset the category tick labels
                if not isinstance(data["series"][0]["x"][0], str):
                    ax.set_xscale(data["xscale"])
                ax.set_yscale(data["yscale"])
            ax.grid(True, which="both", alpha=0.3)
            # beside the plot, not over the curves
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    figure.suptitle(_wrap(f"{fig.caption}\n(simulated; {fig.source})", width, 9), fontsize=9)
    if notes:
        figure.text(0.01, 0.02 / height, notes, fontsize=NOTE_FONTSIZE, va="bottom")
    figure.tight_layout(rect=(0, notes_height / height, 1, 1))
    return figure


NOTE_FONTSIZE = 6


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
        save_figure(figure, path, fmt, dpi)
    finally:
        plt.close(figure)
