"""The public Python API behind `ascendbench run scan`: run a scan kernel on real data through the simulated
machine, verify it, and build the result document.

    >>> from ascendbench import run_scan
    >>> run = run_scan(1_000_000, algorithm="mcscan-ul1", s=128, seed=0)
    >>> run.result.metrics["bandwidth_gbps"], run.result.verification.passed
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import sys
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ascendbench import __version__
from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.kernels.base import ParamError, get_kernel  # not the package: it reaches the registry
from ascendbench.kernels.scan import ScanParams
from ascendbench.kernels.base import NO_DATA_WITH_MODEL_ONLY
from ascendbench.kernels.partition import (
    GENERATORS,
    PARTITION_LIMIT,
    ArraySource,
    GeneratedSource,
    npy_memmap,
    offset_type,
    partitions,
    release_pages,
)
from ascendbench.kernels.scan import (
    L2_STARTS,
    OUT_DTYPES,
    SCAN_KERNELS,
    UL1_ALGORITHMS,
    fp16_output_overflow,
    ul1_overflow_message,
)
from ascendbench.kernels.scan_numerics import C1Overflow, CheckThread, ScanVerifier, stream_pieces
from ascendbench.processes import imap_in_workers, jobs_error, usable_cores
from ascendbench.sim.host import measured_window, scan_wrapper
from ascendbench.sim.result import SimResult
from ascendbench.store.io import unreadable_npy
from ascendbench.store.schema import Host, Problem, RunResult, Verification

if TYPE_CHECKING:
    from ascendbench.kernels.hgemm import HgemmParams
    from ascendbench.store.schema import HgemmRunResult

__all__ = ["GENERATORS", "KEEP_OUTPUT_BYTES", "PARTITION_LIMIT", "InputError", "ScanRun", "estimate_functional_seconds",
           "generate_input", "load_input", "run_scan"]

KEEP_OUTPUT_BYTES = 2**30  # outputs up to 1 GiB are kept in memory by default; larger ones are verified and dropped


class InputError(ValueError):
    """An input file is unusable; the message names the argument and what is allowed."""


@dataclass
class ScanRun:
    """Everything one scan run produced: the result document, the simulated run, the output (None for
    model-only runs) and the memcpy reference run."""

    result: RunResult
    sim: SimResult
    memcpy: SimResult
    output: np.ndarray | None


def generate_input(n: int, dtype: str, seed: int) -> np.ndarray:
    """Seeded test data: fp16 uniform in [0, 1) (prefix sums grow steadily, as for probabilities) or int8
    uniform in [-128, 127] (sums stay well inside int32 for any n that fits in memory)."""
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, size=n, dtype=np.int8)
    out = np.empty(n, dtype=np.float16)
    step = 1 << 24
    for i in range(0, n, step):
        out[i: i + step] = rng.random(min(step, n - i), dtype=np.float32)
    return out


_DTYPES = {np.dtype(np.float16): "fp16", np.dtype(np.int8): "int8"}  # input dtype -> CLI dtype name


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


class _Background:
    """fn() on a daemon thread; result() waits for it and returns its value or raises its exception."""

    def __init__(self, fn):
        self._value = self._error = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised by result() in the calling thread
            self._error = exc

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


class _FileHash(_Background):
    """The sha256 of a file, computed on a background thread (hashlib releases the GIL, so it overlaps the
    timing model and the functional run); hexdigest() waits for it. Raises InputError naming --input when the
    file cannot be read."""

    def __init__(self, path: Path):
        self.path = path
        super().__init__(lambda: _sha256(path))

    def hexdigest(self) -> str:
        try:
            return self.result()
        except OSError as exc:
            raise InputError(f"--input: cannot read {self.path} ({exc.strerror or exc})") from None


def _load_npy(path: Path, ndim: int, axes: str = "", background_hash: bool = False):
    """Memory-map an --input .npy array of `ndim` dimensions (`axes` names them in messages), float16 or int8.
    Returns (array, dtype name, sha256 of the file, or with background_hash a _FileHash computing it); raises
    InputError naming --input."""
    path = Path(path)
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--input: file not found: {path}") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"--input: {path} {unreadable_npy(path, exc)}") from None
    if not isinstance(x, np.ndarray):
        raise InputError(f"--input: {path} holds several arrays; give one {ndim}-D .npy array{axes}")
    if x.ndim != ndim:
        raise InputError(f"--input: array must be {ndim}-D{axes}, got shape {tuple(x.shape)}")
    if x.dtype not in _DTYPES:
        raise InputError(f"--input: array dtype must be float16 or int8, got {x.dtype}")
    return x, _DTYPES[x.dtype], (_FileHash(path) if background_hash else _sha256(path))


def load_input(path: Path) -> tuple[np.ndarray, str, str]:
    """Open a user's 1-D .npy array of float16 or int8 as a read-only memory map (any size: pages are read on
    demand). Returns (array, dtype name, sha256 of the file).

    Raises:
        InputError: unreadable, not an .npy array, not 1-D, or another dtype (the message says which).
    """
    return _load_npy(path, 1)  # the memory map: read slice by slice, never whole


def _host(wall0: float, functional_s: float | None, model_s: float) -> Host:
    """The host record of a run started at perf_counter() time wall0."""
    return Host(wall_time_s=time.perf_counter() - wall0, functional_time_s=functional_s, model_time_s=model_s,
                machine=platform.machine() or "unknown", python=sys.version.split()[0], numpy=np.__version__)


def _verification(v) -> Verification:
    """The result document's record of a performed check (v: a verifier's result with passed and errors)."""
    return Verification(performed=True, passed=v.passed, max_abs_error=v.max_abs_error,
                        max_rel_error=v.max_rel_error, tolerance=v.tolerance)


def _bandwidth_metrics(n: int, moved: float, sim: SimResult, hw: HardwareProfile) -> dict[str, float]:
    """time_s, bandwidth_gbps (moved bytes / simulated time, 1 GB = 1e9 B), fraction_of_peak, elements_per_s."""
    bandwidth = moved / sim.time_s / 1e9 if sim.time_s > 0 else 0.0
    return {
        "time_s": sim.time_s,
        "bandwidth_gbps": bandwidth,
        "fraction_of_peak": bandwidth / hw.hbm_bandwidth_gbps,
        "elements_per_s": n / sim.time_s if sim.time_s > 0 else 0.0,
    }


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


def _check_int(name: str, value, minimum: int, optional: bool = False) -> None:
    """Raise ParamError naming the argument unless value is an int >= minimum (None allowed if optional)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParamError(name, f"must be an integer, got {value!r}")
    if value < minimum:
        raise ParamError(name, f"must be at least {minimum}, got {value}")


def run_scan(
    n: int | None = None,
    *,
    algorithm: str | None = None,
    s: int = 128,
    blocks: int | None = None,
    chunk: int | None = None,
    exclusive: bool = False,
    dtype: str | None = None,
    out_dtype: str | None = None,
    seed: int = 0,
    x: np.ndarray | None = None,
    input_file: Path | None = None,
    hardware: str | HardwareProfile = "ascend-910b4",
    model_only: bool = False,
    warm_l2: bool = False,
    command: list[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    generator: str = "random",
    l2: str | None = None,
    out: np.ndarray | None = None,
    keep_output: bool | None = None,
    partition_limit: int = PARTITION_LIMIT,
    output_path: Path | None = None,
) -> ScanRun:
    """Run scan kernel `algorithm` on n elements through the simulated machine and check it against NumPy.

    Args:
        n: number of elements (any non-negative int). Optional when x or input_file is given (must agree).
        algorithm: mcscan-ul1, mcscan, scanu, scanul1, vec-cumsum or memcpy (kernels.KERNELS). None (the
            default): the scan paper's MCScanUL1 where every row's fp16 sum (its C1) fits fp16, else MCScan
            (the result's model.algorithm_choice says why); MCScan for int8. A ScanUL1 variant asked for on an
            input whose row sums overflow fp16 raises ParamError (its output would be NaN).
        s, blocks, chunk, exclusive, dtype, out_dtype: see ScanParams.
        seed: seed of the generated input (ignored with x / input_file).
        x: the user's own (n,) float16 or int8 array; input_file: a .npy file holding one.
        hardware: profile name or TOML path, or a HardwareProfile.
        model_only: timings and counters only, no data (x and input_file must be None: give n and dtype).
        warm_l2: start with the input resident in L2 (the same as l2="warm").
        l2: what L2 holds when the kernel starts (kernels.scan.L2_STARTS): "flushed" (default: full of the dirty
            lines of the buffer the papers' profiling script zeroes before every timed run, which the kernel's
            own data must evict), "clean" (empty) or "warm" (the input resident).
        progress: called as progress(stage, done, total) during long functional work.
        generator: generated input without x / input_file: "random" (seeded), "constant" (ones) or "counting"
            (see partition.GeneratedSource), produced block by block.
        out: an (n,) array or memory map (partition.npy_memmap) of the output dtype to write the output into.
        keep_output: keep the output in memory (default: when it is at most KEEP_OUTPUT_BYTES); otherwise it is
            verified on the fly against a streaming reference and dropped (ScanRun.output None unless `out`).
        partition_limit: items per streaming partition (default 2**31 - 1; the result does not depend on it).
        output_path: write the output to a new .npy memory map at this path (checked for disk space first).

    The functional run streams: input read (or generated) partition by partition and batch by batch, output
    verified on the fly; peak memory does not grow with n unless the output is kept.

    Returns:
        ScanRun: result document (times in seconds, bandwidth in GB/s = 1e9 B/s, counting the input read once
        and the output written once), the simulated run, the memcpy reference run, the output array.

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError: for invalid arguments (messages name them).
    """
    wall0 = time.perf_counter()
    _check_int("n", n, 0, optional=True)
    _check_int("s", s, 1)
    _check_int("blocks", blocks, 1, optional=True)
    _check_int("chunk", chunk, 0, optional=True)
    _check_int("seed", seed, 0)
    if x is not None and input_file is not None:
        raise ParamError("input", "give either x or input_file, not both")
    if model_only and (x is not None or input_file is not None):
        raise ParamError("input", NO_DATA_WITH_MODEL_ONLY)
    hw = hardware if isinstance(hardware, HardwareProfile) else load_profile(hardware)
    requested = algorithm
    kernel = get_kernel(algorithm or "mcscan-ul1")
    if kernel.name not in SCAN_KERNELS:
        raise ParamError("algorithm", f"{algorithm} is not a scan kernel")
    sha = None
    if input_file is not None:
        x, data_dtype, sha = _load_npy(input_file, 1, background_hash=True)  # sha: read before the result
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
    model = _Background(lambda k=kernel: timing_model(k)) if not model_only else None
    if model_only:
        sim, memcpy, model_s = timing_model(kernel)

    output = None
    functional_s = None
    verification = Verification(performed=False)
    data = "none"
    kept = "none"
    _check_int("partition-limit", partition_limit, 1)
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
            done = released = reported = 0
            if progress:
                progress("scanning and verifying", 0, n)
            try:
                with np.errstate(invalid="ignore", over="ignore"):  # NaN / inf inputs: the verdict explains them
                    for lo, xb, yb in stream_pieces(algorithm, source, params, hw, limit=partition_limit,
                                                    stop_on_c1_overflow=guard):
                        if output is not None:
                            output[lo: lo + yb.shape[0]] = yb
                            if kept == "file" and lo + yb.shape[0] - released >= 1 << 24:
                                release_pages(output, released, lo + yb.shape[0])  # written pages leave memory
                                released = lo + yb.shape[0]
                        check.feed(xb, yb)
                        done += yb.shape[0]
                        if progress and (done - reported >= 1 << 22 or done == n):  # small pieces: report less often
                            progress("scanning and verifying", done, n)
                            reported = done
            except C1Overflow as exc:
                check.stop()
                why = ul1_overflow_message(algorithm, s, exc.row, exc.total)
                if requested is not None:
                    raise ParamError("algorithm", f"{why}; use --algorithm mcscan (or scale the input)") from None
                choice = f"{why}; ran mcscan instead (the default takes mcscan-ul1 only where every row fits)"
                algorithm, kernel, guard = "mcscan", get_kernel("mcscan"), False
                kernel.check(n, params, hw)
                model = _Background(lambda k=kernel: timing_model(k))  # the ScanUL1 model's thread is left
                continue  # from the start with MCScan: what was written is overwritten
            except BaseException:
                check.stop()
                raise
            break
        v = check.close()
        if isinstance(output, np.memmap):
            output.flush()
        verification = _verification(v)
        functional_s = time.perf_counter() - t1
    if model is not None:
        sim, memcpy, model_s = model.result()
    if requested is None and choice is None:
        choice = ("mcscan-ul1: the scan paper's kernel" + (" (every row's fp16 sum fits)" if not model_only else "")
                  if algorithm == "mcscan-ul1" else "mcscan: the ScanUL1 variants are fp16 only")

    if isinstance(sha, _FileHash):
        sha = sha.hexdigest()
    moved = n * (params.in_bytes + params.out_bytes)
    memcpy_bw = moved / memcpy.time_s / 1e9 if memcpy.time_s > 0 else 0.0
    phases = {name: cycles / hw.clock_hz for name, cycles in sim.phases.items()}
    metrics = _bandwidth_metrics(n, moved, sim, hw)
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
        tool_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command if command is not None else ["python-api", "run_scan"],
        hardware=hw.to_dict(),
        kernel=algorithm,
        params=params.to_dict() | {"warm_l2": start == "warm", "l2": start},
        problem=Problem(n=n, dtype=dtype, out_dtype=params.out, exclusive=exclusive,
                        seed=seed if data == "generated" else None,
                        input_file=str(input_file) if input_file is not None else None, input_sha256=sha, data=data,
                        generator=generator if data == "generated" and not x_given else None,
                        offset_type=offset_type(n), partition_limit=partition_limit, partitions=parts.count,
                        output=kept),
        metrics=metrics,
        phases_s=phases,
        utilisation=sim.utilisation(),
        counters={k: float(v) for k, v in sorted(sim.counters.items())},
        verification=verification,
        host=_host(wall0, functional_s, model_s),
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
    return ScanRun(result, sim, memcpy, output)


# ----- HGEMM ------------------------------------------------------------------------------------------
VERIFY_LIMIT_MACS = 2**33  # functional check by default up to M*N*K*batch multiply-adds (about 2048^3)
WORKLOAD_VERIFY_LIMIT_MACS = 2**27  # per shape in workload runs (about 512^3), so that thousands of shapes stay fast


@dataclass
class HgemmRun:
    """An HGEMM run: the result document, the simulated run of each shape (none when the shapes ran in worker
    processes), and C (single-shape functional runs only)."""

    result: HgemmRunResult
    sims: list[SimResult]
    output: np.ndarray | None


def _load_matrix(path: Path, name: str) -> tuple[np.ndarray, str]:
    path = Path(path)
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--{name}: file not found: {path}") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"--{name}: {path} {unreadable_npy(path, exc)}") from None
    if not isinstance(arr, np.ndarray) or arr.ndim not in (2, 3):
        raise InputError(f"--{name}: must be a 2-D (or batch x rows x columns 3-D) array, got shape "
                         f"{getattr(arr, 'shape', '?')}")
    if arr.dtype != np.float16:
        raise InputError(f"--{name}: array dtype must be float16, got {arr.dtype}")
    return (arr[None] if arr.ndim == 2 else arr), _sha256(path)


def _gemm_inputs(shape, seed: int, beta: float, alpha: float):
    """Seeded A, B, C with entries uniform in [-1, 1) as fp16 (the HGEMM paper's §5.1 setup)."""
    rng = np.random.default_rng(seed)

    def mat(r, c):
        return (rng.random((shape.batch, r, c), dtype=np.float32) * 2 - 1).astype(np.float16)

    a = mat(shape.m, shape.k) if alpha != 0 else np.zeros((shape.batch, shape.m, shape.k), np.float16)
    b = mat(shape.k, shape.n) if alpha != 0 else np.zeros((shape.batch, shape.k, shape.n), np.float16)
    c = mat(shape.m, shape.n) if beta != 0 else None
    return a, b, c


def run_hgemm(
    m: int | None = None,
    n: int | None = None,
    k: int | None = None,
    *,
    batch: int = 1,
    workload: str | None = None,
    params: HgemmParams | None = None,
    hardware: str | HardwareProfile = "atlas-300t-a2",
    seed: int = 0,
    a_file: Path | None = None,
    b_file: Path | None = None,
    c_file: Path | None = None,
    verify: bool = True,
    warm_l2: bool = False,
    every_core: bool = False,
    jobs: int | None = None,
    command: list[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> HgemmRun:
    """Run HGEMM (C = alpha * A @ B + beta * C, fp16) on one shape or a named workload.

    Args:
        m, n, k, batch: the shape (elements); or `workload` (see ascendbench.workloads); or the shapes of
            --a (M x K), --b (K x N), --c (M x N) .npy float16 files (2-D, or 3-D with the batch first).
        params: HgemmParams (variant, tiles, split_k, shuffle_k, padding, double_buffer, alpha, beta).
        verify: compare with a float64 NumPy reference when M*N*K*batch <= 2**33, or <= 2**27 per shape in a
            workload (skipped above, with a note).
        warm_l2: start with A, B (and C, when all three fit) resident in L2.
        every_core: simulate every AI core instead of one representative per group of cores with the same
            task count (slower: about 10x per shape when nothing is cached; the grouping's lock-step transfers on
            the shared L2 make it up to 14% slow on some shapes, see README).
        jobs: worker processes for the shapes (default: the usable cores, at most 8, for 64 shapes or more,
            else 1); from 1 to ascendbench.processes.max_jobs() (4 per usable core).

    Returns:
        HgemmRun; times in seconds, TFLOPS = 2 M N K batch / time / 1e12, fraction_of_peak of the profile's
        fp16 cube peak.

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError (messages name the option).
    """
    from ascendbench.kernels.hgemm import GemmShape, HgemmParams
    from ascendbench.store.schema import GemmProblem, HgemmRunResult
    from ascendbench.workloads import load_workload

    wall0 = time.perf_counter()
    hw = hardware if isinstance(hardware, HardwareProfile) else load_profile(hardware)
    params = params or HgemmParams()
    files, hashes = {}, {}
    mats: dict[str, np.ndarray] = {}
    for name, path in (("a", a_file), ("b", b_file), ("c", c_file)):
        if path is not None:
            mats[name], hashes[name] = _load_matrix(path, name)
            files[name] = str(path)
    if workload is not None:
        if mats or m is not None or n is not None or k is not None:
            raise ParamError("workload", "cannot be combined with --m/--n/--k or --a/--b/--c")
        wl = load_workload(workload)
        shapes = [GemmShape(*s) for s in wl.shapes]
    else:
        if mats:
            fm, fn, fk, fb = _shape_from_files(mats)
            for name, given, found in (("m", m, fm), ("n", n, fn), ("k", k, fk)):
                if given is not None and found is not None and given != found:
                    raise ParamError(name, f"{given} disagrees with the input files ({found})")
            m, n, k = (m if fm is None else fm), (n if fn is None else fn), (k if fk is None else fk)
            batch = fb
        for name, value in (("m", m), ("n", n), ("k", k)):
            if value is None:
                raise ParamError(name, "is required (or give --a/--b/--c files, or --workload)")
        shapes = [GemmShape(int(m), int(n), int(k), int(batch))]
    peak = hw.cube_fp16_peak_tflops
    total = len(shapes)
    limit = VERIFY_LIMIT_MACS if workload is None else WORKLOAD_VERIFY_LIMIT_MACS
    if jobs is None:
        jobs = min(usable_cores(), 8) if total >= 64 else 1
    if problem_with_jobs := jobs_error(jobs):
        raise ParamError("jobs", problem_with_jobs)
    task = (params, hw, warm_l2, every_core, verify, limit, seed, mats, total == 1)
    results: list = [None] * total
    if jobs == 1 or total == 1:
        for i, shape in enumerate(shapes):
            results[i] = _hgemm_shape(i, shape, *task, keep_sim=True)
            if progress:
                progress("simulating" if not verify else "simulating and verifying", i + 1, total)
    else:
        # Shapes are independent: spread them over worker processes (results do not depend on the order; a
        # Ctrl-C stops them at once, where an executor ran every queued shape first: 50 s for random-5000).
        chunk = max(1, total // (jobs * 8))
        chunks = [(i, range(i, min(total, i + chunk)), shapes[i: i + chunk], task) for i in range(0, total, chunk)]
        done = 0
        for start, items in imap_in_workers(_hgemm_chunk_at, chunks, jobs):
            results[start: start + len(items)] = items
            done += len(items)
            if progress:
                progress(f"simulating on {jobs} processes", done, total)
    records = [r[0] for r in results]
    sims = [r[3] for r in results if r[3] is not None]
    if not sims:  # the shapes ran in worker processes; keep the first one's timeline (for --trace)
        from ascendbench.kernels.hgemm import simulate_hgemm

        sims = [simulate_hgemm(shapes[0], params, hw, warm_l2=warm_l2, every_core=every_core)[0]]
    output = results[0][4] if total == 1 else None
    model_s = sum(r[5] for r in results)
    verify_s = sum(r[6] for r in results)
    tf = np.array([r.tflops for r in records])
    summary = {}
    if total > 1:
        summary = {"shapes": float(total), "tflops_avg": float(tf.mean()), "tflops_max": float(tf.max()),
                   "tflops_min": float(tf.min()), "tflops_p10": float(np.percentile(tf, 10)),
                   "tflops_p50": float(np.percentile(tf, 50)), "tflops_p90": float(np.percentile(tf, 90)),
                   "tflops_std": float(tf.std()), "time_s_total": float(sum(r.time_s for r in records))}
    first = records[0]
    counters: dict[str, float] = {}
    for result in results:
        for key, value in result[1].items():
            counters[key] = counters.get(key, 0) + float(value)
    metrics = {"time_s": sum(r.time_s for r in records), "tflops": first.tflops if total == 1 else summary["tflops_avg"],
               "fraction_of_peak": first.fraction_of_peak if total == 1 else summary["tflops_avg"] / peak,
               "peak_tflops": peak}
    problem = None
    if workload is None:
        problem = GemmProblem(m=first.m, n=first.n, k=first.k, batch=first.batch, alpha=params.alpha, beta=params.beta,
                              data="file" if mats else ("generated" if first.verification.performed else "none"),
                              seed=None if mats else seed, files=files, sha256=hashes)
    result = HgemmRunResult(
        tool_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command if command is not None else ["python-api", "run_hgemm"],
        hardware=hw.to_dict(),
        params=params.to_dict() | {"warm_l2": warm_l2, "every_core": every_core},
        problem=problem,
        workload=workload,
        shapes=records,
        summary=summary,
        metrics=metrics,
        utilisation=results[0][2] if total == 1 else {},
        counters=counters,
        host=_host(wall0, verify_s or None, model_s),
        model={"extrapolated": any(r[7] for r in results), "worker_processes": jobs,
               "note": "task and K-block loops extrapolated from truncated runs; "
                       + ("every core simulated" if every_core else "identical cores simulated once")},
    )
    return HgemmRun(result, sims, output)


def _hgemm_shape(i, shape, params, hw, warm_l2, every_core, verify, limit, seed, mats, keep_output, keep_sim=False):
    """One shape of run_hgemm: (record, counters, utilisation, sim or None, output or None, model seconds,
    verify seconds, extrapolated). Module-level so that worker processes can run it."""
    from ascendbench.kernels.hgemm import compute_hgemm, simulate_hgemm, verify_hgemm
    from ascendbench.store.schema import HgemmShapeResult

    t0 = time.perf_counter()
    sim, tiling = simulate_hgemm(shape, params, hw, warm_l2=warm_l2, every_core=every_core)
    model_s = time.perf_counter() - t0
    macs = shape.m * shape.n * shape.k * shape.batch
    elements = (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n) * shape.batch
    verification = Verification(performed=False, tolerance=None)
    out = None
    verify_s = 0.0
    if verify and macs <= limit and elements <= 2**28:
        t1 = time.perf_counter()
        if mats:
            a = mats.get("a", np.zeros((shape.batch, shape.m, shape.k), np.float16))
            b = mats.get("b", np.zeros((shape.batch, shape.k, shape.n), np.float16))
            c = mats.get("c")
        else:
            a, b, c = _gemm_inputs(shape, seed + i, params.beta, params.alpha)
        out = compute_hgemm(a, b, c if params.beta != 0 else None, params, tiling)
        v = verify_hgemm(a, b, c if params.beta != 0 else None, out, params)
        verification = _verification(v)
        verify_s = time.perf_counter() - t1
    elif verify:
        verification = Verification(performed=False,
                                    tolerance=f"skipped: M*N*K*batch = {macs} > 2**{limit.bit_length() - 1}")
    peak = hw.cube_fp16_peak_tflops
    tflops = shape.flops / sim.time_s / 1e12 if sim.time_s > 0 else 0.0
    record = HgemmShapeResult(m=shape.m, n=shape.n, k=shape.k, batch=shape.batch, tiling=tiling.to_dict(),
                              time_s=sim.time_s, tflops=tflops, fraction_of_peak=tflops / peak,
                              phases_s=sim.phases_s, verification=verification)
    return (record, dict(sim.counters), sim.utilisation(), sim if keep_sim else None,
            out if keep_output else None, model_s, verify_s, sim.extrapolated)


def _hgemm_chunk_at(args):
    start, indices, shapes, task = args
    return start, [_hgemm_shape(i, shape, *task) for i, shape in zip(indices, shapes, strict=True)]


def _shape_from_files(mats: dict[str, np.ndarray]) -> tuple[int | None, int | None, int | None, int]:
    """M, N, K and batch from the --a/--b/--c arrays; raises InputError when they disagree."""
    dims: dict[str, int] = {}
    batches = set()
    layout = {"a": ("m", "k"), "b": ("k", "n"), "c": ("m", "n")}
    for name, arr in mats.items():
        batches.add(arr.shape[0])
        for axis, dim in zip(layout[name], arr.shape[1:]):
            if axis in dims and dims[axis] != dim:
                raise InputError(f"--{name}: shape {tuple(arr.shape)} disagrees with the other matrices "
                                 f"({axis.upper()} = {dims[axis]})")
            dims[axis] = int(dim)
    if len(batches) > 1:
        raise InputError(f"--a/--b/--c: batch sizes differ: {sorted(batches)}")
    return dims.get("m"), dims.get("n"), dims.get("k"), batches.pop()
