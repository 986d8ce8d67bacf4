"""The steps of `ascendbench run hgemm` that are HGEMM's own (commands/generic.py makes the command from the
kernel's model and its RunCommand, kernels/streaming.py): the shape from --m/--n/--k, a named workload or the
--a/--b/--c files, the checks before any work, C as the output, the report of one shape or of a workload."""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from ascendbench.commands.common import (
    check_target,
    fail,
    format_bytes,
    format_time,
    out_console,
    print_utilisation,
    whole_keys,
)
from ascendbench.kernels.hgemm import MAX_DIM, GemmShape, HgemmParams, row_rates
from ascendbench.kernels.hgemm_run import WORKLOAD_VERIFY_LIMIT_MACS
from ascendbench.processes import jobs_error
from ascendbench.workloads import WorkloadError

_MANY = 12  # workloads with more shapes print a summary instead of one row per shape
ERRORS = (ValueError,)  # a workload's (WorkloadError) and the tile selector's argument checks: one-line failures


def error_message(exc: ValueError) -> str:
    """The one-line message of an ERRORS exception, naming its option."""
    return str(exc) if isinstance(exc, WorkloadError) or str(exc).startswith("--") else f"--{exc}"


def prepare(spec, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`run hgemm`'s checks before any work (sizes, --jobs, alpha and beta in fp16, the seed, the files) and the
    pipeline's arguments: the shape (or the workload, or the files), and the tiling options as an HgemmParams."""
    o = options
    verify, output_file, workload = o["verify"], o["output_file"], o["workload"]
    a_file, b_file, c_file = o["a_file"], o["b_file"], o["c_file"]
    for name in ("m", "n", "k"):
        if o[name] is not None and not 0 <= o[name] <= MAX_DIM:
            fail(f"--{name}: must be an integer from 0 to 2**40, got {o[name]}")
    if not 1 <= o["batch"] <= MAX_DIM:
        fail(f"--batch: must be from 1 to 2**40, got {o['batch']}")
    if o["jobs"] is not None and (message := jobs_error(o["jobs"])):
        fail(f"--jobs: {message}")
    for name in ("alpha", "beta"):
        if not math.isfinite(o[name]):
            fail(f"--{name}: must be a finite number, got {o[name]}")
        if abs(o[name]) > 65504:
            fail(f"--{name}: must be representable in fp16 (|{name}| <= 65504: the kernel scales in fp16), "
                 f"got {o[name]:g}")
    if o["seed"] < 0:
        fail(f"--seed: must be a non-negative integer, got {o['seed']}")
    if output_file is not None:
        if workload is not None:
            fail("--output-file: a workload has many outputs; give one shape")
        if not verify:
            fail("--output-file: C is only computed with --verify")
    for name, path in (("a", a_file), ("b", b_file), ("c", c_file)):
        if path is not None and not path.exists():
            fail(f"--{name}: file not found: {path}")
    if o["out"] is not None and o["no_save"]:
        fail("--out: cannot be combined with --no-save")
    taken = {p.resolve(): f"the --{n} file" for n, p in (("a", a_file), ("b", b_file), ("c", c_file)) if p is not None}
    check_target(output_file, "output-file", ".npy", taken)
    check_target(o["trace"], "trace", ".json", taken)
    check_target(o["out"], "out", ".json", taken)
    params = HgemmParams(**{name: o[name] for name in ("variant", "m0", "n0", "k0", "split_k", "shuffle_k",
                                                       "padding", "double_buffer", "alpha", "beta")})
    return {name: o[name] for name in ("m", "n", "k", "batch", "workload", "a_file", "b_file", "c_file", "warm_l2",
                                       "every_core", "jobs")} | {"params": params}


def output(run, options: dict[str, Any]):
    """The --output-file writer: C as .npy (one GEMM's 2-D C when batch is 1; None when C was not computed)."""
    from ascendbench.store.io import atomic_save_npy

    c = run.arrays and run.arrays["c"]
    if c is None:
        return None
    out_array = c[0] if c.shape[0] == 1 else c
    return lambda path: atomic_save_npy(path, out_array)


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


def report(run, saved_to, output_file, trace) -> None:
    """`run hgemm`'s report: one shape's times, throughput, tiling, stages, traffic and check, or a workload's
    table and summary; the files written."""
    output_missing = output_file is not None and run.arrays is None
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
