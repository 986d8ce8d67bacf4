"""`ascendbench run segmented-scan`: scan every segment of an array (head flags) on the simulated NPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ascendbench.commands.common import (
    ExclusiveOption,
    HardwareOption,
    JsonOption,
    NoSaveOption,
    TraceOption,
    check_files,
    choice_option,
    command_line,
    count_option,
    fail,
    format_time,
    given,
    out_console,
    parse_count,
    print_utilisation,
    refuse_input_with_model_only,
    title_rule,
)
from ascendbench.commands.run import app
from ascendbench.commands.run_batched import (
    check_memory,
    check_scan_options,
    header_elements,
    report_rows,
    run_and_finish,
)
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.registry import choices


@app.command("segmented-scan")
def segmented_scan(
    n: Annotated[
        int | None, count_option("--n", help="Elements: 1000000, 1e6 or 2**20. Optional with --input.")
    ] = None,
    input_file: Annotated[
        Path | None,
        typer.Option(
            "--input",
            help="A .npz with 1-D arrays 'values' (float16 or "
            "int8) and 'flags' (bool/int8/uint8, non-zero starts a "
            "segment), or a .npy of values (flags then generated).",
        ),
    ] = None,
    segment_length: Annotated[
        int,
        count_option(
            "--segment-length", help="Generated flags: mean (random) or exact (regular) segment length."
        ),
    ] = 1024,
    heads: Annotated[
        str,
        choice_option("--heads", choices=choices("segmented-scan", "heads"),
            help="Generated flags: random (each element a head with "
                 "probability 1/segment-length, seeded) or regular (a head every "
                 "segment-length elements).",
        ),
    ] = "random",
    algorithm: Annotated[
        str,
        choice_option("--algorithm", "-a", choices=choices("segmented-scan", "algorithm"),
            help="mcscan or mcscan-ul1 (on the matrix scans) or vector (vector-only baseline).",
        ),
    ] = "mcscan",
    s: Annotated[int, choice_option("--s", choices=choices("segmented-scan", "s"),
                                    help="Tile side s of the matrix scans: 16, 32, 64 or 128.")] = 128,
    exclusive: ExclusiveOption = False,
    dtype: Annotated[
        str | None,
        choice_option("--dtype", choices=choices("segmented-scan", "dtype"),
            help="Values dtype: fp16 (fp32 output) or int8 (int32 output); default fp16 or the input's.",
        ),
    ] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the generated values and flags.")] = 0,
    output_file: Annotated[
        Path | None, typer.Option("--output-file", help="Save the result as .npy.")
    ] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Check against NumPy.")] = True,
    model_only: Annotated[
        bool,
        typer.Option(
            "--model-only",
            help="Timings and counters only (generated random flags: the expected segment count).",
        ),
    ] = False,
    warm_l2: Annotated[
        bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the input in L2 (default: cold).")
    ] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Result JSON path (default: results/runs/segmented-scan/<time>-<id>.json)."
        ),
    ] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Segmented scan (values and head flags) built on the matrix scans: simulated time, bandwidth, the time of
    each kernel of the sequence, pipe utilisation and counters, checked against NumPy."""
    from ascendbench.pipeline import run

    wall0 = time.perf_counter()
    try:
        count = parse_count(n, "n") if n is not None else None
        seg_len = parse_count(segment_length, "segment-length")
    except ValueError as exc:
        fail(str(exc))
    if seg_len < 1:
        fail(f"--segment-length: must be at least 1, got {segment_length!r}")
    check_scan_options("segmented-scan", algorithm, s, dtype, seed)
    if input_file is None and count is None:
        fail("--n: is required without --input")
    refuse_input_with_model_only(input_file, model_only)
    if input_file is not None and input_file.suffix not in (".npz", ".npy"):
        fail(f"--input: must be a .npz (values and flags) or a .npy (values), got {str(input_file)!r}")
    if input_file is not None and not input_file.exists():  # before the --output-file check, as before
        fail(f"--input: file not found: {input_file}")
    check_files(input_file, output_file, trace, out, no_save, model_only)
    if not model_only:
        if input_file is not None and input_file.suffix == ".npy":
            check_memory(header_elements(input_file), "input", 64)
        elif input_file is None:
            check_memory(count, "n", 64)  # values, flags, the two scans and float64 references

    run_and_finish(
        lambda report: run(
            "segmented-scan",
            **given(n=count, dtype=dtype),
            algorithm=algorithm,
            s=s,
            exclusive=exclusive,
            segment_length=seg_len,
            heads=heads,
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
        memory_option="n",
        wall0=wall0,
        output_file=output_file,
        trace=trace,
        out=out,
        no_save=no_save,
        json_out=json_out,
    )


def _print_report(r) -> None:
    m, p, c = r.metrics, r.problem, out_console
    title_rule(c, [
        f"segmented-scan {r.algorithm}", f"n={p.n:,}", f"{p.segments:,} segments", f"{p.dtype}->{p.out_dtype}",
        "exclusive" if p.exclusive else "inclusive", f"s={r.params['s']}", f"on {r.hardware['name']}",
    ])
    t = Table(show_header=False, box=None, padding=(0, 2))
    t.add_row("simulated time", format_time(m["time_s"]))
    t.add_row(
        "bandwidth", f"{m['bandwidth_gbps']:.1f} GB/s  (values and flags read once + output written once)"
    )
    t.add_row("fraction of HBM peak", f"{m['fraction_of_peak'] * 100:.1f} %")
    t.add_row("elements / s", f"{m['elements_per_s'] / 1e9:.2f} G")
    for name, secs in r.phases_s.items():
        t.add_row(f"  {name}", format_time(secs))
    report_rows(t, r)
    c.print(t)
    print_utilisation(r.utilisation)
    c.print(f"[dim]{r.model['formulation']}[/]")
