"""`ascendbench run scan`: run a scan kernel on a real array through the simulated machine."""

from __future__ import annotations

import os
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
    check_files,
    choice_option,
    command_line,
    count_option,
    default_result_path,
    dump_json,
    err_console,
    fail,
    format_bytes,
    format_time,
    given,
    out_console,
    parse_count,
    print_utilisation,
    progress_bar,
)
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE, HardwareError, load_profile
from ascendbench.kernels.base import BufferCapacityError, InputError, ParamError
from ascendbench.kernels.partition import GENERATORS, PARTITION_LIMIT
from ascendbench.kernels.registry import choices, get_spec
from ascendbench.pipeline import run as run_kernel
from ascendbench.store.io import partial_path

app = typer.Typer(help="Run a kernel on real data through the simulated NPU and verify it.", no_args_is_help=True)

_ALGORITHMS = ", ".join(choices("scan", "algorithm"))
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


def _drop(path: Path | None) -> None:
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


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


@app.command("scan")
def scan(
    n: Annotated[int | None, count_option("--n", help="Elements to scan: 100000000, 1e8, 100_000_000, 2**27 or "
                                             "2**32+1. Optional with --input.")] = None,
    algorithm: Annotated[str | None, choice_option("--algorithm", "-a", choices=choices("scan", "algorithm"),
                                                   help=f"Scan kernel: {_ALGORITHMS} (default: "
                                                        "mcscan-ul1 where every row's fp16 sum fits its fp16 C1, else "
                                                        "mcscan, saying why; mcscan for int8).")] = None,
    s: Annotated[int, choice_option("--s", choices=choices("scan", "s"),
                                    help="Tile side s (s x s matrices): 16, 32, 64 or 128.")] = 128,
    blocks: Annotated[int | None, count_option("--blocks", help="Blocks of the multi-core scans "
                                                  "(default and at most: all AI cores).")] = None,
    chunk: Annotated[str | None, typer.Option("--chunk", help="Elements per L2 chunk: 'auto' (default: the paper's "
                                                 "rule), 'off'/0, or a count such as 2**24.")] = None,
    exclusive: ExclusiveOption = False,
    dtype: Annotated[str | None, choice_option("--dtype", choices=choices("scan", "dtype"),
                                               help="Input dtype: fp16 or int8 (default fp16, or the "
                                                    "--input array's).")] = None,
    out_dtype: Annotated[str | None, choice_option("--out-dtype", choices=choices("scan", "out_dtype"),
                                                   help="Output dtype: fp32 (default for fp16), fp16, "
                                                        "int32 (int8 input).")] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the generated input.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Scan this 1-D float16 or int8 .npy array "
                                                       "instead of generated data.")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save the scanned array as .npy (written "
                                                        "as a memory map: any n).")] = None,
    generator: Annotated[str, choice_option("--generator", choices=GENERATORS,
                                            help="Generated input: random (seeded), constant (ones) or "
                                                 "counting; produced block by block, so any n streams.")] = "random",
    partition_limit: Annotated[int, count_option("--partition-limit", help="Items per streaming partition "
                                                    "(default 2**31-1; results do not depend on it).")]
    = PARTITION_LIMIT,
    model_only: Annotated[bool, typer.Option("--model-only", help="Timings and counters only, no functional run.")] = False,
    l2: Annotated[str | None, choice_option("--l2", choices=choices("scan", "l2"),
                                            help="What L2 holds at the start: flushed (default: full of "
                                                 "dirty lines, as the papers measured), clean or warm (the input "
                                                 "resident).")] = None,
    warm_l2: Annotated[bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the input in L2 (the same as --l2 warm).")]
    = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: Annotated[Path | None, typer.Option("--trace", help="Write the timeline as a Chrome trace JSON "
                                                  "(open it in Perfetto).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                                "results/runs/<kernel>/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Scan an array on the simulated Ascend NPU: simulated time, bandwidth, % of peak and of memcpy,
    phases, pipe utilisation and counters, with the result checked against NumPy."""
    wall0 = time.perf_counter()
    count, limit = n, partition_limit
    try:
        chunk_elems = _parse_chunk(chunk)
    except ValueError as exc:
        fail(str(exc))
    if not 1 <= limit <= PARTITION_LIMIT:
        fail(f"--partition-limit: must be in [1, 2**31 - 1], got {partition_limit}")
    if input_file is not None and generator != "random":
        fail("--generator: there is no generated input with --input; drop one of them")
    try:  # the scan's parameter model (kernels/streaming.py) checks the rest
        get_spec("scan").params(given(algorithm=algorithm, dtype=dtype, out_dtype=out_dtype, l2=l2), s=s,
                                blocks=blocks, chunk=chunk_elems, exclusive=exclusive)
    except ParamError as exc:
        fail(str(exc))
    check_files(input_file, output_file, trace, out, no_save, model_only)
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
                                  algorithm or "mcscan", s, blocks,
                                  chunk_elems, exclusive, dtype or _header_dtype(input_file), out_dtype, hardware)
    tmp_output = None
    if output_file is not None:
        tmp_output = partial_path(output_file)  # check_files removed those of killed runs

    progress, report = progress_bar(json_out)

    try:
        with progress:
            sizes = given(n=count, algorithm=algorithm, blocks=blocks, chunk=chunk_elems, dtype=dtype,
                          out_dtype=out_dtype, l2=l2)
            run = run_kernel("scan", **sizes, s=s, exclusive=exclusive, seed=seed,
                             input_file=input_file, hardware=hardware, model_only=model_only, warm_l2=warm_l2,
                             command=command_line(), progress=report, generator=generator, partition_limit=limit,
                             output_path=tmp_output,
                             keep_output=False)  # the command never reads the array: verified on the fly
    except (ParamError, InputError, HardwareError, BufferCapacityError) as exc:
        _drop(tmp_output)
        fail(str(exc))
    except MemoryError:
        _drop(tmp_output)
        fail("--n: not enough memory for the functional run at this size; use --model-only")
    except OSError as exc:
        _drop(tmp_output)
        if tmp_output is None or exc.filename != str(tmp_output):
            raise
        # a full disk or a file-size limit met while reserving the output (partition.npy_memmap)
        fail(f"--output-file: cannot write {output_file}: {exc.strerror}", code=1)
    except BaseException:
        _drop(tmp_output)
        raise

    result = run.result
    result.host.wall_time_s = time.perf_counter() - wall0
    from ascendbench.sim.trace import write_chrome_trace

    doc = result.model_dump(mode="json")
    algorithm = result.kernel  # the default's choice
    saved_to = None if no_save else (out or default_result_path("runs", algorithm))
    with Outputs() as outputs:
        if output_file is not None and tmp_output is not None and tmp_output.exists():
            run.arrays = None  # close the memory map before moving its file into place
            outputs.write("output-file", output_file, lambda path: os.replace(tmp_output, path))
        if trace is not None:
            outputs.write("trace", trace, lambda path: write_chrome_trace(run.sim, path, name=algorithm))
        if saved_to is not None:
            outputs.write_json("out", saved_to, doc)
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
    else:
        _print_report(run, saved_to, output_file, trace)
    if result.verification.performed and not result.verification.passed:
        raise typer.Exit(1)


def _print_report(run, saved_to, output_file, trace) -> None:
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
