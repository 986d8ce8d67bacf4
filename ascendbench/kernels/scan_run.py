"""The 1-D scans' run (registry entry scan, kernels/streaming.py): read or generate the input partition by
partition, scan it with the chosen kernel's roundings and verify it on the fly, time the kernel and the memcpy
of the same bytes, and build the result document (store/schema.py RunResult). `ascendbench.run("scan", ...)`
comes here.

    >>> import ascendbench
    >>> run = ascendbench.run("scan", n=1_000_000, algorithm="mcscan-ul1", s=128, seed=0)
    >>> run.time_s, run.result.metrics["bandwidth_gbps"], run.verification.passed
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import InputError, ParamError, get_kernel
from ascendbench.kernels.contract import KernelRun
from ascendbench.kernels.partition import (
    GENERATORS,
    PARTITION_LIMIT,
    ArraySource,
    GeneratedSource,
    npy_memmap,
    offset_type,
    partitions,
)
from ascendbench.kernels.run_steps import (
    Background,
    FileHash,
    RunContext,
    RunOptions,
    bandwidth_metrics,
    check_int,
    consume_partitions,
    load_npy,
    provenance,
    verification_record,
)
from ascendbench.kernels.scan import (
    L2_STARTS,
    OUT_DTYPES,
    SCAN_KERNELS,
    UL1_ALGORITHMS,
    ScanParams,
    fp16_output_overflow,
    ul1_overflow_message,
)
from ascendbench.kernels.scan_numerics import C1Overflow, CheckThread, ScanVerifier, stream_pieces
from ascendbench.sim.host import measured_window, scan_wrapper
from ascendbench.store.schema import Problem, RunResult, Verification

__all__ = ["KEEP_OUTPUT_BYTES", "estimate_functional_seconds", "load_input", "run_scan"]

KEEP_OUTPUT_BYTES = 2**30  # outputs up to 1 GiB are kept in memory by default; larger ones are verified and dropped


def load_input(path: Path) -> tuple[np.ndarray, str, str]:
    """Open a user's 1-D .npy array of float16 or int8 as a read-only memory map (any size: pages are read on
    demand). Returns (array, dtype name, sha256 of the file).

    Raises:
        InputError: unreadable, not an .npy array, not 1-D, or another dtype (the message says which).
    """
    return load_npy(path, 1)  # the memory map: read slice by slice, never whole


def estimate_functional_seconds(n: int, algorithm: str, params: ScanParams, hw: HardwareProfile,
                                sample: int = 2**21) -> float:
    """Host seconds the streaming functional run (scan and on-the-fly verification) of n elements would take,
    extrapolated linearly from a timed run on min(n, sample) generated elements of the same kernel and dtype."""
    m = min(n, sample)
    if m == 0:
        return 0.0
    t0 = time.perf_counter()
    check = ScanVerifier(algorithm, m, params, hw)
    for _, xb, yb in stream_pieces(algorithm, GeneratedSource(m, params.dtype, "random", 0), params, hw):
        check.feed(xb, yb)
    return (time.perf_counter() - t0) * n / m


def run_scan(
    ctx: RunContext,
    opts: RunOptions,
    n: int | None = None,
    *,
    algorithm: str | None = None,
    s: int = 128,
    blocks: int | None = None,
    chunk: int | None = None,
    exclusive: bool = False,
    dtype: str | None = None,
    out_dtype: str | None = None,
    x: np.ndarray | None = None,
    generator: str = "random",
    l2: str | None = None,
    out: np.ndarray | None = None,
    keep_output: bool | None = None,
    partition_limit: int = PARTITION_LIMIT,
    output_path: Path | None = None,
) -> KernelRun:
    """Run scan kernel `algorithm` on n elements through the simulated machine and check it against NumPy.

    Args:
        ctx: the run's context from the pipeline (registry entry, parameters, hardware, command line).
        n: number of elements (any non-negative int). Optional when x or input_file is given (must agree).
        algorithm: mcscan-ul1, mcscan, scanu, scanul1, vec-cumsum or memcpy (kernels.KERNELS). None (the
            default): the scan paper's MCScanUL1 where every row's fp16 sum (its C1) fits fp16, else MCScan
            (the result's model.algorithm_choice says why); MCScan for int8. A ScanUL1 variant asked for on an
            input whose row sums overflow fp16 raises ParamError (its output would be NaN).
        opts: the run options (RunOptions): seed of the generated input (ignored with x / input_file);
            input_file, a .npy file holding the (n,) input; model_only, no data (x and input_file None: give n
            and dtype); warm_l2, the same as l2="warm"; progress; verify is not read (the scan always verifies).
        s, blocks, chunk, exclusive, dtype, out_dtype: see ScanParams.
        x: the user's own (n,) float16 or int8 array.
        l2: what L2 holds when the kernel starts (kernels.scan.L2_STARTS): "flushed" (default: full of the dirty
            lines of the buffer the papers' profiling script zeroes before every timed run, which the kernel's
            own data must evict), "clean" (empty) or "warm" (the input resident).
        generator: generated input without x / input_file: "random" (seeded), "constant" (ones) or "counting"
            (see partition.GeneratedSource), produced block by block.
        out: an (n,) array or memory map (partition.npy_memmap) of the output dtype to write the output into.
        keep_output: keep the output in memory (default: when it is at most KEEP_OUTPUT_BYTES); otherwise it is
            verified on the fly against a streaming reference and dropped (KernelRun.arrays None unless `out`).
        partition_limit: items per streaming partition (default 2**31 - 1; the result does not depend on it).
        output_path: write the output to a new .npy memory map at this path (checked for disk space first).

    The functional run streams: input read (or generated) partition by partition and batch by batch, output
    verified on the fly; peak memory does not grow with n unless the output is kept.

    Returns:
        KernelRun: result document (times in seconds, bandwidth in GB/s = 1e9 B/s, counting the input read once
        and the output written once), the simulated run, the output ({"y": ...}, None when not kept) and the
        memcpy reference run (extras["memcpy"]).

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError: for invalid arguments (messages name them).
    """
    seed, input_file, model_only, warm_l2, progress = (opts.seed, opts.input_file, opts.model_only, opts.warm_l2,
                                                       opts.progress)
    hw = ctx.hw
    requested = algorithm
    kernel = get_kernel(algorithm or "mcscan-ul1")
    if kernel.name not in SCAN_KERNELS:
        raise ParamError("algorithm", f"{algorithm} is not a scan kernel")
    sha = None
    if input_file is not None:
        x, data_dtype, sha = load_npy(input_file, 1, background_hash=True)  # sha: read before the result
    elif x is not None:
        if isinstance(x, np.ma.MaskedArray):
            raise InputError("x: masked arrays are not supported; pass x.filled(0) or the data you mean")
        x = np.asarray(x)
        if x.ndim != 1 or x.dtype not in (np.float16, np.int8):
            raise InputError("x: must be a 1-D float16 or int8 array")
    x_given = x is not None and input_file is None
    data_source_dtype = x is not None and dtype is None
    if x is not None:
        data_dtype = "fp16" if x.dtype == np.float16 else "int8"
        if dtype is not None and dtype != data_dtype:
            raise ParamError("dtype", f"{dtype} disagrees with the input array's {data_dtype}; drop --dtype")
        dtype = data_dtype
    dtype = dtype or "fp16"
    if requested is None:  # the scan paper's kernel; the ScanUL1 variants are fp16 only
        algorithm = "mcscan" if dtype == "int8" else "mcscan-ul1"
        kernel = get_kernel(algorithm)
    if x is not None:
        if n is not None and n != x.shape[0]:
            raise ParamError("n", f"{n} disagrees with the input's length {x.shape[0]}; drop --n or make them equal")
        n = int(x.shape[0])
    if n is None:
        raise ParamError("n", "is required without --input")
    if n < 0:
        raise ParamError("n", f"must be a non-negative integer, got {n}")
    params = ScanParams(s=s, blocks=blocks, chunk=chunk, exclusive=exclusive, dtype=dtype, out_dtype=out_dtype)
    try:
        kernel.check(n, params, hw)
    except ParamError as exc:
        if exc.param == "dtype" and data_source_dtype:
            raise ParamError("input", f"the array is {dtype}: {str(exc).split(': ', 1)[1]}") from None
        raise

    choice = None
    # An fp16 row sum past 65504 would make the ScanUL1 variants' output NaN: the functional run stops at the
    # first such row (C1Overflow, before any of its output is kept) and the default then runs MCScan instead.
    # Generated random input cannot overflow (uniform in [0, 1): every row sums to less than s <= 128).
    guard = algorithm in UL1_ALGORITHMS and not model_only and not (x is None and generator == "random")
    if generator not in GENERATORS:
        raise ParamError("generator", f"must be one of {', '.join(GENERATORS)}, got {generator!r}")
    if params.out == "fp16" and not model_only and n and algorithm != "memcpy":
        # decide before running: an fp16 output element past 65504 would be inf (memcpy copies fp16 values as
        # they are: its output cannot overflow)
        read = (lambda lo, hi: x[lo:hi]) if x is not None else GeneratedSource(n, dtype, generator, seed).read
        big = fp16_output_overflow(read, n, exclusive)
        if big is not None:
            inf = "inf" if big[1] > 0 else "-inf"
            raise ParamError("out-dtype", f"the scan reaches {big[1]:,.6g} at element {big[0]:,}, past fp16's 65504: "
                                          f"the fp16 output would be {inf} from there; use --out-dtype fp32")

    if l2 is not None and warm_l2 and l2 != "warm":
        raise ParamError("l2", f"--warm-l2 means --l2 warm; it disagrees with --l2 {l2}")
    start = l2 if l2 is not None else ("warm" if warm_l2 else "flushed")
    if start not in L2_STARTS:
        raise ParamError("l2", f"must be one of {', '.join(L2_STARTS)}, got {start!r}")
    copy_params = ScanParams(dtype=dtype, out_dtype=params.out)

    def timing_model(kernel):
        t0 = time.perf_counter()
        sim = kernel.simulate(n, params, hw, l2=start)
        memcpy = SCAN_KERNELS["memcpy"].simulate(n, copy_params, hw, l2=start)
        return sim, memcpy, time.perf_counter() - t0

    # The timing model (pure Python) runs beside the functional run (NumPy, which releases the GIL): their
    # results do not depend on each other.
    model = Background(lambda k=kernel: timing_model(k)) if not model_only else None
    if model_only:
        sim, memcpy, model_s = timing_model(kernel)

    output = None
    functional_s = None
    verification = Verification(performed=False)
    data = "none"
    kept = "none"
    check_int("partition-limit", partition_limit, 1)
    if partition_limit > PARTITION_LIMIT:
        raise ParamError("partition-limit", f"must be in [1, 2**31 - 1], got {partition_limit}")
    parts = partitions(n, partition_limit)
    if not model_only:
        t1 = time.perf_counter()
        if x is None:
            source = GeneratedSource(n, dtype, generator, seed)
            data = "generated"
        else:
            source = ArraySource(x)
            data = "file" if input_file is not None else "generated"
        out_np = OUT_DTYPES[params.out]
        if keep_output is None:
            keep_output = n * np.dtype(out_np).itemsize <= KEEP_OUTPUT_BYTES
        if output_path is not None:
            need = n * np.dtype(out_np).itemsize + 128
            disk = shutil.disk_usage(Path(output_path).resolve().parent)
            if disk.total == 0:  # /proc, /sys: no disk behind the folder, so "0.0 GB free" would mislead
                raise ParamError("output-file", f"{str(Path(output_path).parent)!r} is not on a writable filesystem")
            if need > disk.free:
                raise ParamError("output-file", f"the output needs {need / 1e9:.1f} GB on disk, "
                                 f"{disk.free / 1e9:.1f} GB free")
            out = npy_memmap(output_path, n, out_np)
        if out is not None:
            if out.shape != (n,) or out.dtype != out_np:
                raise ParamError("out", f"must be an ({n},) {np.dtype(out_np)} array, got {out.shape} {out.dtype}")
            output, kept = out, "file"
        elif keep_output:
            output, kept = np.empty(n, dtype=out_np), "memory"
        else:
            kept = "discarded"
        while True:
            check = CheckThread(ScanVerifier(algorithm, n, params, hw))  # a piece's check overlaps the next scan
            pieces = stream_pieces(algorithm, source, params, hw, limit=partition_limit, stop_on_c1_overflow=guard)
            try:
                v = consume_partitions(pieces, check, n, output, release=kept == "file", progress=progress)
            except C1Overflow as exc:
                why = ul1_overflow_message(algorithm, s, exc.row, exc.total)
                if requested is not None:
                    raise ParamError("algorithm", f"{why}; use --algorithm mcscan (or scale the input)") from None
                choice = f"{why}; ran mcscan instead (the default takes mcscan-ul1 only where every row fits)"
                algorithm, kernel, guard = "mcscan", get_kernel("mcscan"), False
                kernel.check(n, params, hw)
                model = Background(lambda k=kernel: timing_model(k))  # the ScanUL1 model's thread is left
                continue  # from the start with MCScan: what was written is overwritten
            break
        if isinstance(output, np.memmap):
            output.flush()
        verification = verification_record(v)
        functional_s = time.perf_counter() - t1
    if model is not None:
        sim, memcpy, model_s = model.result()
    if requested is None and choice is None:
        choice = ("mcscan-ul1: the scan paper's kernel" + (" (every row's fp16 sum fits)" if not model_only else "")
                  if algorithm == "mcscan-ul1" else "mcscan: the ScanUL1 variants are fp16 only")

    if isinstance(sha, FileHash):
        sha = sha.hexdigest()
    moved = n * (params.in_bytes + params.out_bytes)
    memcpy_bw = moved / memcpy.time_s / 1e9 if memcpy.time_s > 0 else 0.0
    phases = {name: cycles / hw.clock_hz for name, cycles in sim.phases.items()}
    metrics = bandwidth_metrics(n, moved, sim, hw)
    bandwidth = metrics["bandwidth_gbps"]
    metrics |= {
        "memcpy_time_s": memcpy.time_s,
        "memcpy_bandwidth_gbps": memcpy_bw,
        "fraction_of_memcpy": bandwidth / memcpy_bw if memcpy_bw > 0 else None,
        "phase_1_s": phases.get("phase I", phases.get("scan")),
        "phase_2_s": phases.get("phase II"),
        "bytes_moved": float(moved),
    }
    # what the scan paper's profiling script would time around this kernel (sim/host.py); the kernel time above
    # is what msprof reports and stays the headline
    window = measured_window(hw, scan_wrapper(algorithm, params.chunk), sim.time_s)
    metrics |= {"call_time_s": window.window_s, "host_window_s": window.host_s}
    result = RunResult(
        **ctx.sim_fields(sim, functional_s, model_s),
        kernel=algorithm,
        params=params.to_dict() | {"warm_l2": start == "warm", "l2": start},
        problem=Problem(n=n, dtype=dtype, out_dtype=params.out, exclusive=exclusive,
                        **provenance(data, seed, input_file, sha),
                        generator=generator if data == "generated" and not x_given else None,
                        offset_type=offset_type(n), partition_limit=partition_limit, partitions=parts.count,
                        output=kept),
        metrics=metrics,
        phases_s=phases,
        verification=verification,
        model={
            "algorithm_choice": choice,
            "extrapolated": sim.extrapolated,
            "warm_l2": start == "warm",
            "l2": start,
            "host_window": window.to_dict(),
            "note": ("long runs are simulated on two smaller instances of the same problem, each with L2 scaled "
                     "in proportion, and extrapolated; every core is simulated"),
        },
    )
    return ctx.run(result, sim, {"n": n, "dtype": dtype, "algorithm": algorithm},
                   arrays=None if output is None else {"y": output}, extras={"memcpy": memcpy})
