"""The steps of `ascendbench run segmented-scan` that are its own (commands/generic.py makes the command from the
kernel's model and its RunCommand, kernels/streaming.py): the input file's kinds (.npz of values and flags, or a
.npy of values), the checks before any work, the report; the rest as the batched scan's (commands/run_batched.py)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ascendbench.commands.common import (
    check_files,
    fail,
    format_time,
    out_console,
    print_utilisation,
    refuse_input_with_model_only,
    title_rule,
)
from ascendbench.commands.run_batched import (
    check_memory,
    check_scan_options,
    header_elements,
    print_paths,
    report_rows,
)
from ascendbench.commands.run_batched import output as row_output

output = row_output  # the --output-file writer: the scanned values as .npy, as the batched scan's


MEMORY_OPTION = "n"  # the option a MemoryError of the functional run names


def prepare(spec, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`run segmented-scan`'s checks before any work (the parameter model, the size, the input file's kind, the
    files, the host's memory) and the pipeline's arguments."""
    input_file, model_only = options["input_file"], options["model_only"]
    count, seg_len = options["n"], options["segment_length"]
    if seg_len < 1:
        fail(f"--segment-length: must be at least 1, got {seg_len!r}")
    check_scan_options(spec, values, options["seed"])
    if input_file is None and count is None:
        fail("--n: is required without --input")
    refuse_input_with_model_only(input_file, model_only)
    if input_file is not None and input_file.suffix not in (".npz", ".npy"):
        fail(f"--input: must be a .npz (values and flags) or a .npy (values), got {str(input_file)!r}")
    if input_file is not None and not input_file.exists():  # before the --output-file check, as before
        fail(f"--input: file not found: {input_file}")
    check_files(input_file, options["output_file"], options["trace"], options["out"], options["no_save"], model_only)
    if not model_only:
        if input_file is not None and input_file.suffix == ".npy":
            check_memory(header_elements(input_file), "input", 64)
        elif input_file is None:
            check_memory(count, "n", 64)  # values, flags, the two scans and float64 references
    return values | {"input_file": input_file}


def report(run, saved_to, output_file, trace) -> None:
    """`run segmented-scan`'s report: times, bandwidth, phases, counters, verification, pipe utilisation, the
    formulation, files."""
    r = run.result
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
    report_rows(t, r)
    c.print(t)
    print_utilisation(r.utilisation)
    c.print(f"[dim]{r.model['formulation']}[/]")
    print_paths(saved_to, output_file, trace)
