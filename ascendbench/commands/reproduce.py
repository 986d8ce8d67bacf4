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
    choice_option,
    complete_from,
    count_option,
    dump_json,
    fail,
    new_progress,
    out_console,
    show_progress,
    whole_keys,
)
from ascendbench.plotting import DEFAULT_DPI, FORMATS, style
from ascendbench.store.documents import FIGURE_SCHEMA_VERSION


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
        with Outputs() as outputs, style():
            paths = save_formats(figure, out_dir / fig.id, formats, outputs.write_figure, dpi)
            outputs.write_json("out-dir", js, doc)
    finally:
        plt.close(figure)
    return paths, js, doc


class FigureDataError(ValueError):
    """A file that is not a figure's JSON as `reproduce` writes it (the message says why)."""


def load_figure_doc(json_path: Path) -> dict:
    """The JSON document `reproduce` wrote for one figure.

    Raises:
        FigureDataError: the file cannot be read, is not JSON, or is not a figure of schema version
            FIGURE_SCHEMA_VERSION (the message names the file and the reason).
    """
    import json

    where = repr(str(json_path))
    try:
        doc = json.loads(json_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FigureDataError(f"cannot read {where}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise FigureDataError(f"{where} is not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "figure" or not isinstance(doc.get("data"), dict):
        raise FigureDataError(f"{where} is not a figure's data (write one with `ascendbench reproduce FIGURE`)")
    if doc.get("schema_version") != FIGURE_SCHEMA_VERSION:
        raise FigureDataError(f"{where} has schema version {doc.get('schema_version')!r}; this version draws "
                              f"{FIGURE_SCHEMA_VERSION} (run `ascendbench reproduce {doc.get('figure', 'FIGURE')}` "
                              "again)")
    from pydantic import ValidationError

    from ascendbench.reference.figures import FIGURES
    from ascendbench.store.documents import FigureResult

    try:
        FigureResult.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise FigureDataError(f"{where} is not a valid figure file: {'.'.join(map(str, first['loc']))}: "
                              f"{first['msg']}") from None
    if doc["figure"] not in FIGURES:
        raise FigureDataError(f"{where} is the data of {doc['figure']!r}, which is no figure of this version "
                              "(`ascendbench reproduce list` names them)")
    data = doc["data"]
    if data.get("kind") not in DATA_KINDS:
        raise FigureDataError(f"{where}: data kind {data.get('kind')!r} is none of {', '.join(DATA_KINDS)}")
    for series in data.get("series", []) if data["kind"] in ("lines", "scatter", "bars") else []:
        values = series.get("y", []) if isinstance(series, dict) else None
        if not isinstance(values, list) or not all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
            label = series.get("label") if isinstance(series, dict) else series
            raise FigureDataError(f"{where}: series {label!r} has y values that are not numbers")
    return doc


DATA_KINDS = ("lines", "scatter", "bars", "bars-panels", "heatmap", "table")  # what reference.figures.render draws


def render_doc(doc: dict, json_path: Path):
    """The matplotlib figure of a document of load_figure_doc (the caller closes it). Raises FigureDataError
    when its data cannot be drawn (a key missing or of the wrong type)."""
    from ascendbench.reference.figures import Figure, render

    fid = str(doc.get("figure") or "figure")
    fig = Figure(fid, str(doc.get("paper", "")), str(doc.get("caption", fid)), str(doc.get("source", "")), None)
    import warnings

    figure = None
    try:
        # drawn once here, so that what only fails when drawn (a label's TeX, numbers that overflow a log
        # axis) is refused in one line before any file is written
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            figure = render(fig, doc["data"])
            figure.canvas.draw()
        return figure
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError, RuntimeWarning) as exc:
        if figure is not None:
            import matplotlib.pyplot as plt

            plt.close(figure)
        reason = " ".join(str(exc).split())  # matplotlib's parser errors run over several lines
        raise FigureDataError(f"{str(json_path)!r}: its data cannot be drawn ({type(exc).__name__}: {reason})") from None


def redraw_figure(json_path: Path, out_dir: Path, formats: Sequence[str] = ("png",),
                  dpi: int = DEFAULT_DPI) -> tuple[list[Path], dict]:
    """Draw a figure again from the JSON `reproduce` wrote, without simulating, as <out_dir>/<id>.<format>
    for each of `formats` (PNGs at `dpi`), all or none; the JSON itself is not rewritten. Returns (paths, the
    JSON document). Raises FigureDataError (load_figure_doc, render_doc)."""
    doc = load_figure_doc(json_path)
    return _save_doc(doc, render_doc(doc, json_path), out_dir, formats, dpi), doc


def _save_doc(doc: dict, figure, out_dir: Path, formats: Sequence[str], dpi: int) -> list[Path]:
    import matplotlib.pyplot as plt

    from ascendbench.plotting import save_formats

    try:
        with Outputs() as outputs, style():
            return save_formats(figure, out_dir / Path(str(doc.get("figure") or "figure")).name, formats,
                                outputs.write_figure, dpi)
    finally:
        plt.close(figure)


def _targets() -> tuple[str, ...]:
    """What the FIGURE argument takes (for shell completion): the figure IDs, 'all' and 'list'."""
    from ascendbench.reference.figures import FIGURES

    return (*FIGURES, "all", "list")


def reproduce(
    target: Annotated[str | None, typer.Argument(help="A figure ID (see `ascendbench reproduce list`), 'all' or "
                                                      "'list'; none with --from.",
                                                 autocompletion=complete_from(_targets))] = None,
    out_dir_text: Annotated[str | None, typer.Option("--out-dir", metavar="<path>", help="Folder of the PNG and "
                                                     "JSON files (created if missing; default results/figures, "
                                                     "with --from the JSON's folder).")] = None,
    from_json: Annotated[Path | None, typer.Option("--from", metavar="<FIGURE.json>", help="Redraw a figure from "
                                                   "the JSON a previous run wrote, without simulating "
                                                   "again.")] = None,
    formats: Annotated[list[str] | None, choice_option("--format", choices=FORMATS, help="png, svg or pdf; repeat "
                                                       "for several (default: png).")] = None,
    dpi: Annotated[int, count_option("--dpi", help="Resolution of PNG figures, dots per inch (50 to 600).")
                   ] = DEFAULT_DPI,
    json_out: JsonOption = False,
) -> None:
    """Redraw the scan paper's and the HGEMM paper's figures and tables from the simulator: a figure (PNG by
    default, SVG or PDF with --format) and the plotted data as JSON per figure, the paper's published numbers
    overlaid where it gives them (open black markers and dashed black levels, with their claim IDs). With
    --from FIGURE.json, draw a saved figure again (other formats, resolution) without simulating."""
    from ascendbench.plotting import check_dpi, check_formats
    from ascendbench.reference.claims import Context
    from ascendbench.reference.figures import FIGURES

    try:
        formats = check_formats(formats, ("png",))
        check_dpi(dpi)
    except ValueError as exc:
        fail(str(exc))

    if from_json is not None:
        if target is not None:
            fail(f"FIGURE: give a figure ID or --from, not both (got {target!r} and --from)")
        _redraw(from_json, out_dir_text, formats, dpi, json_out)
        return
    if target is None:
        fail("FIGURE: missing; give a figure ID (see `ascendbench reproduce list`), 'all', 'list' or --from "
             "FIGURE.json")
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
    out_dir = _out_dir("results/figures" if out_dir_text is None else out_dir_text)

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


def _out_dir(text: str) -> Path:
    """--out-dir as a writable folder (made if missing), else a one-line error."""
    if not text:
        fail("--out-dir: must name a folder (use . for the current one), got an empty string")
    out_dir = Path(text)
    try:
        if out_dir.exists() and not out_dir.is_dir():
            fail(f"--out-dir: {str(out_dir)!r} exists and is not a folder")
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out-dir: cannot create {str(out_dir)!r}: {exc.strerror or exc}")
    if not os.access(out_dir, os.W_OK):  # before minutes of computing
        fail(f"--out-dir: folder {str(out_dir)!r} is not writable")
    return out_dir


def _redraw(json_path: Path, out_dir_text: str | None, formats: list[str], dpi: int, json_out: bool) -> None:
    """reproduce --from: read and draw the JSON before making any folder, then write the figure files."""
    import matplotlib.pyplot as plt

    t0 = time.perf_counter()
    try:
        doc = load_figure_doc(json_path)
        figure = render_doc(doc, json_path)
    except FigureDataError as exc:
        fail(f"--from: {exc}")
    try:
        out_dir = _out_dir(str(json_path.parent) if out_dir_text is None else out_dir_text)
    except BaseException:
        plt.close(figure)
        raise
    paths = _save_doc(doc, figure, out_dir, formats, dpi)
    written = [{"id": doc["figure"], "figures": [str(p) for p in paths], "json": str(json_path),
                "seconds": round(time.perf_counter() - t0, 2)}]
    if json_out:
        out_console.file.write(dump_json(written) + "\n")
        return
    out_console.print(f"{doc['figure']:12s} {'  '.join(written[0]['figures'])}  (from {json_path})", highlight=False)
