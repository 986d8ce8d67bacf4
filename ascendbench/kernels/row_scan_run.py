"""The row scans' runs (registry entries batched-scan and segmented-scan, kernels/streaming.py): load or
generate the input, check it, time it, scan it on real data, verify it against NumPy and build the result
document (store/rows.py). `ascendbench.run("batched-scan", ...)` and `run("segmented-scan", ...)` come here.

    >>> import ascendbench
    >>> run = ascendbench.run("batched-scan", batch=40, length=65536, algorithm="auto", s=128)
    >>> run.result.kernel, run.result.metrics["bandwidth_gbps"], run.verification.passed
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from ascendbench.kernels.base import InputError, ParamError
from ascendbench.kernels.contract import KernelRun
from ascendbench.kernels.run_steps import (
    DTYPES,
    RunContext,
    RunOptions,
    bandwidth_metrics,
    generate_input,
    load_npy,
    open_npy,
    provenance,
    sha256,
    verification_record,
)
from ascendbench.kernels.scan import ul1_overflow_message
from ascendbench.store.rows import BatchedProblem, BatchedScanResult, SegmentedProblem, SegmentedScanResult
from ascendbench.store.schema import Verification

__all__ = ["expected_segments", "generate_flags", "load_rows", "load_segmented", "run_batched_scan",
           "run_segmented_scan"]


def load_rows(path: Path) -> tuple[np.ndarray, str, str]:
    """Load a (batch, length) .npy array of float16 or int8. Returns (array, dtype name, sha256 of the file).

    Raises:
        InputError: unreadable, not one .npy array, not 2-D, or another dtype (the message says which).
    """
    x, name, sha = load_npy(path, 2, " (batch, length)")
    return np.ascontiguousarray(x), name, sha


def _resolve_data(x, input_file, dtype, loader):
    """(x, dtype, sha, data_from_file) with --dtype checked against the array's dtype."""
    sha = None
    if input_file is not None:
        x, data_dtype, sha = loader(input_file)
    elif x is not None:
        x = np.asarray(x)
        if x.dtype not in DTYPES:
            raise InputError("x: must be a float16 or int8 array")
    if x is not None:
        data_dtype = DTYPES[x.dtype]
        if dtype is not None and dtype != data_dtype:
            raise ParamError("dtype", f"{dtype} disagrees with the input array's {data_dtype}; drop --dtype")
        dtype = data_dtype
    return x, dtype or "fp16", sha


def _unpack(opts: RunOptions) -> tuple:
    """(seed, input_file, model_only, verify, warm_l2, progress) of the run options."""
    return opts.seed, opts.input_file, opts.model_only, opts.verify, opts.warm_l2, opts.progress


def run_batched_scan(
    ctx: RunContext,
    opts: RunOptions,
    batch: int | None = None,
    length: int | None = None,
    *,
    algorithm: str = "auto",
    s: int = 128,
    exclusive: bool = False,
    dtype: str | None = None,
    x: np.ndarray | None = None,
) -> KernelRun:
    """Scan every row of a (batch, length) array on the simulated machine (scan paper appendix B.1).

    Args:
        ctx: the run's context from the pipeline (registry entry, parameters, hardware, command line).
        batch, length: the shape (optional with x / input_file; must agree).
        algorithm: "scanu", "scanul1", "auto" (the faster of the two by the timing model) or "vector".
        s: tile side 16/32/64/128. exclusive: exclusive scan of every row. dtype: "fp16" or "int8".
        opts: the run options (RunOptions): seed of the generated input (fp16 uniform in [0, 1), int8 uniform in
            [-128, 127]); input_file, a .npy file holding the (batch, length) input; model_only (x and
            input_file None); verify, per row against NumPy (float64 / int64); warm_l2; progress.
        x: the user's own (batch, length) float16/int8 array.

    Returns:
        KernelRun (arrays: {"y": the scanned rows}); bandwidth in GB/s (1e9 B/s) counts the input read once and
        the output written once.

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError (messages name the option).
    """
    from ascendbench.kernels import batched_scan as bs

    seed, input_file, model_only, verify, warm_l2, progress = _unpack(opts)
    hw = ctx.hw
    x, dtype, sha = _resolve_data(x, input_file, dtype, load_rows)
    if x is not None:
        if x.ndim != 2:
            raise InputError(f"x: must be 2-D (batch, length), got shape {tuple(x.shape)}")
        for name, given, found in (("batch", batch, x.shape[0]), ("length", length, x.shape[1])):
            if given is not None and given != found:
                raise ParamError(
                    name, f"{given} disagrees with the input's shape {tuple(x.shape)}; drop --{name}"
                )
        batch, length = int(x.shape[0]), int(x.shape[1])
    for name, value in (("batch", batch), ("length", length)):
        if value is None:
            raise ParamError(name, "is required without --input")
    params = bs.BatchedScanParams(algorithm=algorithm, s=s, exclusive=exclusive, dtype=dtype)
    bs.check(batch, length, params)
    choice = None
    if algorithm in ("auto", "scanul1") and dtype == "fp16" and length > s and x is not None and not model_only:
        # decide before running: a row sum past 65504 in ScanUL1's fp16 C1 makes its output NaN
        found = bs.ul1_overflow_rows(x, s)
        if found is not None:
            row, first, total = found
            why = ul1_overflow_message("scanul1", s, row, total, f"row {row:,}, elements {first:,} to {first + s - 1:,},")
            if algorithm == "scanul1":
                raise ParamError("algorithm", f"{why}; use --algorithm scanu (or auto)")
            choice = f"{why}; auto compared scanu only"
            params = bs.BatchedScanParams(algorithm="scanu", s=s, exclusive=exclusive, dtype=dtype)
    t0 = time.perf_counter()
    run = bs.simulate_batched(batch, length, params, hw, warm_l2=warm_l2)
    model_s = time.perf_counter() - t0
    n = batch * length
    output, functional_s, data = None, None, "none"
    verification = Verification(performed=False)
    if not model_only:
        t1 = time.perf_counter()
        data = "file" if input_file is not None else "generated"
        if x is None:
            x = generate_input(n, dtype, seed, progress).reshape(batch, length)
        done = [0]

        def tick(k: int) -> None:
            done[0] += k
            if progress:
                progress("scanning", min(done[0], n), n)

        with np.errstate(invalid="ignore", over="ignore"):  # NaN / inf inputs: the verdict explains them
            output = bs.compute_batched(x, params, run.algorithm, tick)
            if verify:
                if progress:
                    progress("verifying", n, n)
                v = bs.verify_batched(x, output, params, run.algorithm)
                verification = verification_record(v)
        functional_s = time.perf_counter() - t1
    sim = run.sim
    p = params.scan
    moved = n * (p.in_bytes + p.out_bytes)
    phases = sim.phases_s
    metrics = bandwidth_metrics(n, moved, sim, hw) | {
        "bytes_moved": float(moved),
        "rows_per_s": batch / sim.time_s if sim.time_s > 0 else 0.0,
    }
    result = BatchedScanResult(
        **ctx.sim_fields(sim, functional_s, model_s),
        kernel=f"batched-{run.algorithm}",
        algorithm=algorithm,
        candidates_time_s=run.candidates,
        params=params.to_dict() | {"warm_l2": warm_l2, "algorithm_run": run.algorithm},
        problem=BatchedProblem(
            batch=batch,
            length=length,
            dtype=dtype,
            out_dtype=params.out,
            exclusive=exclusive,
            **provenance(data, seed, input_file, sha),
        ),
        metrics=metrics,
        phases_s=phases,
        verification=verification,
        model={
            "algorithm_choice": choice,
            "extrapolated": sim.extrapolated,
            "warm_l2": warm_l2,
            "tiles_per_row": run.layout.tiles_per_row,
            "row_scan_only_path": run.layout.short,
            "padded": run.layout.padded,
            "workers": run.layout.workers,
            "note": "long loops are simulated for a few iterations per core and extrapolated; every core simulated",
        },
    )
    return ctx.run(result, sim, {"batch": batch, "length": length, "dtype": dtype},
                   arrays=None if output is None else {"y": output})


# ----- segmented scan ---------------------------------------------------------------------------------
def load_segmented(path: Path) -> tuple[np.ndarray, np.ndarray | None, str, str]:
    """Load the input of a segmented scan: a .npz with 1-D arrays `values` (float16/int8) and `flags` (bool, int8
    or uint8, same length), or a single 1-D .npy taken as `values` (flags then generated). Returns (values,
    flags or None, dtype name, sha256 of the file).

    Raises:
        InputError: unreadable, missing or extra arrays, wrong shapes or dtypes (the message says which).
    """
    from ascendbench.kernels.segmented_scan import FLAG_DTYPES

    path = Path(path)
    data = open_npy(path, what=".npy or .npz file")
    flags = None
    if isinstance(data, np.ndarray):
        values = data
    else:
        with data:
            names = set(data.files)
            if names != {"values", "flags"}:
                raise InputError(
                    f"--input: the .npz must hold exactly the arrays 'values' and 'flags', got "
                    f"{', '.join(sorted(names)) or 'none'}"
                )
            values, flags = data["values"], data["flags"]
    if values.ndim != 1:
        raise InputError(f"--input: values must be 1-D, got shape {tuple(values.shape)}")
    if values.dtype not in DTYPES:
        raise InputError(f"--input: values dtype must be float16 or int8, got {values.dtype}")
    if flags is not None:
        if flags.shape != values.shape:
            raise InputError(
                f"--input: flags shape {tuple(flags.shape)} differs from values shape {tuple(values.shape)}"
            )
        if flags.dtype not in FLAG_DTYPES:
            raise InputError(f"--input: flags dtype must be bool, int8 or uint8, got {flags.dtype}")
    return np.ascontiguousarray(values), flags, DTYPES[values.dtype], sha256(path)


def generate_flags(n: int, segment_length: int, heads: str, seed: int) -> np.ndarray:
    """Head flags as uint8: "regular" puts a head every `segment_length` elements; "random" makes each element
    a head with probability 1 / segment_length (seeded, independent of the values' generator)."""
    if heads == "regular":
        flags = np.zeros(n, dtype=np.uint8)
        flags[::segment_length] = 1
        return flags
    rng = np.random.default_rng([seed, 1])
    return (rng.random(n) < 1.0 / segment_length).astype(np.uint8)


def expected_segments(n: int, segment_length: int, heads: str) -> int:
    """Segments of generated flags without generating them (model-only runs): exact for "regular", the
    expectation 1 + (n - 1) / segment_length rounded for "random"."""
    if n == 0:
        return 0
    if heads == "regular":
        return math.ceil(n / segment_length)
    return min(n, 1 + round((n - 1) / segment_length))


def run_segmented_scan(
    ctx: RunContext,
    opts: RunOptions,
    n: int | None = None,
    *,
    algorithm: str = "mcscan",
    s: int = 128,
    exclusive: bool = False,
    dtype: str | None = None,
    segment_length: int = 1024,
    heads: str = "random",
    values: np.ndarray | None = None,
    flags: np.ndarray | None = None,
) -> KernelRun:
    """Segmented scan of values with head flags on the simulated machine (see kernels.segmented_scan).

    Args:
        ctx: the run's context from the pipeline (registry entry, parameters, hardware, command line).
        n: elements (optional with values / input_file; must agree).
        algorithm: "mcscan-ul1", "mcscan" (the matrix-scan formulation) or "vector" (vector-only baseline).
        s, exclusive, dtype: as for run scan (fp16 -> fp32, int8 -> int32).
        segment_length, heads: how flags are generated when none are given: "random" (each element a head
            with probability 1/segment_length, seeded) or "regular" (a head every segment_length elements).
        opts: the run options (RunOptions): input_file, a .npz with `values` and `flags` or a .npy of values;
            model_only, timings and counters only, for the segment count `heads` gives (values, flags and
            input_file None); seed, verify, warm_l2, progress.
        values, flags: the user's own arrays.

    Returns:
        KernelRun (arrays: {"y": the output}); bandwidth_gbps counts the values and flags read once and the
        output written once.

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError (messages name the option).
    """
    from ascendbench.kernels import segmented_scan as ss

    seed, input_file, model_only, verify, warm_l2, progress = _unpack(opts)
    hw = ctx.hw
    sha = None
    if input_file is not None:
        values, flags, _, sha = load_segmented(input_file)
    values, dtype, _ = _resolve_data(values, None, dtype, None)
    if values is not None:
        if values.ndim != 1:
            raise InputError(f"values: must be 1-D, got shape {tuple(values.shape)}")
        if n is not None and n != values.shape[0]:
            raise ParamError("n", f"{n} disagrees with the input's length {values.shape[0]}; drop --n")
        n = int(values.shape[0])
    if flags is not None:
        flags = np.asarray(flags)
        if values is None or flags.shape != values.shape:
            raise InputError("flags: must come with values of the same 1-D shape")
    if n is None:
        raise ParamError("n", "is required without --input")
    params = ss.SegmentedScanParams(algorithm=algorithm, s=s, exclusive=exclusive, dtype=dtype)
    ss.check(n, params)
    if values is not None and dtype == "fp16" and not model_only:
        # decide before running: the segments' sums are differences of global prefix sums (scan paper B.2), so
        # an inf or NaN spoils every later segment, which a segmented scan must not do
        for lo in range(0, n, 1 << 22):
            bad = np.flatnonzero(~np.isfinite(values[lo: lo + (1 << 22)]))
            if bad.size:
                i = lo + int(bad[0])
                raise ParamError("input", f"values[{i:,}] is {values[i]}: the segmented scan subtracts global prefix "
                                          "sums (scan paper B.2), so a non-finite value would spoil every later "
                                          "segment; give finite values")
    if algorithm == "mcscan-ul1" and values is not None and not model_only:
        from ascendbench.kernels.scan import ul1_overflow

        found = ul1_overflow(lambda lo, hi: values[lo:hi], n, s)
        if found is not None:  # decide before running: the output would be NaN
            raise ParamError("algorithm", f"{ul1_overflow_message(algorithm, s, *found)}; use --algorithm mcscan")
    flag_source = "file" if flags is not None else ("segment-length" if heads == "regular" else "random")
    data = "none"
    if not model_only:
        if flags is None:
            flags = generate_flags(n, segment_length, heads, seed)
        segments = ss.count_segments(flags)
    else:
        segments = expected_segments(n, segment_length, heads)
    t0 = time.perf_counter()
    sim = ss.simulate_segmented(n, segments, params, hw, warm_l2=warm_l2)
    model_s = time.perf_counter() - t0
    output, functional_s = None, None
    verification = Verification(performed=False)
    if not model_only:
        t1 = time.perf_counter()
        data = "file" if input_file is not None else "generated"
        if values is None:
            values = generate_input(n, dtype, seed, progress)
        if progress:
            progress("scanning", 0, n)
        output = ss.compute_segmented(values, flags, params, hw)
        if verify:
            if progress:
                progress("verifying", n, n)
            v = ss.verify_segmented(values, flags, output, params, hw)
            verification = verification_record(v)
        functional_s = time.perf_counter() - t1
    vp = params.values_scan
    moved = n * (vp.in_bytes + 1 + vp.out_bytes)
    metrics = bandwidth_metrics(n, moved, sim, hw) | {"bytes_moved": float(moved)}
    result = SegmentedScanResult(
        **ctx.sim_fields(sim, functional_s, model_s),
        algorithm=algorithm,
        params=params.to_dict() | {"warm_l2": warm_l2},
        problem=SegmentedProblem(
            n=n,
            segments=segments,
            dtype=dtype,
            out_dtype=params.out,
            exclusive=exclusive,
            flags=flag_source,
            segment_length=None if flag_source == "file" else segment_length,
            **provenance(data, seed, input_file, sha)
            | {"seed": seed if data == "generated" or flag_source != "file" else None},  # the seed made the flags
        ),
        metrics=metrics,
        phases_s=sim.phases_s,
        verification=verification,
        model={
            "extrapolated": sim.extrapolated,
            "warm_l2": warm_l2,
            "segments_expected": flags is None,
            "formulation": (
                "vector-only segmented CumSum on one AIV"
                if algorithm == "vector"
                else "flags normalised; int8 MCScan of the flags (segment numbers); scan of the values; "
                "heads' exclusive sums compacted, then subtracted"
            ),
            "note": "long loops are simulated for a few iterations per core and extrapolated",
        },
    )
    return ctx.run(result, sim, {"n": n, "dtype": dtype}, arrays=None if output is None else {"y": output})
