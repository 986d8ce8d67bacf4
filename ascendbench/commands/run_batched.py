"""The steps of `ascendbench run batched-scan` that are the row scans' own (commands/generic.py makes the command
from the kernel's model and its RunCommand, kernels/streaming.py), and what `run segmented-scan`'s steps share
with them: the checks by the model, the host's memory, the output rows, the report's rows."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from ascendbench.commands.common import (
    check_files,
    fail,
    format_bytes,
    format_time,
    out_console,
    print_utilisation,
    title_rule,
)
from ascendbench.kernels.base import ParamError


def check_memory(elements: int | None, option: str, bytes_per_element: int = 16) -> None:
    """Refuse a functional run of `elements` that would not fit the host's memory (pipeline.check_host_memory;
    one line naming the option, exit 2)."""
    if not elements:
        return
    from ascendbench.pipeline import check_host_memory

    needed = elements * bytes_per_element + 2**30  # input, output, reference and block temporaries
    try:
        check_host_memory(needed, option, f"the functional run of {elements:,} elements",
                          "use --model-only for timings at this size")
    except ParamError as exc:
        fail(str(exc))


def header_elements(path: Path) -> int | None:
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        return int(np.prod(getattr(arr, "shape", (0,))))
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # the run reports unreadable inputs with their reason
        return None


MEMORY_OPTION = "length"  # the option a MemoryError of the functional run names


def prepare(spec, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`run batched-scan`'s checks before any work (the parameter model, the sizes, the files, the host's memory)
    and the pipeline's arguments."""
    input_file, model_only = options["input_file"], options["model_only"]
    rows, cols = options["batch"], options["length"]
    check_scan_options(spec, values, options["seed"])
    if input_file is None and (rows is None or cols is None):
        fail(f"--{'batch' if rows is None else 'length'}: is required without --input")
    check_files(input_file, options["output_file"], options["trace"], options["out"], options["no_save"], model_only)
    if not model_only:
        if input_file is not None:
            check_memory(header_elements(input_file), "input")
        else:
            check_memory(rows * cols, "length")
    return values | {"input_file": input_file}


def check_scan_options(spec, values: dict[str, Any], seed: int) -> None:
    """The option checks every row-scan command shares, by the kernel's parameter model (one-line failures
    naming the option)."""
    try:
        spec.params({k: v for k, v in values.items() if k in ("dtype", "algorithm", "s")})
    except ParamError as exc:
        fail(str(exc))
    if seed < 0:
        fail(f"--seed: must be a non-negative integer, got {seed}")


def output(run, options: dict[str, Any]):
    """The --output-file writer of a row scan: the scanned rows as .npy (None: no output array)."""
    from ascendbench.store.io import atomic_save_npy

    y = run.arrays and run.arrays["y"]
    return None if y is None else lambda path: atomic_save_npy(path, y)


def print_paths(saved_to, output_file, trace) -> None:
    for label, path in (("result", saved_to), ("output", output_file), ("trace", trace)):
        if path is not None:
            out_console.print(f"{label} written to {path}")


def report_rows(t: Table, r) -> None:
    """The rows every row-scan report shares after its bandwidth: fraction of HBM peak, elements per second,
    phases, counters, verification, host time."""
    m = r.metrics
    t.add_row("fraction of HBM peak", f"{m['fraction_of_peak'] * 100:.1f} %")
    t.add_row("elements / s", f"{m['elements_per_s'] / 1e9:.2f} G")
    for name, secs in r.phases_s.items():
        t.add_row(f"  {name}", format_time(secs))
    counters = r.counters
    t.add_row(
        "matmuls",
        f"{int(counters.get('matmuls', 0)):,}  ({int(counters.get('cube_fractals', 0)):,} cube fractals)",
    )
    t.add_row(
        "vector instructions",
        f"{int(counters.get('vector_instructions', 0)):,}  "
        f"({int(counters.get('vector_repeats', 0)):,} repeats)",
    )
    t.add_row(
        "GM traffic",
        f"read {format_bytes(counters.get('bytes_gm_read', 0))} "
        f"(HBM {format_bytes(counters.get('bytes_hbm_read', 0))}), write {format_bytes(counters.get('bytes_gm_write', 0))} "
        f"(to HBM {format_bytes(counters.get('bytes_hbm_write', 0))})",
    )
    t.add_row(
        "syncs",
        f"{int(counters.get('sync_all', 0))} SyncAll, {int(counters.get('cross_core_flags', 0)):,} "
        "cross-core flags",
    )
    from rich.markup import escape

    v = r.verification
    tolerance = escape(v.tolerance or "")
    if not v.performed:
        t.add_row("verification", "[yellow]not run (--model-only or --no-verify)[/]")
    elif v.passed:
        t.add_row(
            "verification",
            f"[green]passed[/]  max abs error {v.max_abs_error:.3g}, max rel error "
            f"{v.max_rel_error:.3g}  (tolerance {tolerance})",
        )
    else:
        t.add_row(
            "verification",
            f"[bold red]FAILED[/]  max abs error {v.max_abs_error:.3g}, max rel error "
            f"{v.max_rel_error:.3g}  (tolerance {tolerance})",
        )
    host = r.host
    t.add_row(
        "host wall time",
        f"{host.wall_time_s:.2f} s  (timing model {host.model_time_s * 1e3:.0f} ms"
        + (f", functional {host.functional_time_s:.2f} s)" if host.functional_time_s is not None else ")"),
    )


def report(run, saved_to, output_file, trace) -> None:
    """`run batched-scan`'s report: times, what auto compared, bandwidth, phases, counters, verification, pipe
    utilisation, notes, files."""
    r = run.result
    m, p, c = r.metrics, r.problem, out_console
    chosen = r.params["algorithm_run"]
    title_rule(c, [
        f"batched-scan {chosen}{' (auto)' if r.algorithm == 'auto' else ''}", f"{p.batch:,} x {p.length:,}",
        f"{p.dtype}->{p.out_dtype}", "exclusive" if p.exclusive else "inclusive", f"s={r.params['s']}",
        f"on {r.hardware['name']}",
    ])
    t = Table(show_header=False, box=None, padding=(0, 2))
    t.add_row("simulated time", format_time(m["time_s"]))
    if len(r.candidates_time_s) > 1:
        t.add_row(
            "auto compared",
            ", ".join(f"{k} {format_time(v)}" for k, v in r.candidates_time_s.items()) + f"  -> {chosen}",
        )
    t.add_row(
        "bandwidth", f"{m['bandwidth_gbps']:.1f} GB/s  (input read once + output written once; 1 GB = 1e9 B)"
    )
    report_rows(t, r)
    c.print(t)
    print_utilisation(r.utilisation)
    if r.model.get("algorithm_choice"):
        c.print(f"[yellow]algorithm: {r.model['algorithm_choice']}[/]")
    if r.model.get("padded"):
        c.print(
            "[dim]pad: rows are not a multiple of the tile (or the batch is odd for scanu), so the input is first "
            "copied into a zero-padded workspace, as the measured kernels do[/]"
        )
    if r.model.get("row_scan_only_path"):
        c.print("[dim]rows no longer than s: s rows per tile, one A @ U_s each, no carries[/]")
    print_paths(saved_to, output_file, trace)
