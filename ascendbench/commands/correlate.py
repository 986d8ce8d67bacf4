"""`ascendbench correlate MEASUREMENTS`: measured kernel times beside the simulator's (ascendbench/correlate.py
does the work; this module parses, calls, writes and prints)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ascendbench.commands.common import (
    JsonOption,
    NoSaveOption,
    Outputs,
    check_target,
    choice_option,
    command_line,
    count_option,
    default_result_path,
    dump_json,
    fail,
    out_console,
    progress_bar,
    whole_keys,
)
from ascendbench.hardware import list_profiles

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.1%}"


def _params(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _print(doc, saved_to: Path | None, profile: Path | None) -> None:
    c = out_console
    t = Table(title=f"measured vs simulated: {doc.measurements.get('file', '')}", title_justify="left")
    for name, justify in (("row", "right"), ("kernel", "left"), ("label / parameters", "left"), ("window", "left"),
                          ("measured µs", "right"), ("simulated µs", "right"), ("ratio", "right")):
        t.add_column(name, justify=justify)
    for r in doc.rows:
        what = r.label or _params(r.params)
        if r.status == "refused":
            t.add_row(str(r.row), r.kernel, what, r.window, f"{r.measured_us:,.2f}", "[yellow]refused[/]",
                      r.reason or "")
            continue
        simulated = f"{r.simulated_us:,.2f}" + (f" (+{r.window_us:,.1f} host)" if r.window_us else "")
        t.add_row(str(r.row), r.kernel, what, r.window, f"{r.measured_us:,.2f}", simulated, f"{r.ratio:.3f}")
    c.print(whole_keys(t, "row", "kernel"))

    s = doc.summary
    t = Table(title="errors |simulated / measured - 1|", title_justify="left")
    for name in ("rows", "count", "mean", "median", "p90", "worst"):
        t.add_column(name, justify="left" if name == "rows" else "right")
    t.add_row("all", str(s.count), _pct(s.mape), _pct(s.median_abs_error), _pct(s.p90_abs_error),
              _pct(s.max_abs_error))
    if len(s.by_kernel) > 1:
        for kernel, k in s.by_kernel.items():
            t.add_row(kernel, str(k.count), _pct(k.mape), _pct(k.median_abs_error), _pct(k.p90_abs_error),
                      _pct(k.max_abs_error))
    c.print(whole_keys(t, "rows"))
    if s.refused:
        c.print(f"{s.refused} row{'s' if s.refused > 1 else ''} refused by the kernel (not counted)")

    if doc.marginal:
        t = Table(title="marginal costs: consecutive sizes of otherwise equal rows (fixed costs cancel)",
                  title_justify="left")
        for name in ("kernel", "shared parameters", "size", "measured Δ µs", "simulated Δ µs", "ratio"):
            t.add_column(name, justify="right" if "Δ" in name or name == "ratio" else "left")
        for m in doc.marginal:
            t.add_row(m.kernel, _params(m.fixed), f"{m.size_field} {m.from_size:,} → {m.to_size:,}",
                      f"{m.measured_delta_us:,.2f}", f"{m.simulated_delta_us:,.2f}",
                      "" if m.ratio is None else f"{m.ratio:.2f}")
        c.print(whole_keys(t, "kernel", "size"))
    if doc.ranking:
        t = Table(title="rank agreement: one problem, several configurations", title_justify="left")
        for name in ("kernel", "problem", "configs", "Kendall τ", "model's pick", "measured best", "regret"):
            t.add_column(name, justify="right" if name in ("configs", "Kendall τ", "regret") else "left")
        for r in doc.ranking:
            t.add_row(r.kernel, _params(r.problem), str(r.configurations),
                      "" if r.kendall_tau is None else f"{r.kendall_tau:+.2f}", _params(r.model_pick),
                      _params(r.measured_best), _pct(r.regret))
        c.print(whole_keys(t, "kernel"))
    for f in doc.flags:
        c.print(f"[bold yellow]flag[/] row {f.row} ({f.kernel}): measured {f.measured_us:,.2f} µs is below the "
                f"physical bound: {f.detail} (a wrong profile, or a wrong row)")

    if doc.fit is not None:
        fit = doc.fit
        t = Table(title=f"fit on {fit.hardware} ({fit.rows} rows, {fit.folds} folds)",
                  title_justify="left")
        for name in ("constant", "before", "after", "change"):
            t.add_column(name, justify="left" if name == "constant" else "right")
        for name, v in fit.constants.items():
            t.add_row(name, f"{v.before:.6g}", f"{v.after:.6g}", f"{v.after / v.before - 1:+.1%}")
        c.print(whole_keys(t, "constant"))
        c.print(f"fit error {_pct(fit.fit_error_before)} → {_pct(fit.fit_error_after)}; cross-validated error "
                f"(held-out folds) {_pct(fit.cv_error_before)} → {_pct(fit.cv_error_after)}")
    if profile is not None:
        c.print(f"profile written to {profile} (use it with --hardware {profile})")
    if saved_to is not None:
        c.print(f"result written to {saved_to}")


def _names(free: list[str] | None) -> list[str]:
    return [w.strip() for part in free or () for w in part.split(",") if w.strip()]


def correlate(
    measurements: Annotated[Path, typer.Argument(metavar="MEASUREMENTS", help="CSV (with a header) or JSON Lines "
                                                 "(.jsonl) file, one measured run per row: kernel, measured_us, "
                                                 "optional window, label, hardware, and the kernel's parameters "
                                                 "(docs/correlate.md).")],
    hardware: Annotated[str | None, choice_option("--hardware", choices=list_profiles, closed=False,
                                                  metavar="<profile>", help="Profile of rows without a hardware "
                                                  "column: a shipped name or a .toml path (default: each kernel's "
                                                  "paper's chip).")] = None,
    fit: Annotated[bool, typer.Option("--fit", help="Fit the profile constants marked calibrated and those named "
                                      "by --free, by least squares on log(simulated / measured), with K-fold "
                                      "cross-validation.")] = False,
    free: Annotated[list[str] | None, typer.Option("--free", metavar="NAME[,NAME...]", help="Profile constants to "
                                                   "fit besides those marked calibrated (float constants: "
                                                   "hbm_efficiency, gm_read_bytes_per_cycle, host_launch_us, ...; "
                                                   "`ascendbench hardware show` lists them).")] = None,
    folds: Annotated[int, count_option("--folds", help="Folds of the cross-validation (2 to 100).")] = 5,
    write_profile: Annotated[Path | None, typer.Option("--write-profile", metavar="OUT.toml", help="With --fit: "
                                                       "write the profile with the fitted constants (usable with "
                                                       "--hardware OUT.toml).")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", metavar="FILE", help="Draw simulated against measured (log "
                                              "axes, y = x, ±10%) and the ratio against size (.png, .svg or "
                                              ".pdf).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/correlate/<file>/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Compare measured kernel times with the simulator: per row the simulated time and the ratio; errors per
    kernel and overall; marginal costs, rank agreement and physical checks; optionally fit profile constants.
    Exit status 0, 1 when the fit makes the cross-validated error worse, 2 on bad input."""
    if not 2 <= folds <= 100:
        fail(f"--folds: {folds} is not allowed; give 2 to 100 folds")
    from ascendbench import correlate as lib
    from ascendbench.hardware.profile import HardwareError, load_profile

    wall0 = time.perf_counter()
    names = _names(free)
    if free is not None and not fit:
        fail("--free: names constants for --fit; add --fit")
    if write_profile is not None and not fit:
        fail("--write-profile: writes the fitted profile; add --fit")
    if out is not None and no_save:
        fail("--out: cannot be combined with --no-save")
    if not measurements.is_file():
        fail(f"MEASUREMENTS: {'not a file' if measurements.exists() else 'file not found'}: {measurements}")
    taken = {measurements.resolve(): "the MEASUREMENTS file"}
    check_target(out, "out", ".json", taken)
    check_target(write_profile, "write-profile", ".toml", taken)
    if plot is not None and plot.suffix.lower() not in PLOT_SUFFIXES:
        fail(f"--plot: must end in {', '.join(PLOT_SUFFIXES)}, got {str(plot)!r}")
    check_target(plot, "plot", plot.suffix if plot is not None else "", taken)
    profiles = {}
    if hardware is not None:
        try:
            profiles[hardware] = load_profile(hardware)
        except HardwareError as exc:
            fail(str(exc))
    try:
        rows = lib.read_measurements(measurements, hardware, profiles)
    except lib.MeasurementError as exc:
        fail(f"{measurements}: {exc}")

    simulator = lib.RowSimulator()
    progress, report = progress_bar(json_out)
    outcome = None
    with progress:
        doc = lib.correlate(rows, source=measurements, command=command_line(), simulator=simulator,
                            progress=report)
        if fit:
            hw = next(iter({m.hw.name: m.hw for m in rows}.values()))
            wanted = list(dict.fromkeys([*lib.calibrated_constants(hw), *names]))
            try:
                outcome = lib.fit_constants(rows, wanted, folds, simulator=simulator, progress=report)
            except lib.FitError as exc:
                fail(str(exc))
    if outcome is not None:
        doc.fit = outcome.result(hw.name, str(write_profile) if write_profile is not None and outcome.accepted
                                 else None)
    doc.wall_time_s = time.perf_counter() - wall0
    saved_to = None if no_save else (out or default_result_path("correlate", measurements.stem))
    if outcome is not None and not outcome.accepted:
        saved_to = None  # refused: nothing written
    data = doc.model_dump(mode="json")
    with Outputs() as outputs:
        if saved_to is not None:
            outputs.write_json("out", saved_to, data)
        if write_profile is not None and outcome is not None and outcome.accepted:
            provenance = (f"ascendbench correlate --fit on {measurements.name} (sha256 "
                          f"{doc.measurements['sha256']}), {outcome.rows} rows, fit error "
                          f"{outcome.fit_error_before:.2%} -> {outcome.fit_error_after:.2%}, cross-validated error "
                          f"{outcome.cv_error_before:.2%} -> {outcome.cv_error_after:.2%} over {outcome.folds} "
                          f"folds, {datetime.now(UTC).date().isoformat()}, ascendbench {doc.tool_version}")
            text = lib.profile_toml(hw, write_profile.stem, outcome.after, provenance)
            from ascendbench.store.io import atomic_write_text

            outputs.write("write-profile", write_profile, lambda target: atomic_write_text(target, text))
        if plot is not None and (outcome is None or outcome.accepted):
            from ascendbench.correlate_plot import draw

            figure = draw(doc)
            outputs.write("plot", plot, lambda target: figure.savefig(target, format=plot.suffix[1:].lower(), dpi=150,
                                                                      bbox_inches="tight"))
    if json_out:
        out_console.file.write(dump_json(data) + "\n")
    else:
        _print(doc, saved_to, write_profile if doc.fit is not None and doc.fit.profile_written else None)
    if outcome is not None and not outcome.accepted:
        fail(f"--fit: {doc.fit.reason} (nothing written)", code=1)
