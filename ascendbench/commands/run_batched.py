"""`ascendbench run batched-scan`: scan every row of a (batch, length) array on the simulated NPU."""

from __future__ import annotations

import time
import zipfile
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from ascendbench.commands.common import (
    ExclusiveOption,
    HardwareOption,
    JsonOption,
    NoSaveOption,
    Outputs,
    TraceOption,
    check_files,
    choice_option,
    command_line,
    count_option,
    default_result_path,
    dump_json,
    fail,
    format_bytes,
    format_time,
    given,
    out_console,
    parse_count,
    print_utilisation,
    progress_bar,
    title_rule,
)
from ascendbench.commands.run import app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE, HardwareError
from ascendbench.kernels.base import BufferCapacityError, InputError, ParamError
from ascendbench.kernels.registry import choices, get_spec


def check_memory(elements: int | None, option: str, bytes_per_element: int = 16) -> None:
    """Refuse a functional run that would not fit the host's memory (one line naming the option)."""
    if not elements:
        return
    needed = elements * bytes_per_element + 2**30  # input, output, reference and block temporaries
    from ascendbench.pipeline import available_memory

    available = available_memory()
    if available is not None and needed > 0.9 * available:
        fail(
            f"--{option}: the functional run of {elements} elements needs about {needed / 2**30:.1f} GiB, "
            f"{available / 2**30:.1f} GiB available; use --model-only for timings at this size"
        )


def header_elements(path: Path) -> int | None:
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        return int(np.prod(getattr(arr, "shape", (0,))))
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # the run reports unreadable inputs with their reason
        return None


@app.command("batched-scan")
def batched_scan(
    batch: Annotated[
        int | None, count_option("--batch", help="Rows (independent arrays), e.g. 40. Optional with --input.")
    ] = None,
    length: Annotated[
        int | None,
        count_option("--length", help="Elements per row: 65536, 64e3 or 2**16. Optional with --input."),
    ] = None,
    algorithm: Annotated[
        str,
        choice_option("--algorithm", "-a", choices=choices("batched-scan", "algorithm"),
            help="scanu (ScanU, 2:1 vector/cube), scanul1 "
                 "(ScanUL1, one AI core per row), auto (the faster by the timing model) "
                 "or vector (vector-only baseline).",
        ),
    ] = "auto",
    s: Annotated[int, choice_option("--s", choices=choices("batched-scan", "s"),
                                    help="Tile side s (s x s matrices): 16, 32, 64 or 128.")] = 128,
    exclusive: ExclusiveOption = False,
    dtype: Annotated[
        str | None,
        choice_option("--dtype", choices=choices("batched-scan", "dtype"),
            help="Input dtype: fp16 (fp32 output) or int8 (int32 "
                 "output); default fp16 or the --input array's.",
        ),
    ] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the generated input.")] = 0,
    input_file: Annotated[
        Path | None,
        typer.Option("--input", help="Scan the rows of this 2-D (batch, length) float16 or int8 .npy array."),
    ] = None,
    output_file: Annotated[
        Path | None, typer.Option("--output-file", help="Save the scanned rows as .npy.")
    ] = None,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Check every row against NumPy.")
    ] = True,
    model_only: Annotated[
        bool, typer.Option("--model-only", help="Timings and counters only, no data.")
    ] = False,
    warm_l2: Annotated[
        bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the input in L2 (default: cold).")
    ] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Result JSON path (default: results/runs/batched-<algorithm>/<time>-<id>.json)."
        ),
    ] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Scan every row of a (batch, length) array (scan paper appendix B.1): simulated time, bandwidth,
    the algorithm auto chose, phases, pipe utilisation and counters, checked against NumPy row by row."""
    from ascendbench.pipeline import run

    wall0 = time.perf_counter()
    try:
        rows = parse_count(batch, "batch") if batch is not None else None
        cols = parse_count(length, "length") if length is not None else None
    except ValueError as exc:
        fail(str(exc))
    check_scan_options("batched-scan", algorithm, s, dtype, seed)
    if input_file is None and (rows is None or cols is None):
        fail(f"--{'batch' if rows is None else 'length'}: is required without --input")
    check_files(input_file, output_file, trace, out, no_save, model_only)
    if not model_only:
        if input_file is not None:
            check_memory(header_elements(input_file), "input")
        else:
            check_memory(rows * cols, "length")

    run_and_finish(
        lambda report: run(
            "batched-scan",
            **given(batch=rows, length=cols, dtype=dtype),
            algorithm=algorithm,
            s=s,
            exclusive=exclusive,
            seed=seed,
            input_file=input_file,
            hardware=hardware,
            model_only=model_only,
            verify=verify,
            warm_l2=warm_l2,
            command=command_line(),
            progress=report,
        ),
        _print_report,
        memory_option="length",
        wall0=wall0,
        output_file=output_file,
        trace=trace,
        out=out,
        no_save=no_save,
        json_out=json_out,
    )


def check_scan_options(kernel: str, algorithm: str, s: int, dtype: str | None, seed: int) -> None:
    """The option checks every row-scan command shares, by the kernel's parameter model (one-line failures
    naming the option)."""
    try:
        get_spec(kernel).params(given(dtype=dtype), algorithm=algorithm, s=s)
    except ParamError as exc:
        fail(str(exc))
    if seed < 0:
        fail(f"--seed: must be a non-negative integer, got {seed}")


def run_and_finish(
    start,
    print_report,
    *,
    memory_option: str,
    wall0: float,
    output_file,
    trace,
    out,
    no_save: bool,
    json_out: bool,
) -> None:
    """Run a row scan through the pipeline (`start(progress)`) under the progress bar, turn its errors into one-line failures,
    write the outputs, print the report (or the JSON) and exit 1 when verification failed."""
    progress, report = progress_bar(json_out)
    try:
        with progress:
            run = start(report)
    except (ParamError, InputError, HardwareError, BufferCapacityError) as exc:
        fail(str(exc))
    except MemoryError:
        fail(f"--{memory_option}: not enough memory for the functional run at this size; use --model-only")
    result = run.result
    result.host.wall_time_s = time.perf_counter() - wall0
    saved_to = write_outputs(result, run.sim, run.arrays and run.arrays["y"], output_file, trace, out, no_save,
                             json_out)
    if not json_out:
        print_report(result)
        print_paths(saved_to, output_file, trace)
    if result.verification.performed and not result.verification.passed:
        raise typer.Exit(1)


def write_outputs(result, sim, output, output_file, trace, out, no_save, json_out) -> Path | None:
    """Write the run's files all or nothing (the output array, the trace, the result JSON), and print the JSON
    document with --json. Returns where the result went (None with --no-save)."""
    from ascendbench.sim.trace import write_chrome_trace
    from ascendbench.store.io import atomic_save_npy

    doc = result.model_dump(mode="json")
    saved_to = None if no_save else (out or default_result_path("runs", result.kernel))
    with Outputs() as outputs:
        if output_file is not None and output is not None:
            outputs.write("output-file", output_file, lambda path: atomic_save_npy(path, output))
        if trace is not None:
            outputs.write("trace", trace, lambda path: write_chrome_trace(sim, path, name=result.kernel))
        if saved_to is not None:
            outputs.write_json("out", saved_to, doc)
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
    return saved_to


def print_paths(saved_to, output_file, trace) -> None:
    for label, path in (("result", saved_to), ("output", output_file), ("trace", trace)):
        if path is not None:
            out_console.print(f"{label} written to {path}")


def report_rows(t: Table, r) -> None:
    """The rows every row-scan report shares: counters, verification, host time."""
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


def _print_report(r) -> None:
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
    t.add_row("fraction of HBM peak", f"{m['fraction_of_peak'] * 100:.1f} %")
    t.add_row("elements / s", f"{m['elements_per_s'] / 1e9:.2f} G")
    for name, secs in r.phases_s.items():
        t.add_row(f"  {name}", format_time(secs))
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
