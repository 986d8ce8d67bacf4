"""The project's figure style and the saving of matplotlib figures, shared by `ascendbench reproduce`
(reference/figures.py) and `ascendbench tune plot` (tuning/plots.py): font sizes (none under MIN_FONT_PT), the
look of the papers' values (open black markers, dashed black levels), SI prefixes chosen per axis, the formats
offered, the resolution, and the all-or-nothing write of several formats."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

__all__ = ["DEFAULT_DPI", "DPI_RANGE", "FORMATS", "MIN_FONT_PT", "PAPER_LEVEL", "PAPER_POINT", "STYLE",
           "check_dpi", "check_formats", "save_figure", "save_formats", "si_scale", "simulated_style", "style"]

# Slide-readable at the default size: nothing under 8 pt (tests walk every Text artist of every figure).
MIN_FONT_PT = 8.0
STYLE = {
    "font.size": 10.0, "axes.titlesize": 10.0, "axes.labelsize": 10.0, "xtick.labelsize": 9.0,
    "ytick.labelsize": 9.0, "legend.fontsize": 9.0, "figure.titlesize": 11.0, "legend.title_fontsize": 9.0,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "lines.linewidth": 1.6, "lines.markersize": 5.0, "axes.formatter.useoffset": False,
}
# The papers' numbers, in every figure alike: a value at a point as an open black marker, a value over a span
# (a peak, an average, the ends of a range) as a dashed black level; labels start "paper (claim IDs)".
PAPER_POINT = {"marker": "o", "markersize": 9, "markerfacecolor": "none", "markeredgecolor": "black",
               "markeredgewidth": 1.6, "linestyle": "none", "color": "black", "zorder": 5}
PAPER_LEVEL = {"color": "black", "linestyle": (0, (5, 3)), "linewidth": 1.3, "zorder": 4}
# Simulated series: filled markers and line styles that differ per series, so that lines lying on each other
# (fig6.8's s = 32, 64, 128) stay visible.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_LINESTYLES = ("-", "--", "-.", ":")

_PREFIXES = {-9: "n", -6: "µ", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}
# The units an axis may scale, and the range of prefixes each takes (a time is never in ks).
_SCALABLE = {"s": (-9, 0), "B/s": (0, 15), "FLOPS": (0, 15), "elem/s": (0, 15), "B": (0, 15)}


def style():
    """A context manager applying STYLE (matplotlib.rc_context): create and save figures inside it."""
    import matplotlib

    return matplotlib.rc_context(STYLE)


def simulated_style(index: int) -> dict:
    """Marker and line style of the index-th simulated series of a plot (filled; paper values are open)."""
    return {"marker": _MARKERS[index % len(_MARKERS)], "linestyle": _LINESTYLES[index % len(_LINESTYLES)],
            "markersize": 5.5 - 0.5 * (index % 3)}


def si_scale(values: Iterable[float], unit: str) -> tuple[float, str]:
    """(factor, prefixed unit) for one axis: values * factor in the prefixed unit put the axis' largest
    magnitude in [1, 1000) (e.g. seconds up to 4.2e-4 -> (1e6, "µs"); 8.3e13 FLOPS -> (1e-12, "TFLOPS")).
    Units outside s, B/s, FLOPS, elem/s, B (ratios "x", "%", counts) and axes without a nonzero finite value
    get (1.0, unit); times stop at s, the others at P."""
    if unit not in _SCALABLE:
        return 1.0, unit
    finite = [abs(v) for v in values if v and math.isfinite(v)]
    if not finite:
        return 1.0, unit
    top = max(finite)
    exponent = 3 * math.floor(math.log10(top) / 3)
    if top / 10.0 ** exponent >= 1000:  # log10 rounded down across a power of 1000
        exponent += 3
    low, high = _SCALABLE[unit]
    exponent = min(max(exponent, low), high)
    return 10.0 ** -exponent, _PREFIXES[exponent] + unit

FORMATS = ("png", "svg", "pdf")
DEFAULT_DPI = 150
DPI_RANGE = (50, 600)  # below 50 the text is unreadable; above 600 a page-wide PNG runs to hundreds of MB

# No creation date in vector files: the same data gives the same bytes.
_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}


def check_formats(formats: Sequence[str] | None, default: Sequence[str]) -> list[str]:
    """The formats asked for, each once, in order (`default` when none are given). Raises ValueError
    ("--format: ...") for a format not in FORMATS."""
    for fmt in formats or ():
        if fmt not in FORMATS:
            raise ValueError(f"--format: must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return list(dict.fromkeys(formats or default))


def check_dpi(dpi: int) -> int:
    """`dpi` if it lies in DPI_RANGE (dots per inch, for PNG; SVG and PDF are vector, their embedded images
    use it), else ValueError ("--dpi: ...")."""
    lo, hi = DPI_RANGE
    if not lo <= dpi <= hi:
        raise ValueError(f"--dpi: must be between {lo} and {hi} dots per inch, got {dpi}")
    return dpi


def save_figure(figure, target, fmt: str, dpi: int = DEFAULT_DPI) -> None:
    """Write a matplotlib figure to `target` (a path or a binary file object) as `fmt` (png, svg or pdf),
    cropped to what is drawn with a small margin (bbox_inches="tight": no text cut at the edges)."""
    figure.savefig(target, format=fmt, dpi=dpi, bbox_inches="tight", pad_inches=0.05,
                   metadata=_METADATA.get(fmt))


def save_formats(figure, stem: Path, formats: Sequence[str], write: Callable[[Path, Callable[[Path], None]], None],
                 dpi: int = DEFAULT_DPI) -> list[Path]:
    """Save `figure` as stem.<format> for each format through `write(path, writer)`, where writer(target)
    saves it (commands/common.Outputs.write_figure: all files or none). Returns the paths."""
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        write(path, lambda target, fmt=fmt: save_figure(figure, target, fmt, dpi))
        paths.append(path)
    return paths
