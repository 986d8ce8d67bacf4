"""`ascendbench run hgemm`: C = alpha * A @ B + beta * C on the simulated NPU, one shape or a named workload."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ascendbench.commands.common import (
    HardwareOption,
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
    format_bytes,
    format_time,
    out_console,
    print_utilisation,
    progress_bar,
    whole_keys,
)
from ascendbench.commands.run import app
from ascendbench.hardware import HardwareError
from ascendbench.kernels.base import BufferCapacityError, InputError, ParamError
from ascendbench.kernels.hgemm import MAX_DIM, GemmShape, HgemmParams, row_rates
from ascendbench.kernels.registry import choices, get_spec
from ascendbench.processes import jobs_error
from ascendbench.kernels.hgemm_run import WORKLOAD_VERIFY_LIMIT_MACS
from ascendbench.pipeline import run as run_kernel
from ascendbench.workloads import WorkloadError, list_workloads

_MANY = 12  # workloads with more shapes print a summary instead of one row per shape


@app.command("hgemm")
def hgemm(
    m: Annotated[int | None, count_option("--m", help="Rows of A and C (required unless --a/--b/--c or "
                                          "--workload give the shape).")] = None,
    n: Annotated[int | None, count_option("--n", help="Columns of B and C.")] = None,
    k: Annotated[int | None, count_option("--k", help="Columns of A, rows of B (the reduction).")] = None,
    batch: Annotated[int, count_option("--batch", help="Independent GEMMs of this shape.")] = 1,
    workload: Annotated[str | None, choice_option("--workload", choices=tuple(list_workloads()), closed=False,
                                                  help="A named workload instead of one shape: "
                                                       + ", ".join(list_workloads()) + ".")] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="alpha of C = alpha A B + beta C.")] = 1.0,
    beta: Annotated[float, typer.Option("--beta", help="beta (0: C is not read).")] = 0.0,
    m0: Annotated[int | None, count_option("--m0", help="Tile M0 (multiple of 16; default: the selector's).")] = None,
    n0: Annotated[int | None, count_option("--n0", help="Tile N0 (multiple of 16).")] = None,
    k0: Annotated[int | None, count_option("--k0", help="Tile K0 (multiple of 8).")] = None,
    split_k: Annotated[int, count_option("--split-k", help="Split each block's K over this many cores (SplitK).")] = 1,
    shuffle_k: Annotated[bool, typer.Option("--shuffle-k/--no-shuffle-k", help="ShuffleK (§4.3.2).")] = True,
    padding: Annotated[bool, typer.Option("--padding/--no-padding", help="Pad A and B to 512-byte aligned rows.")] = True,
    double_buffer: Annotated[bool, typer.Option("--double-buffer/--no-double-buffer", help="Two slots per buffer "
                                                "where they fit.")] = True,
    variant: Annotated[str, choice_option("--variant", choices=choices("hgemm", "variant"),
                                          help="proposed (the HGEMM paper) or gemm-example "
                                               "(CATLASS basic matmul, the paper's baseline).")] = "proposed",
    seed: Annotated[int, count_option("--seed", help="Seed of the generated A, B, C (uniform in [-1, 1)).")] = 0,
    a_file: Annotated[Path | None, typer.Option("--a", help="A as a float16 .npy (M x K, or batch x M x K).")] = None,
    b_file: Annotated[Path | None, typer.Option("--b", help="B as a float16 .npy (K x N).")] = None,
    c_file: Annotated[Path | None, typer.Option("--c", help="C as a float16 .npy (M x N).")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save C as .npy (single shape).")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Check against NumPy (up to "
                                         "M*N*K*batch = 2**33, 2**27 per shape in a workload; larger shapes are "
                                         "timed only).")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with A, B (and C, when all three fit) in L2: "
                                          "the state after back-to-back runs, as the HGEMM paper timed them "
                                          "(default: cold).")] = False,
    every_core: Annotated[bool, typer.Option(get_spec("hgemm").flag("every_core"), help="Simulate every AI core, not one per group "
                                             "of cores with the same task count: slower, and without the "
                                             "grouping's error (up to 14% on shapes bound by L2).")] = False,
    jobs: Annotated[int | None, count_option("--jobs", help="Worker processes for a workload's shapes "
                                             "(default: the usable cores, at most 8, for 64 shapes or "
                                             "more; at most 4 per usable core).")] = None,
    hardware: HardwareOption = "atlas-300t-a2",
    trace: Annotated[Path | None, typer.Option("--trace", help="Chrome trace of the (first) shape.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                                "results/runs/hgemm/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Run C = alpha * A @ B + beta * C (fp16, fp32 accumulation) on the simulated NPU: TFLOPS, % of cube
    peak, the tiling and where it came from, stage times, pipe utilisation, and the check against NumPy."""
    wall0 = time.perf_counter()
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value is not None and not 0 <= value <= MAX_DIM:
            fail(f"--{name}: must be an integer from 0 to 2**40, got {value}")
    if not 1 <= batch <= MAX_DIM:
        fail(f"--batch: must be from 1 to 2**40, got {batch}")
    if jobs is not None and (message := jobs_error(jobs)):
        fail(f"--jobs: {message}")
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not math.isfinite(value):
            fail(f"--{name}: must be a finite number, got {value}")
        if abs(value) > 65504:
            fail(f"--{name}: must be representable in fp16 (|{name}| <= 65504: the kernel scales in fp16), "
                 f"got {value:g}")
    if seed < 0:
        fail(f"--seed: must be a non-negative integer, got {seed}")
    if output_file is not None:
        if workload is not None:
            fail("--output-file: a workload has many outputs; give one shape")
        if not verify:
            fail("--output-file: C is only computed with --verify")
    for name, path in (("a", a_file), ("b", b_file), ("c", c_file)):
        if path is not None and not path.exists():
            fail(f"--{name}: file not found: {path}")
    if out is not None and no_save:
        fail("--out: cannot be combined with --no-save")
    taken = {p.resolve(): f"the --{n} file" for n, p in (("a", a_file), ("b", b_file), ("c", c_file)) if p is not None}
    check_target(output_file, "output-file", ".npy", taken)
    check_target(trace, "trace", ".json", taken)
    check_target(out, "out", ".json", taken)
    params = HgemmParams(variant=variant, m0=m0, n0=n0, k0=k0, split_k=split_k, shuffle_k=shuffle_k,
                         padding=padding, double_buffer=double_buffer, alpha=alpha, beta=beta)
    progress, report = progress_bar(json_out)

    try:
        with progress:
            run = run_kernel("hgemm", m=m, n=n, k=k, batch=batch, workload=workload, params=params,
                             hardware=hardware, seed=seed, a_file=a_file, b_file=b_file, c_file=c_file, verify=verify,
                             warm_l2=warm_l2, every_core=every_core, jobs=jobs, command=command_line(),
                             progress=report)
    except (ParamError, InputError, HardwareError, BufferCapacityError, WorkloadError) as exc:
        fail(str(exc))
    except ValueError as exc:  # the selector's argument checks
        fail(str(exc) if str(exc).startswith("--") else f"--{exc}")
    result = run.result
    result.host.wall_time_s = time.perf_counter() - wall0
    from ascendbench.sim.trace import write_chrome_trace
    from ascendbench.store.io import atomic_save_npy

    doc = result.model_dump(mode="json")
    saved_to = None if no_save else (out or default_result_path("runs", "hgemm"))
    with Outputs() as outputs:
        output = run.arrays and run.arrays["c"]
        if output_file is not None and output is not None:
            out_array = output[0] if output.shape[0] == 1 else output
            outputs.write("output-file", output_file, lambda path: atomic_save_npy(path, out_array))
        if trace is not None:
            outputs.write("trace", trace, lambda path: write_chrome_trace(run.trace[0], path, name="hgemm"))
        if saved_to is not None:
            outputs.write_json("out", saved_to, doc)
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
    else:
        _print(run, saved_to, output_file, trace, output_file is not None and run.arrays is None)
    if any(s.verification.performed and not s.verification.passed for s in result.shapes):
        raise typer.Exit(1)


def _verdict(v) -> str:
    if v.performed:
        return "[green]passed[/]" if v.passed else "[bold red]FAILED[/]"
    return "[dim]skipped[/]" if v.tolerance else "[dim]off[/]"


def _slow_transfers(shape, params: dict, counters: dict, constants: dict) -> str:
    """What of the GM traffic ran below the full rate, and why (empty when nothing did); the operands at the
    unaligned rate come from the kernel's own rule (kernels.hgemm.row_rates)."""
    value = {name: entry["value"] for name, entry in constants.items()}
    parts = []
    nd2nz = counters.get("bytes_nd2nz_unaligned", 0)
    if nd2nz:
        parts.append(f"{format_bytes(nd2nz)} of A/B panels loaded GM -> L1 with ND2NZ at "
                     f"{value['nd2nz_unaligned_efficiency'] * 100:.1f} % of the rate (rows not "
                     f"{value['nd2nz_alignment_bytes']}-byte aligned)")
    unaligned = counters.get("bytes_unaligned", 0)
    if unaligned:
        rates = row_rates(GemmShape(shape.m, shape.n, shape.k),
                          HgemmParams(variant=params["variant"], padding=params["padding"]),
                          value["gm_alignment_bytes"], value["nd2nz_alignment_bytes"])
        names = [name for name in "AB" if rates[name] == "unaligned"]
        if rates["C"] == "unaligned":
            names.append("C (writes)" if params["beta"] == 0 else "C (reads and writes)")
        operands = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names) or "GM transfers"
        parts.append(f"{format_bytes(unaligned)} of {operands} at {value['unaligned_efficiency'] * 100:.0f} "
                     f"% (rows not {value['gm_alignment_bytes']}-byte aligned)")
    return "; ".join(parts)


def _print(run, saved_to, output_file, trace, output_missing: bool) -> None:
    r = run.result
    c = out_console
    p = r.params
    peak = r.metrics["peak_tflops"]
    opts = (f"{p['variant']}, split_k {p['split_k']}, shuffle_k {'on' if p['shuffle_k'] else 'off'}, padding "
            f"{'on' if p['padding'] else 'off'}, double buffer {'on' if p['double_buffer'] else 'off'}, "
            f"alpha {p['alpha']:g}, beta {p['beta']:g}"
            + (", warm L2" if p.get("warm_l2") else "") + (", every core simulated" if p.get("every_core") else ""))
    if r.workload is None:
        s = r.shapes[0]
        t = s.tiling
        c.rule(f"[bold]hgemm {s.m} x {s.n} x {s.k}" + (f" x{s.batch}" if s.batch > 1 else "") + f" on {r.hardware['name']}")
        table = Table(show_header=False, box=None, padding=(0, 2))
        table.add_row("options", opts)
        table.add_row("simulated time", format_time(s.time_s))
        table.add_row("throughput", f"{s.tflops:.2f} TFLOPS  (2MNK/time)  =  {s.fraction_of_peak * 100:.1f} % of the "
                      f"{peak:.0f} TFLOPS fp16 cube peak")
        source = t["source"]
        table.add_row("tiling", f"M0 x N0 x K0 = {t['m0']} x {t['n0']} x {t['k0']}  (from: {source}; L1 panel K1 = {t['k1']})")
        counters = r.counters
        table.add_row("aicore_num, acc_loop", f"{int(counters.get('aicore_num', 0))}, {int(counters.get('acc_loop', 0))}"
                      "  (blocks of C x split_k; K blocks per block)")
        for name, secs in s.phases_s.items():
            table.add_row(f"  {name}", format_time(secs))
        table.add_row("matmuls", f"{int(counters.get('matmuls', 0)):,}  ({int(counters.get('cube_fractals', 0)):,} cube fractals)")
        table.add_row("GM traffic", f"read {format_bytes(counters.get('bytes_gm_read', 0))} (HBM "
                      f"{format_bytes(counters.get('bytes_hbm_read', 0))}), write {format_bytes(counters.get('bytes_gm_write', 0))}")
        slow = _slow_transfers(s, p, counters, r.hardware["constants"])
        if slow:
            table.add_row("slow GM transfers", slow)
        v = s.verification
        if v.performed:
            table.add_row("verification", f"{_verdict(v)}  max abs error {v.max_abs_error:.3g}  (tolerance {v.tolerance})")
        else:
            reason = v.tolerance.removeprefix("skipped: ") if v.tolerance else ""
            table.add_row("verification", f"{_verdict(v)}" + (f"  ({reason}: too large to multiply in NumPy here; the "
                                                              "timing does not depend on it)" if reason else ""))
        table.add_row("host wall time", f"{r.host.wall_time_s:.2f} s (timing model {r.host.model_time_s * 1e3:.0f} ms)")
        c.print(table)
        print_utilisation(r.utilisation)
        c.print("[dim]stage times are spans: " + ("padding runs first; " if "padding" in s.phases_s else "")
                + "the cube's gemm and the vector epilogue overlap[/]")
    else:
        count = len(r.shapes)
        c.rule(f"[bold]hgemm workload {r.workload}: {count} shape{'s' if count != 1 else ''} on {r.hardware['name']}")
        c.print(f"options: {opts}", highlight=False)
        if len(r.shapes) <= _MANY:
            table = Table()
            for col in ("M", "N", "K", "batch", "M0xN0xK0", "from", "time", "TFLOPS", "% peak", "check"):
                table.add_column(col, justify="right" if col not in ("from", "check") else "left")
            for s in r.shapes:
                t = s.tiling
                table.add_row(str(s.m), str(s.n), str(s.k), str(s.batch), f"{t['m0']}x{t['n0']}x{t['k0']}", t["source"],
                              format_time(s.time_s), f"{s.tflops:.1f}", f"{s.fraction_of_peak * 100:.1f}", _verdict(s.verification))
            c.print(whole_keys(table, "M", "N", "K", "batch", "M0xN0xK0"))
        sm = r.summary
        if sm:
            c.print(f"TFLOPS: avg {sm['tflops_avg']:.2f}, max {sm['tflops_max']:.2f}, min {sm['tflops_min']:.2f}, "
                    f"p10 {sm['tflops_p10']:.2f}, median {sm['tflops_p50']:.2f}, p90 {sm['tflops_p90']:.2f} "
                    f"(peak {peak:.0f})", highlight=False)
        checked = [s for s in r.shapes if s.verification.performed]
        failed = sum(1 for s in checked if not s.verification.passed)
        verdict = f" ({'all passed' if not failed else f'{failed} failed'})" if checked else ""
        c.print(f"verified {len(checked)} of {len(r.shapes)} shapes against NumPy{verdict}; in a workload, "
                f"shapes above M*N*K*batch = 2**27 ({WORKLOAD_VERIFY_LIMIT_MACS:,}) are timed only", highlight=False)
    if output_missing:
        c.print("[yellow]no output written: the shape is above the verification limit, so C was not computed[/]")
    for label, path in (("result", saved_to), ("output", output_file if not output_missing else None), ("trace", trace)):
        if path is not None:
            c.print(f"{label} written to {path}")
