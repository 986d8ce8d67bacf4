"""The command steps of the operators' `run <kernel>` (commands/generic.py makes the commands and runs the
steps): input files (named arrays), the checks before any work, the output arrays and the printed report.
One-line errors with exit status 2, as every command's."""

from __future__ import annotations

import io
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
)
from ascendbench.hardware import HardwareError, load_profile
from ascendbench.kernels.base import InputError
from ascendbench.pipeline import KernelRun, read_input

__all__ = ["check_array", "check_arrays", "output", "output_suffix", "prepare", "report"]


def output_suffix(output_file: Path | None, model_only: bool) -> str:
    """The suffix of an --output-file that may be .npy or .npz (".npy" without one); fails (exit 2) on another
    suffix or with --model-only, which has no output."""
    if output_file is None:
        return ".npy"
    if output_file.suffix not in (".npy", ".npz"):
        fail(f"--output-file: must end in .npy or .npz, got {str(output_file)!r}")
    if model_only:
        fail("--output-file: there is no output with --model-only; drop one of them")
    return output_file.suffix


def check_arrays(path: Path, arrays: dict[str, np.ndarray], allowed: tuple[str, ...]) -> None:
    """The arrays of an --input file of 1-D inputs: named among `allowed`, at least one, every one 1-D and all of
    one length; fails (exit 2) otherwise."""
    unknown = [k for k in arrays if k not in allowed]
    if unknown:
        fail(f"--input: unexpected array {unknown[0]!r} in {path}; allowed names: {', '.join(allowed)}")
    if not arrays:
        fail(f"--input: {path} holds no arrays; expected {', '.join(allowed)}")
    lengths = set()
    for name, a in arrays.items():
        if a.ndim != 1:
            fail(f"--input: array {name!r} must be 1-D, got shape {tuple(a.shape)}")
        lengths.add(a.shape[0])
    if len(lengths) > 1:
        fail(f"--input: arrays must have one length, got {', '.join(f'{k}: {v.shape[0]}' for k, v in arrays.items())}")


def check_array(arrays: dict[str, np.ndarray], name: str) -> None:
    """The one input array of an --input file: a .npy array, or a .npz with one array named `name` (topp's
    'probs'); shape and dtype are the kernel's to check. Fails (exit 2) otherwise."""
    if list(arrays) != [name]:
        fail(f"--input: a .npz must hold one array named {name!r}, found {', '.join(arrays) or 'none'}")


def prepare(spec, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The operators' checks before any work (an --input with --model-only is refused before the file is read)
    and the pipeline's arguments: the field values, the hardware profile, the --input file's arrays (named
    arrays of a .npz, or the first input's .npy) and its sha256."""
    input_file, output_file = options["input_file"], options["output_file"]
    model_only = options.get("model_only", False)
    cmd = spec.run_command
    suffix = output_suffix(output_file, model_only) if cmd.output == ".npy/.npz" else cmd.output
    if options["seed"] < 0:
        fail(f"--seed: must be a non-negative integer, got {options['seed']}")
    check_files(input_file, output_file, options["trace"], options["out"], options["no_save"], model_only, suffix)
    try:
        hw = load_profile(options["hardware"])
    except HardwareError as exc:
        fail(str(exc))
    arrays, sha = None, None
    main = spec.inputs[0]
    if input_file is not None:
        try:
            arrays, sha = read_input(input_file, main.name)
        except InputError as exc:
            fail(str(exc))
        if main.shape == "(n,)":
            check_arrays(input_file, arrays, tuple(i.name for i in spec.inputs))
        else:
            check_array(arrays, main.name)
    return values | {"arrays": arrays, "input_file": input_file, "input_sha256": sha, "hardware": hw}


def output(run: KernelRun, options: dict[str, Any]):
    """The --output-file writer: the output arrays as .npy (the first) or .npz (None: no arrays)."""
    if run.arrays is None:
        return None
    return lambda path: _save_arrays(path, run.arrays)


def _save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    from ascendbench.store.io import atomic_save_npy, atomic_write_bytes

    if path.suffix == ".npy":
        atomic_save_npy(path, next(iter(arrays.values())))
    else:
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        atomic_write_bytes(path, buf.getvalue())


def report(run: KernelRun, saved_to, output_file, trace) -> None:
    """The operators' report: parameters, simulated time, bandwidth, the other variant, phases, counters,
    outputs, verification, pipe utilisation, notes and the files written."""
    c = out_console
    r = run.result
    s = r.simulated
    p = r.problem
    params = ", ".join(f"{k} {v}" for k, v in p.params.items())
    c.rule(f"[bold]{p.operator}  n={p.n:,}  {', '.join(f'{k} {v}' for k, v in p.dtypes.items())}  "
           f"{s.variant}  on {r.hardware['name']}")
    t = Table(show_header=False, box=None, padding=(0, 2))
    if params:
        t.add_row("parameters", params)
    t.add_row("simulated time", format_time(s.time_s))
    if s.bandwidth_gbps is not None:
        t.add_row("bandwidth", f"{s.bandwidth_gbps:.1f} GB/s  ({format_bytes(s.bandwidth_bytes)} read and written "
                  "once / time; 1 GB = 1e9 B)")
    b = s.baseline
    if b is not None:
        speed = f"{b['speedup']:.2f}x" if b["speedup"] is not None else "-"
        t.add_row("other variant", f"{b['variant']}: {format_time(b['time_s'])}  (speed-up of {s.variant} over it: "
                  f"{speed})")
    for name, secs in s.phases_s.items():
        t.add_row(f"  {name}", format_time(secs))
    k = s.counters
    if k.get("scans") or k.get("matmuls"):  # a vector-only variant runs none: no row
        t.add_row("scans", f"{int(k.get('scans', 0))}  ({int(k.get('matmuls', 0)):,} matmuls)")
    t.add_row("GM traffic", f"read {format_bytes(k.get('bytes_gm_read', 0))} (HBM {format_bytes(k.get('bytes_hbm_read', 0))}), "
              f"write {format_bytes(k.get('bytes_gm_write', 0))}")
    t.add_row("syncs", f"{int(k.get('sync_all', 0))} SyncAll")
    for name, value in r.outputs.items():
        t.add_row(name, f"{value:,}" if isinstance(value, int) else str(value))
    v = r.verification
    if not v.performed:
        t.add_row("verification", "[yellow]not run (" + ("--model-only" if p.data == "none" else "--no-verify")
                  + ")[/]")
    elif v.passed:
        t.add_row("verification", f"[green]passed[/]  (equal to {v.reference})")
    else:
        t.add_row("verification", f"[bold red]FAILED[/]  {v.detail}")
    t.add_row("host wall time", f"{r.host.wall_time_s:.2f} s  (timing model {r.host.model_time_s * 1e3:.0f} ms)")
    c.print(t)
    print_utilisation(s.utilisation)
    for note in run.notes:
        c.print(f"[dim]{note}[/]")
    for label, path in (("result", saved_to), ("output", output_file), ("trace", trace)):
        if path is not None:
            c.print(f"{label} written to {path}")
