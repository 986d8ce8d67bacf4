"""Saving matplotlib figures, shared by `ascendbench reproduce` (reference/figures.py) and `ascendbench tune
plot` (tuning/plots.py): the formats offered, the resolution, and the all-or-nothing write of several formats."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["DEFAULT_DPI", "DPI_RANGE", "FORMATS", "check_dpi", "check_formats", "save_figure", "save_formats"]

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
