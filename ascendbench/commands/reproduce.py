"""`ascendbench reproduce`: redraw the papers' figures and tables from the simulator (PNG + JSON data)."""

from __future__ import annotations

import io
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ascendbench.commands.common import (
    JsonOption,
    Outputs,
    dump_json,
    err_console,
    fail,
    out_console,
    whole_keys,
)

FIGURE_SCHEMA_VERSION = 1


def reproduce_figure(figure_id: str, out_dir: Path, ctx=None) -> tuple[Path, Path, dict]:
    """Compute one figure with the simulator and write <out_dir>/<id>.png and <id>.json (atomically).

    ctx: a reference.claims.Context whose hardware profiles are used (default: the shipped ones). Returns
    (png path, json path, the JSON document: figure, caption, source, hardware used, data). Raises KeyError
    for an unknown figure ID.
    """
    from ascendbench import __version__
    from ascendbench.reference.claims import Context
    from ascendbench.reference.figures import FIGURES, draw
    from ascendbench.store.io import atomic_write_bytes

    fig = FIGURES[figure_id]
    ctx = Context(profiles=dict(ctx.profiles)) if ctx is not None else Context()  # profiles shared, memo not
    t0 = time.perf_counter()
    data = fig.compute(ctx)
    doc = {"schema_version": FIGURE_SCHEMA_VERSION, "kind": "figure", "figure": fig.id, "paper": fig.paper,
           "caption": fig.caption, "source": fig.source, "tool_version": __version__,
           "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
           "hardware": sorted(ctx.profiles), "compute_time_s": round(time.perf_counter() - t0, 3), "data": data}
    png, js = out_dir / f"{fig.id}.png", out_dir / f"{fig.id}.json"
    buffer = io.BytesIO()
    draw(fig, data, buffer)
    with Outputs() as outputs:
        outputs.write("out-dir", png, lambda path: atomic_write_bytes(path, buffer.getvalue()))
        outputs.write_json("out-dir", js, doc)
    return png, js, doc


def reproduce(
    target: Annotated[str, typer.Argument(help="A figure ID (see `ascendbench reproduce list`), 'all' or 'list'.")],
    out_dir_text: Annotated[str, typer.Option("--out-dir", metavar="<path>", help="Folder of the PNG and JSON "
                                              "files (created if missing).")] = "results/figures",
    json_out: JsonOption = False,
) -> None:
    """Redraw the scan paper's and the HGEMM paper's figures and tables from the simulator: a PNG and the
    plotted data as JSON per figure, the paper's published numbers overlaid where it gives them."""
    from ascendbench.reference.claims import Context
    from ascendbench.reference.figures import FIGURES

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

    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    ctx = Context()
    written = []
    progress = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                        console=err_console, transient=True, disable=json_out or not err_console.is_terminal)
    t0 = time.perf_counter()
    with progress:
        task = progress.add_task("figures", total=len(ids))
        for fid in ids:
            progress.update(task, description=f"reproduce {fid}")
            f0 = time.perf_counter()
            png, js, _doc = reproduce_figure(fid, out_dir, ctx)
            written.append({"id": fid, "png": str(png), "json": str(js), "seconds": round(time.perf_counter() - f0, 2)})
            progress.advance(task)
    if json_out:
        out_console.file.write(dump_json(written) + "\n")
        return
    for w in written:
        out_console.print(f"{w['id']:12s} {w['png']}  {w['json']}  ({w['seconds']:.1f} s)")
    out_console.print(f"{len(written)} figure(s) in {time.perf_counter() - t0:.1f} s")
