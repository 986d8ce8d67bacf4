"""Layout of the redrawn figures: every kind keeps its text inside the figure; times are in µs."""

import re

import matplotlib
import matplotlib.pyplot as plt
import pytest

from ascendbench.reference.claims import Context
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
                       _series("paper: MCScan s=128 peak (37.5% of 800 GB/s)", x[-1:], [3.0], "paper"),
                       _series("paper: max", x, [2.0] * 4, "paper")],
            "notes": [LONG_NOTE, "a second note"]}


DATA = {
    "lines": _lines("lines", NUMBERS, "log"),
    "lines-categories": _lines("lines", ["1024x28672x7168", "2048x28672x7168", "4096x28672x7168", "8192x8192x8192"],
                               "linear"),
    "scatter": _lines("scatter", [0, 1, 2, 3], "linear"),
    "bars": {"kind": "bars", "xlabel": "n (elements)", "ylabel": "time (ms)", "xscale": "linear",
             "yscale": "linear", "series": [_series(f"MCScanUL1 phase {p}", ["1,000", "2,000"], [1.0, 2.0])
                                            for p in ("I", "II")], "notes": [LONG_NOTE]},
    "barh": {"kind": "barh", "xlabel": "GFLOPS", "ylabel": "M = N = K", "xscale": "linear", "yscale": "linear",
             "series": [_series(f"{t}x{t}", ["128", "4096"], [10.0, 20.0]) for t in (16, 32, 64, 128)],
             "notes": [LONG_NOTE]},
    "bars-panels": {"kind": "bars-panels", "xlabel": "M0 x N0 x K0", "ylabel": "TFLOPS", "xscale": "linear",
                    "yscale": "linear", "notes": [LONG_NOTE],
                    "series": [_series(f"shape {i} 4096x4096x4096", ["128x256x64", "256x128x64"], [1.0, 2.0],
                                       selected="128x256x64") for i in range(3)]},
    "heatmap": {"kind": "heatmap", "xlabel": "array length", "ylabel": "batch size", "x": [256, 4096, 65536],
                "y": [1, 18, 256], "z": [[0.5, 1.0, 1.5]] * 3, "zlabel": "time(ScanUL1) / time(ScanU)",
                "series": [], "notes": [LONG_NOTE]},
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
