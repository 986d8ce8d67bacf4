"""The steps of `ascendbench run scan` that are the streaming scan's own (commands/generic.py makes the command
from the kernel's model and its RunCommand, kernels/streaming.py): --chunk's forms, the estimate of a long
functional run, the output written as a memory map while the scan streams, and the report."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from ascendbench.commands.common import (
    check_files,
    err_console,
    fail,
    format_bytes,
    format_time,
    given,
    out_console,
    parse_count,
    print_utilisation,
)
from ascendbench.hardware import HardwareError, load_profile
from ascendbench.kernels.base import BufferCapacityError, ParamError
from ascendbench.kernels.partition import PARTITION_LIMIT
from ascendbench.kernels.registry import get_spec
from ascendbench.store.io import partial_path

# Elements above which the functional run's host time is estimated first (a timed sample of 2**21 elements,
# about 0.2 s): below, the run takes seconds (about 20 ns per element on a 2-core machine, bench_scan.py), and
# the note of NOTE_ABOVE_S would need a host ten times slower.
ESTIMATE_ABOVE = 2**28
NOTE_ABOVE_S = 60.0  # estimated seconds above which the command says how long and how to skip it
REFUSE_ABOVE_S = 7 * 86400.0  # estimated seconds above which it refuses (a week: certainly not meant)


def _header_dtype(input_file: Path | None) -> str | None:
    if input_file is None:
        return None
    try:
        header = np.load(input_file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    return {"float16": "fp16", "int8": "int8"}.get(str(getattr(header, "dtype", "")))


def _announce_functional_time(count, option, algorithm, s, blocks, chunk, exclusive, dtype, out_dtype, hardware):
    """Estimate the streaming functional run's host time from a timed sample; refuse beyond REFUSE_ABOVE_S,
    say how long and how to skip it beyond NOTE_ABOVE_S."""
    try:
        hw = load_profile(hardware)
        spec = get_spec("scan")
        params = spec.params(n=count, algorithm=algorithm, s=s, blocks=blocks, chunk=chunk, exclusive=exclusive,
                             dtype=dtype or "fp16", out_dtype=out_dtype)
        spec.check(params, hw)
        seconds = spec.estimate_functional_seconds(count, algorithm, params.scan, hw)
    except (ParamError, HardwareError, BufferCapacityError):
        return  # the run itself reports bad arguments
    if seconds > REFUSE_ABOVE_S:
        fail(f"--{option}: the functional run of {count} elements would take about {format_time(seconds)} on this host; "
             "use --model-only for timings at this size")
    if seconds > NOTE_ABOVE_S:
        err_console.print(f"note: the functional run of {count:,} elements streams in partitions of at most 2**31 - 1 "
                          f"with bounded memory and will take about {format_time(seconds)} on this host (estimated from "
                          "2**21 elements); press Ctrl-C and add --model-only to skip it", highlight=False)


def _parse_chunk(text: str | None) -> int | None:
    if text is None or text.strip().lower() == "auto":
        return None
    if text.strip().lower() == "off":
        return 0
    try:
        return parse_count(text, "chunk")
    except ValueError as exc:
        if "too large" in str(exc):
            raise
        raise ValueError(f"--chunk: expected 'auto', 'off', 0 or an element count such as 2**24, got {text!r}") from None


MEMORY_OPTION = "n"  # the option a MemoryError of the functional run names


def prepare(spec, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`run scan`'s checks before any work (--chunk, --partition-limit, --generator, the parameter model, the
    files; a long functional run announced or refused) and the pipeline's arguments: the output is written to a
    partial file as the scan streams (moved into place after the run: generic._move)."""
    count, limit, generator = options["n"], options["partition_limit"], options["generator"]
    input_file, output_file, model_only = options["input_file"], options["output_file"], options["model_only"]
    try:
        chunk_elems = _parse_chunk(options["chunk"])
    except ValueError as exc:
        fail(str(exc))
    if not 1 <= limit <= PARTITION_LIMIT:
        fail(f"--partition-limit: must be in [1, 2**31 - 1], got {limit}")
    if input_file is not None and generator != "random":
        fail("--generator: there is no generated input with --input; drop one of them")
    if options.get("l2") == "warm" and options["warm_l2"] is False:  # None: neither --warm-l2 nor --no-warm-l2
        # the reverse pair (--l2 flushed --warm-l2) is refused by the run (kernels/scan_run.py)
        fail("--l2: --no-warm-l2 means a start without the input in L2; it disagrees with --l2 warm")
    values = values | given(chunk=chunk_elems)
    try:  # the scan's parameter model (kernels/streaming.py) checks the rest
        spec.params({k: v for k, v in values.items() if k != "n"})
    except ParamError as exc:
        fail(str(exc))
    check_files(input_file, output_file, options["trace"], options["out"], options["no_save"], model_only)
    if not model_only and input_file is not None:
        try:
            header = np.load(input_file, mmap_mode="r", allow_pickle=False)
            count_for_memory = int(np.prod(getattr(header, "shape", (0,))))
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # the run reports unreadable inputs and why
            count_for_memory = None
    else:
        count_for_memory = count
    if not model_only and count_for_memory and count_for_memory > ESTIMATE_ABOVE:
        _announce_functional_time(count_for_memory, "input" if input_file is not None else "n",
                                  options["algorithm"] or "mcscan", options["s"], options["blocks"], chunk_elems,
                                  options["exclusive"], options["dtype"] or _header_dtype(input_file),
                                  options["out_dtype"], options["hardware"])
    tmp_output = partial_path(output_file) if output_file is not None else None  # check_files removed old ones
    return values | {"input_file": input_file, "warm_l2": bool(options["warm_l2"]), "generator": generator,
                     "partition_limit": limit, "output_path": tmp_output,
                     "keep_output": False}  # the command never reads the array: verified on the fly


def report(run, saved_to, output_file, trace) -> None:
    """`run scan`'s report: times, bandwidth, phases, counters, verification, pipe utilisation, notes, files."""
    r = run.result
    m = r.metrics
    c = out_console
    p = r.params
    title = (f"{r.kernel}  n={r.problem.n:,}  {r.problem.dtype}->{r.problem.out_dtype}  "
             f"{'exclusive' if r.problem.exclusive else 'inclusive'}  s={p['s']}  on {r.hardware['name']}")
    c.rule(f"[bold]{title}")
    t = Table(show_header=False, box=None, padding=(0, 2))
    t.add_row("simulated time", format_time(m["time_s"]) + "  (kernel, as msprof times it)")
    if m.get("call_time_s") is not None:
        t.add_row("timed around the call", f"{format_time(m['call_time_s'])}  (kernel + {format_time(m['host_window_s'])} "
                  f"host steps of {r.model['host_window']['wrapper']})")
    t.add_row("bandwidth", f"{m['bandwidth_gbps']:.1f} GB/s  (input read once + output written once; 1 GB = 1e9 B)")
    t.add_row("fraction of HBM peak", f"{m['fraction_of_peak'] * 100:.1f} %  of {r.hardware['constants']['hbm_bandwidth_gbps']['value']:.0f} GB/s")
    frac = m["fraction_of_memcpy"]
    t.add_row("fraction of memcpy", f"{frac * 100:.1f} %  (memcpy of the same bytes: {m['memcpy_bandwidth_gbps']:.1f} GB/s, "
              f"{format_time(m['memcpy_time_s'])})" if frac is not None else "-")
    t.add_row("elements / s", f"{m['elements_per_s'] / 1e9:.2f} G")
    for name, secs in r.phases_s.items():
        t.add_row(f"  {name}", format_time(secs))
    counters = r.counters
    t.add_row("matmuls", f"{int(counters.get('matmuls', 0)):,}  ({int(counters.get('cube_fractals', 0)):,} cube fractals)")
    t.add_row("vector instructions", f"{int(counters.get('vector_instructions', 0)):,}  "
              f"({int(counters.get('vector_repeats', 0)):,} repeats)")
    t.add_row("GM traffic", f"read {format_bytes(counters.get('bytes_gm_read', 0))} "
              f"(HBM {format_bytes(counters.get('bytes_hbm_read', 0))}, L2 hits {format_bytes(counters.get('bytes_l2_hit', 0))}), "
              f"write {format_bytes(counters.get('bytes_gm_write', 0))} (to HBM {format_bytes(counters.get('bytes_hbm_write', 0))})")
    t.add_row("syncs", f"{int(counters.get('sync_all', 0)):,} SyncAll, {int(counters.get('cross_core_flags', 0)):,} "
              "cross-core flags")
    v = r.verification
    if not v.performed:
        t.add_row("verification", "[yellow]not run (--model-only)[/]")
    elif v.passed:
        t.add_row("verification", f"[green]passed[/]  max abs error {v.max_abs_error:.3g}, max rel error "
                  f"{v.max_rel_error:.3g}  (tolerance {v.tolerance})")
    else:
        t.add_row("verification", f"[bold red]FAILED[/]  max abs error {v.max_abs_error:.3g}, max rel error "
                  f"{v.max_rel_error:.3g}  (tolerance {v.tolerance})")
    host = r.host
    t.add_row("host wall time", f"{host.wall_time_s:.2f} s  (timing model {host.model_time_s * 1e3:.0f} ms"
              + (f", functional {host.functional_time_s:.2f} s)" if host.functional_time_s is not None else ")"))
    c.print(t)
    print_utilisation(r.utilisation)
    if "pad" in r.phases_s or "tail" in r.phases_s:
        c.print("[dim]pad / tail: n (or an L2 chunk) is not a multiple of the s*s tile; as the measured kernels do, "
                "the multi-core scans copy it into a zero-padded workspace, the single-core scans pad the last tile[/]")
    choice = r.model.get("algorithm_choice")
    if choice and r.kernel == "mcscan" and "mcscan-ul1" in choice:
        c.print(f"[yellow]algorithm: {choice}[/]")
    c.print(f"[dim]L2 at the start: {r.model.get('l2', 'flushed')}"
            + (" (full of the dirty lines of the buffer the papers zeroed before every timed run)"
               if r.model.get("l2", "flushed") == "flushed" else "") + "[/]")
    if r.model.get("extrapolated"):
        c.print("[dim]timing: simulated on two smaller instances of the problem (L2 scaled in proportion) and "
                "extrapolated[/]")
    for label, path in (("result", saved_to), ("output", output_file), ("trace", trace)):
        if path is not None:
            c.print(f"{label} written to {path}")
