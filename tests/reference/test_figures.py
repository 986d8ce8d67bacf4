"""The redrawn figures: every kind keeps its text inside the figure and none under 8 pt; each series' unit is
its axis label's, with the SI prefix chosen per axis; the papers' values are drawn (with their claim IDs)
wherever claims.toml or the HGEMM tables give them, and each figure without them says why."""

import json
import math
import re

import matplotlib
import matplotlib.pyplot as plt
import pytest

from ascendbench.plotting import MIN_FONT_PT, si_scale
from ascendbench.reference.claims import Context, hgemm_tables, load_claims, paper_value
from ascendbench.reference.figures import FIGURES, Figure, render

matplotlib.use("Agg")

# Longer than any note the figures carry (table5's, 190 characters, was cut at the right edge).
LONG_NOTE = ("K = 7168, N = 28672, alpha = beta = 0.5; M = 8 and 512 of the proposed kernel are the calibration "
             "claim G-9a (l2_read_bytes_per_cycle is fitted on M = 512; M = 8 is not fitted); simulated on the "
             "first 1000 shapes of random-5000, the paper used 5000 shapes (validate --only G-7 evaluates all)")
NUMBERS = [1e4, 1e5, 1e6, 1e7]


def _series(label, x, y, origin="simulated", **extra):
    return {"label": label, "x": x, "y": y, "origin": origin, **extra}


def _lines(kind, x, xscale):
    return {"kind": kind, "xlabel": "n (elements)", "ylabel": "time (ms)", "xscale": xscale, "yscale": "log",
            "series": [_series("a rather long legend label: MCScan s=128 with L2 cache splitting", x, [1, 2, 3, 4]),
                       _series("paper (S-4): MCScan s=128 at large n, 37.5% of 800 GB/s", x[-1:], [3.0], "paper",
                               style="point", claims=["S-4"], tags=["S-4"]),
                       _series("paper (G-8a, G-8b): max and average", [x[0], x[-1]], [2.0, 1.5], "paper",
                               style="level", claims=["G-8a", "G-8b"], tags=["G-8a max", "G-8b avg"])],
            "second": {"ylabel": "speed-up (x)", "yunit": "x", "yscale": "linear",
                       "series": [_series("a rather long legend label: MCScan s=128 with L2 cache splitting", x,
                                          [1, 2, 3, 4])]},
            "notes": [LONG_NOTE, "a second note"]}


DATA = {
    "lines": _lines("lines", NUMBERS, "log"),
    "lines-categories": _lines("lines", ["1024x28672x7168", "2048x28672x7168", "4096x28672x7168", "8192x8192x8192"],
                               "linear"),
    "scatter": _lines("scatter", [0, 1, 2, 3], "linear"),
    "bars": {"kind": "bars", "xlabel": "n (elements)", "ylabel": "time (ms)", "xscale": "linear",
             "yscale": "linear", "series": [_series(f"MCScanUL1 phase {p}", ["1,000", "2,000"], [1.0, 2.0])
                                            for p in ("I", "II")], "notes": [LONG_NOTE]},
    "bars-panels": {"kind": "bars-panels", "xlabel": "M0 x N0 x K0", "ylabel": "TFLOPS", "xscale": "linear",
                    "yscale": "linear", "notes": [LONG_NOTE],
                    "series": [_series(f"shape {i} 4096x4096x4096", ["128x256x64", "256x128x64"], [1.0, 2.0],
                                       selected="128x256x64") for i in range(3)]},
    "heatmap": {"kind": "heatmap", "xlabel": "array length", "ylabel": "batch size", "x": [256, 4096, 65536],
                "y": [1, 18, 256], "z": [[0.5, 1.0, 1.5]] * 3, "zlabel": "time(ScanUL1) / time(ScanU)",
                "series": [_series("paper (S-14): crossover at batch 18, length 4,096", [4096], [18], "paper",
                                   style="crossover", claims=["S-14"])], "notes": [LONG_NOTE]},
    "table": {"kind": "table", "columns": ["M", "GemmExample µs paper", "GemmExample µs sim", "proposed µs paper",
                                           "proposed µs sim"], "rows": [[8, 1292.42, 496.3, 550.9, 505.17]] * 7,
              "series": [], "notes": [LONG_NOTE]},
    "table-7-columns": {"kind": "table", "columns": ["kernel", "max TFLOPS paper", "max sim", "avg TFLOPS paper",
                                                     "avg sim", "avg speed-up paper", "avg speed-up sim"],
                        "rows": [["proposed HGEMM", 259.19, 254.79, 182.62, 209.34, 3.56, 4.96]] * 2, "series": [],
                        "notes": [LONG_NOTE]},
}


def _texts_outside(figure) -> list[str]:
    """What is drawn beyond the figure's edges (the bounding box of everything drawn: tick labels, legends,
    titles, notes) and each table cell's text beyond its cell."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    width, height = figure.get_size_inches()
    tight = figure.get_tightbbox(renderer)
    out = []
    if tight.x0 < -1e-3 or tight.y0 < -1e-3 or tight.x1 > width + 1e-3 or tight.y1 > height + 1e-3:
        out.append(f"drawn area {tight.bounds} beyond the figure (0, 0, {width}, {height}) in")
    cells = [cell for ax in figure.axes for table in ax.tables for cell in table.get_celld().values()]
    boxes = [(text, figure.bbox) for text in figure.texts] + [(cell.get_text(), cell.get_window_extent(renderer))
                                                              for cell in cells]
    for text, around in boxes:
        box = text.get_window_extent(renderer)
        if box.x0 < around.x0 - 0.5 or box.y0 < around.y0 - 0.5 or box.x1 > around.x1 + 0.5 or \
                box.y1 > around.y1 + 0.5:
            out.append(f"{text.get_text()[:40]!r} at {box.bounds} px, beyond {around.bounds}")
    return out


@pytest.mark.parametrize("name", list(DATA))
def test_every_kind_of_figure_keeps_its_text_inside(name):
    fig = Figure("test", "scan", "MCScan bandwidth for s=32, 64, 128 and memcpy, a caption of average length",
                 "scan paper §6.1 Fig 6.1", lambda ctx: DATA[name])
    figure = render(fig, DATA[name])
    try:
        assert _texts_outside(figure) == []
    finally:
        plt.close(figure)


def test_table5_fits_and_gives_times_in_microseconds():
    fig = FIGURES["table5"]
    data = fig.compute(Context())
    assert data["columns"] == ["M", "GemmExample µs paper", "GemmExample µs sim", "proposed µs paper",
                               "proposed µs sim"]
    figure = render(fig, data)
    try:
        assert _texts_outside(figure) == []
        drawn = [t.get_text() for t in figure.findobj(matplotlib.text.Text)]  # titles, notes; cells are apart
        drawn += [cell.get_text().get_text() for cell in figure.axes[0].tables[0].get_celld().values()]
        assert [t for t in drawn if re.search(r"\bus\b", t)] == []
        assert sum("µs" in t for t in drawn) == 4
    finally:
        plt.close(figure)


# ---- every figure's data, on short sweeps (the full ones take a minute) ------------------------------------

STEP = 20 * 128 * 128


@pytest.fixture(scope="module")
def every_figure():
    """{figure ID: its data as written to JSON and read back}, computed on two or three points per sweep."""
    from ascendbench.reference import figures, row_scan_claims, sampling_claims

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figures, "SWEEP", [2 * STEP, 61 * STEP])
        mp.setattr(figures, "SINGLE", [128 * 128, 128 * 128 * 64])
        mp.setattr(figures, "PHASE_SIZES", (2 * STEP, 61 * STEP))
        mp.setattr(figures, "FIG4_SIZES", (128, 512))
        mp.setattr(figures, "FIG10_SHAPES", 12)
        mp.setattr(figures, "TABLE4_SHAPES", 12)
        mp.setattr(row_scan_claims, "BATCHES", (1, 64))
        mp.setattr(row_scan_claims, "CROSS_BATCHES", (2, 64))
        mp.setattr(row_scan_claims, "CROSS_LENGTHS", (1024, 16384))
        mp.setattr(row_scan_claims, "INT8_SIZES", (STEP, 20 * STEP))
        mp.setattr(sampling_claims, "VOCABS", (2**15, 2**19))
        ctx = Context()
        yield {fid: json.loads(json.dumps(fig.compute(ctx))) for fid, fig in FIGURES.items()}


# the base unit and plausible range of each unit a figure may use (a bandwidth beyond 10 TB/s or a time of
# 0.12e9 ms is a unit error, as fig6.4's phases in cycles were)
PLAUSIBLE = {"s": (1e-7, 10.0), "B/s": (1e8, 1e13), "FLOPS": (1e10, 3e14), "elem/s": (1e7, 1e13), "x": (0.05, 50.0),
             "%": (-100.0, 1000.0)}
PREFIX = {"n": 1e-9, "µ": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _base(unit: str) -> tuple[str, float]:
    for base in PLAUSIBLE:
        if unit.endswith(base) and unit[:-len(base)] in PREFIX:
            return base, PREFIX[unit[:-len(base)]]
    raise AssertionError(f"unknown unit {unit!r}")


def _panels(data):
    return [p for p in (data, data.get("second")) if p and "yunit" in p]


@pytest.mark.parametrize("fid", [f for f in FIGURES if not f.startswith("table")])
def test_every_series_is_in_its_axis_unit_within_a_plausible_range(every_figure, fid):
    data = every_figure[fid]
    panels = _panels(data)
    assert panels or data["kind"] == "heatmap"
    for panel in panels:
        unit = panel["yunit"]
        assert panel["ylabel"].endswith(f"({unit})"), panel["ylabel"]
        base, scale = _base(unit)
        low, high = PLAUSIBLE[base]
        # the prefix is the one that puts the axis' largest magnitude in [1, 1000)
        top = max(abs(v) for s in panel["series"] for v in s["y"])
        assert si_scale([top * scale], base)[1] == unit
        for s in panel["series"]:
            assert s["unit"] == unit, (s["label"], s["unit"], unit)
            for v in s["y"] + s.get("kernel_y", []):
                assert low <= v * scale <= high, (s["label"], v, unit)
    if data["kind"] == "heatmap":
        assert data["zlabel"].endswith(f"({data['zunit']})")
    # the drawn axes carry the JSON's labels
    figure = render(FIGURES[fid], data)
    try:
        drawn = {ax.get_ylabel() for ax in figure.axes} | {ax.get_xlabel() for ax in figure.axes}
        assert {p["ylabel"] for p in panels} <= drawn
    finally:
        plt.close(figure)


def test_fig6_4_phases_are_seconds_not_cycles(every_figure):
    from ascendbench.hardware import load_profile
    from ascendbench.kernels import SCAN_KERNELS, ScanParams

    data = every_figure["fig6.4"]
    series = {s["label"]: s for s in data["series"]}
    n = int(series["MCScanUL1 phase II"]["x"][-1].replace(",", ""))
    sim = SCAN_KERNELS["mcscan-ul1"].simulate(n, ScanParams(), load_profile("ascend-910b4"))
    _, scale = _base(data["yunit"])
    assert series["MCScanUL1 phase II"]["y"][-1] * scale == pytest.approx(sim.phases_s["phase II"])
    assert data["yunit"] in ("µs", "ms")


@pytest.mark.parametrize("values, unit, expected", [
    ([4.2e-4, 1e-5], "s", (1e6, "µs")), ([0.0012], "s", (1e3, "ms")), ([999e-6], "s", (1e6, "µs")),
    ([1e-3], "s", (1e3, "ms")), ([42.0], "s", (1.0, "s")), ([3e4], "s", (1.0, "s")), ([2e-10], "s", (1e9, "ns")),
    ([3.0e11, 5e9], "B/s", (1e-9, "GB/s")), ([1.6e12], "B/s", (1e-12, "TB/s")), ([8.35e13], "FLOPS", (1e-12, "TFLOPS")),
    ([9.3e11], "FLOPS", (1e-9, "GFLOPS")), ([2.5e9], "elem/s", (1e-9, "Gelem/s")), ([9.6, 1.3], "x", (1.0, "x")),
    ([25.0], "%", (1.0, "%")), ([0.0, float("nan")], "s", (1.0, "s")),
])
def test_si_prefix_puts_the_axis_largest_value_in_1_to_1000(values, unit, expected):
    factor, prefixed = si_scale(values, unit)
    assert prefixed == expected[1] and factor == pytest.approx(expected[0])


def test_hgemm_figures_are_all_in_tflops(every_figure):
    assert {every_figure[f]["yunit"] for f in FIGURES if f.startswith("hgemm")} == {"TFLOPS"}


# Which figures draw the papers' values (the others' claims are orderings or trends with no number).
WITH_PAPER = {"fig4.2": {"S-1", "S-2"}, "fig6.1": {"S-4"}, "fig6.2": {"S-8a", "S-8b"}, "fig6.3": {"S-7"},
              "fig6.5": {"S-10"}, "fig6.6": {"S-11"}, "fig6.7": {"S-13 s=64", "S-13 s=128"}, "figB.2": {"S-14"},
              "figB.4": {"S-12a", "S-12b"}, "hgemm-fig10": {"G-7a", "G-7b", "G-7c", "G-7d"},
              "hgemm-fig11": {"G-8a", "G-8b"}, "table4": {"G-7a", "G-7b", "G-7c", "G-7d", "G-7e"},
              "table5": {c.id for c in load_claims() if c.claim in ("G-9a", "G-9b")}}


@pytest.mark.parametrize("fid", list(FIGURES))
def test_every_figure_draws_the_papers_values_with_their_claim_ids_or_says_why_not(every_figure, fid):
    data = every_figure[fid]
    paper = data["paper"]
    drawn = [s for p in (data, data.get("second") or {}) for s in p.get("series", []) if s["origin"] == "paper"]
    if fid not in WITH_PAPER:
        assert paper["claims"] == [] and paper["values"] == [] and drawn == []
        assert len(paper["reason"]) > 20 and any(note.endswith(paper["reason"]) for note in data["notes"])
        return
    assert set(paper["claims"]) == WITH_PAPER[fid] and paper["reason"] is None
    assert [v["paper"] for v in paper["values"]] == [paper_value(c) for c in paper["claims"]]
    for s in drawn:  # one style: labelled "paper (IDs)", each claim once (S-13, not "S-13 s=64, S-13 s=128")
        ids = list(dict.fromkeys(c.split(" ")[0] for c in s["claims"]))
        assert s["label"].startswith(f"paper ({', '.join(ids)}): ") and set(s["claims"]) <= WITH_PAPER[fid]
        assert s["style"] in ("point", "level", "crossover")


def _paper_y(data, claim):
    for panel in (data, data.get("second") or {}):
        for s in panel.get("series", []):
            if s["origin"] == "paper" and claim in s["claims"]:
                ys = s["y"] if len(s["claims"]) == len(s["y"]) else s["y"] * len(s["claims"])
                return ys[s["claims"].index(claim)], panel["yunit"]
    raise AssertionError(claim)


@pytest.mark.parametrize("fid, claim, value, unit", [
    ("fig4.2", "S-1", 5.0, "x"), ("fig4.2", "S-2", 9.6, "x"), ("fig6.1", "S-4", 300.0, "GB/s"),
    ("fig6.2", "S-8b", 0.749, "x"), ("fig6.3", "S-7", 25.0, "%"), ("fig6.5", "S-10", 160.0, "GB/s"),
    ("fig6.6", "S-11", 1.3, "x"), ("fig6.7", "S-13 s=128", 400.0, "GB/s"), ("figB.4", "S-12b", 3.0, "x"),
    ("hgemm-fig10", "G-7c", 51.25, "TFLOPS"), ("hgemm-fig11", "G-8a", 255.57, "TFLOPS"),
    ("hgemm-fig11", "G-8b", 187.35, "TFLOPS"),
])
def test_the_papers_values_are_drawn_as_claims_toml_gives_them(every_figure, fid, claim, value, unit):
    y, axis_unit = _paper_y(every_figure[fid], claim)
    assert axis_unit == unit and y == pytest.approx(value)


def test_tables_give_the_papers_columns_and_two_decimals_throughout(every_figure):
    t5 = every_figure["table5"]
    assert [row[1] for row in t5["rows"]] == [f"{r[4]:.2f}" for r in hgemm_tables()["table5"]["rows"]]
    assert [row[3] for row in t5["rows"]] == [f"{r[6]:.2f}" for r in hgemm_tables()["table5"]["rows"]]
    for fid in ("table4", "table5"):
        for row in every_figure[fid]["rows"]:
            numbers = row[1:]
            assert all(re.fullmatch(r"\d+\.\d\d", v) for v in numbers), row


def _texts(figure):
    figure.canvas.draw()
    texts = [t for t in figure.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    texts += [cell.get_text() for ax in figure.axes for table in ax.tables for cell in table.get_celld().values()]
    return texts


def _tags_on_markers(figure) -> list[str]:
    """The papers' tags (annotations) whose drawn box contains a data marker's position of their axes."""
    renderer = figure.canvas.get_renderer()
    hits = []
    for ax in figure.axes:
        points = [(line.get_label(), xy) for line in ax.lines if line.get_marker() not in (None, "None", "", " ")
                  for xy in line.get_transform().transform(line.get_xydata())]
        for note in ax.texts:
            if isinstance(note, matplotlib.text.Annotation):
                box = note.get_bbox_patch().get_window_extent(renderer)
                hits += [f"{note.get_text()!r} on {label!r} at {xy}" for label, xy in points if box.contains(*xy)]
    return hits


@pytest.mark.parametrize("fid", list(FIGURES))
def test_no_text_under_8_pt_nothing_outside_the_figure_no_tag_on_data_and_the_data_get_the_width(every_figure,
                                                                                                  fid):
    data = every_figure[fid]
    figure = render(FIGURES[fid], data)
    try:
        small = [(t.get_text()[:30], t.get_fontsize()) for t in _texts(figure) if t.get_fontsize() < MIN_FONT_PT]
        assert small == []
        assert _texts_outside(figure) == []
        assert len(_texts(figure)) > 5
        assert _tags_on_markers(figure) == []
        if data["kind"] in ("lines", "scatter", "bars"):  # legends above the plot, not beside it
            for ax in figure.axes:
                assert ax.get_position().width > 0.85, (fid, ax.get_position().width)
        # the notes speak of what was simulated, not of the source files
        assert [n for n in data["notes"] if re.search(r"\.py\b|\b[a-z0-9]+_[a-z0-9]+_[a-z0-9_]+\b", n)] == []
    finally:
        plt.close(figure)


def test_a_tag_moves_off_the_marker_it_would_cover():
    """S-8b's tag above its point covered the last marker of a ratio line just above it (fig6.2)."""
    x = [1e6, 1e7, 1e8]
    data = {"kind": "lines", "xlabel": "n (elements)", "ylabel": "ratio (x)", "yunit": "x", "xscale": "log",
            "yscale": "linear", "notes": [],
            "series": [_series("MCScanUL1 / memcpy", x, [0.5, 0.7, 0.8]), _series("other", x, [1.0, 1.2, 1.3]),
                       _series("paper (S-8b): at large n", x[-1:], [0.76], "paper", style="point", claims=["S-8b"],
                               tags=["S-8b"])]}
    figure = render(Figure("t", "scan", "c", "s", None), data)
    try:
        (note,) = figure.axes[0].texts
        assert note.get_text() == "S-8b" and _tags_on_markers(figure) == []
        assert note.xyann != (0, 8)  # not the first spot, above the point, where the marker at 0.8 is
    finally:
        plt.close(figure)


def test_the_crossover_lines_lie_on_cell_edges_not_through_the_numbers(every_figure):
    for data in (DATA["heatmap"], every_figure["figB.2"]):  # the crossover on a cell, and between cells
        figure = render(Figure("t", "scan", "c", "s", None), data)
        try:
            ax = figure.axes[0]
            figure.canvas.draw()
            renderer = figure.canvas.get_renderer()
            lines = [line for line in ax.lines if line.get_linestyle() != "None"]
            assert len(lines) == 2
            (x,), (y,) = set(lines[0].get_xdata()), set(lines[1].get_ydata())
            assert x % 1 == 0.5 and y % 1 == 0.5  # cell centres are at whole numbers
            numbers = [t for t in ax.texts if re.fullmatch(r"\d\.\d\d", t.get_text())]
            assert len(numbers) == len(data["x"]) * len(data["y"])
            for line in lines:
                path = line.get_transform().transform(line.get_xydata())
                for text in numbers:
                    box = text.get_window_extent(renderer)
                    assert not any(box.contains(*xy) for xy in path)
                    if path[0][0] == path[1][0]:  # vertical
                        assert not box.x0 <= path[0][0] <= box.x1, text.get_text()
                    else:
                        assert not box.y0 <= path[0][1] <= box.y1, text.get_text()
        finally:
            plt.close(figure)


def test_log_axes_read_as_plain_numbers_with_a_tick_near_the_data(every_figure):
    figure = render(FIGURES["fig6.7"], every_figure["fig6.7"])
    try:
        ax = figure.axes[0]
        figure.canvas.draw()
        batches = every_figure["fig6.7"]["series"][0]["x"]
        assert [t.get_text() for t in ax.get_xticklabels()] == [f"{b:,}" for b in batches]
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "paper (S-13): s=64, s=128" in legend
    finally:
        plt.close(figure)
    data = every_figure["fig6.8"]
    figure = render(FIGURES["fig6.8"], data)
    try:
        ax = figure.axes[0]
        figure.canvas.draw()
        low, high = ax.get_ylim()
        labelled = [float(t.get_text()) for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True)
                    if t.get_text() and low <= t.get_position()[1] <= high]
        assert all(re.fullmatch(r"[\d.,]+", t.get_text()) for t in ax.get_yticklabels() if t.get_text())
        lowest = min(v for s in data["series"] for v in s["y"])
        assert min(abs(math.log(v / lowest)) for v in labelled) < math.log(2)
    finally:
        plt.close(figure)


def test_hgemm_fig11_ticks_each_m_x_n_group_once_centred(every_figure):
    data = every_figure["hgemm-fig11"]
    figure = render(FIGURES["hgemm-fig11"], data)
    try:
        ax = figure.axes[0]
        shapes = data["series"][0]["x"]
        groups = list(dict.fromkeys(s.rsplit("x", 1)[0] for s in shapes))
        assert [t.get_text() for t in ax.get_xticklabels()] == groups
        for tick, group in zip(ax.get_xticks(), groups):
            members = [i for i, s in enumerate(shapes) if s.rsplit("x", 1)[0] == group]
            assert tick == pytest.approx((members[0] + members[-1]) / 2)
        ks = sorted({int(s.rsplit("x", 1)[1]) for s in shapes})
        assert f"K rises {ks[0]} \u2192 {ks[-1]}" in ax.get_xlabel()
    finally:
        plt.close(figure)


def test_fig6_8_lines_that_coincide_differ_in_marker_and_line_style(every_figure):
    figure = render(FIGURES["fig6.8"], every_figure["fig6.8"])
    try:
        lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
        looks = {(lines[f"s={s}"].get_marker(), lines[f"s={s}"].get_linestyle()) for s in (32, 64, 128)}
        assert len(looks) == 3
    finally:
        plt.close(figure)
    assert math.isclose(every_figure["fig6.8"]["second"]["series"][0]["y"][0] * every_figure["fig6.8"]["series"][2]["y"][0],
                        every_figure["fig6.8"]["series"][0]["y"][0])
