"""`ascendbench reproduce`: redraw the papers' figures and tables from the simulator (PNG, SVG or PDF + JSON
data)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ascendbench.commands.common import (
    JsonOption,
    Outputs,
    count_option,
    dump_json,
    fail,
    new_progress,
    out_console,
    show_progress,
    whole_keys,
)
from ascendbench.plotting import DEFAULT_DPI

FIGURE_SCHEMA_VERSION = 1


def reproduce_figure(figure_id: str, out_dir: Path, ctx=None, formats: Sequence[str] = ("png",),
                     dpi: int = DEFAULT_DPI) -> tuple[list[Path], Path, dict]:
    """Compute one figure with the simulator and write <out_dir>/<id>.<format> for each of `formats` (png,
    svg, pdf; PNGs at `dpi` dots per inch) and <out_dir>/<id>.json, all or none.

    ctx: a reference.claims.Context whose hardware profiles are used (default: the shipped ones). Returns
    (figure paths in the order of `formats`, json path, the JSON document: figure, caption, source, hardware
    used, data). Raises KeyError for an unknown figure ID.
    """
    import matplotlib.pyplot as plt

    from ascendbench import __version__
    from ascendbench.plotting import save_formats
    from ascendbench.reference.claims import Context
    from ascendbench.reference.figures import FIGURES, render

    fig = FIGURES[figure_id]
    ctx = Context(profiles=dict(ctx.profiles)) if ctx is not None else Context()  # profiles shared, memo not
    t0 = time.perf_counter()
    data = fig.compute(ctx)
    doc = {"schema_version": FIGURE_SCHEMA_VERSION, "kind": "figure", "figure": fig.id, "paper": fig.paper,
           "caption": fig.caption, "source": fig.source, "tool_version": __version__,
           "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
           "hardware": sorted(ctx.profiles), "compute_time_s": round(time.perf_counter() - t0, 3), "data": data}
    js = out_dir / f"{fig.id}.json"
    figure = render(fig, data)
    try:
        with Outputs() as outputs:
            paths = save_formats(figure, out_dir / fig.id, formats, outputs.write_figure, dpi)
            outputs.write_json("out-dir", js, doc)
    finally:
        plt.close(figure)
    return paths, js, doc


def reproduce(
    target: Annotated[str, typer.Argument(help="A figure ID (see `ascendbench reproduce list`), 'all' or 'list'.")],
    out_dir_text: Annotated[str, typer.Option("--out-dir", metavar="<path>", help="Folder of the PNG and JSON "
                                              "files (created if missing).")] = "results/figures",
    formats: Annotated[list[str] | None, typer.Option("--format", help="png, svg or pdf; repeat for several "
                                                      "(default: png).")] = None,
    dpi: Annotated[int, count_option("--dpi", help="Resolution of PNG figures, dots per inch (50 to 600).")
                   ] = DEFAULT_DPI,
    json_out: JsonOption = False,
) -> None:
    """Redraw the scan paper's and the HGEMM paper's figures and tables from the simulator: a figure (PNG by
    default, SVG or PDF with --format) and the plotted data as JSON per figure, the paper's published numbers
    overlaid where it gives them."""
    from ascendbench.plotting import check_dpi, check_formats
    from ascendbench.reference.claims import Context
    from ascendbench.reference.figures import FIGURES

    try:
        formats = check_formats(formats, ("png",))
        check_dpi(dpi)
    except ValueError as exc:
        fail(str(exc))

    if target == "list":
        if json_out:
            out_console.file.write(dump_json([{"id": f.id, "paper": f.paper, "caption": f.caption,
                                               "source": f.source} for f in FIGURES.values()]) + "\n")
            return
        t = Table(title="figures and tables `ascendbench reproduce` redraws", title_justify="left")
        for col in ("ID", "paper", "what", "source"):
            t.add_column(col)
        for f in FIGURES.values():
            t.add_row(f.id, f.paper, f.caption, f.source)
        out_console.print(whole_keys(t, "ID"))
        return
    ids = list(FIGURES) if target == "all" else [target]
    if target != "all" and target not in FIGURES:
        fail(f"FIGURE: unknown figure {target!r}; use one of {', '.join(FIGURES)}, 'all' or 'list'")
    if not out_dir_text:
        fail("--out-dir: must name a folder (use . for the current one), got an empty string")
    out_dir = Path(out_dir_text)
    try:
        if out_dir.exists() and not out_dir.is_dir():
            fail(f"--out-dir: {str(out_dir)!r} exists and is not a folder")
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out-dir: cannot create {str(out_dir)!r}: {exc.strerror or exc}")
    if not os.access(out_dir, os.W_OK):  # before minutes of computing
        fail(f"--out-dir: folder {str(out_dir)!r} is not writable")

    ctx = Context()
    written = []
    progress = new_progress(json_out=json_out)
    t0 = time.perf_counter()
    with progress:
        task = progress.add_task("figures", total=len(ids))
        for done, fid in enumerate(ids):
            show_progress(progress, task, f"reproduce {fid}", done, len(ids))
            f0 = time.perf_counter()
            paths, js, _doc = reproduce_figure(fid, out_dir, ctx, formats, dpi)
            written.append({"id": fid, "figures": [str(p) for p in paths], "json": str(js),
                            "seconds": round(time.perf_counter() - f0, 2)})
    if json_out:
        out_console.file.write(dump_json(written) + "\n")
        return
    for w in written:
        out_console.print(f"{w['id']:12s} {'  '.join(w['figures'])}  {w['json']}  ({w['seconds']:.1f} s)",
                          highlight=False)
    out_console.print(f"{len(written)} figure(s) in {time.perf_counter() - t0:.1f} s")
