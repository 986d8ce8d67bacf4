"""The public Python API behind `ascendbench run scan`: run a scan kernel on real data through the simulated
machine, verify it, and build the result document.

    >>> from ascendbench import run_scan
    >>> run = run_scan(1_000_000, algorithm="mcscan-ul1", s=128, seed=0)
    >>> run.result.metrics["bandwidth_gbps"], run.result.verification.passed
"""

from __future__ import annotations

import hashlib
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ascendbench import __version__
from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.kernels import ParamError, ScanParams, get_kernel
from ascendbench.kernels.scan import SCAN_KERNELS
from ascendbench.sim.result import SimResult
from ascendbench.store.schema import Host, Problem, RunResult, Verification

__all__ = ["InputError", "ScanRun", "generate_input", "load_input", "run_scan"]


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


def load_input(path: Path) -> tuple[np.ndarray, str, str]:
    """Load a user's 1-D .npy array of float16 or int8. Returns (array, dtype name, sha256 of the file).

    Raises:
        InputError: unreadable, not an .npy array, not 1-D, or another dtype (the message says which).
    """
    path = Path(path)
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--input: file not found: {path}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"--input: {path} is not a readable .npy array ({exc})") from None
    if not isinstance(x, np.ndarray):
        raise InputError(f"--input: {path} holds several arrays; give one 1-D .npy array")
    if x.ndim != 1:
        raise InputError(f"--input: array must be 1-D, got shape {tuple(x.shape)}")
    names = {np.dtype(np.float16): "fp16", np.dtype(np.int8): "int8"}
    if x.dtype not in names:
        raise InputError(f"--input: array dtype must be float16 or int8, got {x.dtype}")
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            digest.update(block)
    return np.ascontiguousarray(x), names[x.dtype], digest.hexdigest()


def run_scan(
    n: int | None = None,
    *,
    algorithm: str = "mcscan-ul1",
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
) -> ScanRun:
    """Run scan kernel `algorithm` on n elements through the simulated machine and check it against NumPy.

    Args:
        n: number of elements (any non-negative int). Optional when x or input_file is given (must agree).
        algorithm: registry name: mcscan-ul1, mcscan, scanu, scanul1, vec-cumsum, memcpy.
        s, blocks, chunk, exclusive, dtype, out_dtype: see ScanParams.
        seed: seed of the generated input (ignored with x / input_file).
        x: the user's own (n,) float16 or int8 array; input_file: a .npy file holding one.
        hardware: profile name or TOML path, or a HardwareProfile.
        model_only: timings and counters only, no data.
        warm_l2: start with the input resident in L2 (the papers' measurements start cold).
        progress: called as progress(stage, done, total) during long functional work.

    Returns:
        ScanRun: result document (times in seconds, bandwidth in GB/s = 1e9 B/s, counting the input read once
        and the output written once), the simulated run, the memcpy reference run, the output array.

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError: for invalid arguments (messages name them).
    """
    wall0 = time.perf_counter()
    hw = hardware if isinstance(hardware, HardwareProfile) else load_profile(hardware)
    kernel = get_kernel(algorithm)
    if algorithm not in SCAN_KERNELS:
        raise ParamError("algorithm", f"{algorithm} is not a scan kernel")
    sha = None
    if input_file is not None:
        x, data_dtype, sha = load_input(input_file)
    elif x is not None:
        x = np.asarray(x)
        if x.ndim != 1 or x.dtype not in (np.float16, np.int8):
            raise InputError("x: must be a 1-D float16 or int8 array")
    if x is not None:
        data_dtype = "fp16" if x.dtype == np.float16 else "int8"
        if dtype is not None and dtype != data_dtype:
            raise ParamError("dtype", f"{dtype} disagrees with the input array's {data_dtype}; drop --dtype")
        dtype = data_dtype
    dtype = dtype or "fp16"
    if x is not None:
        if n is not None and n != x.shape[0]:
            raise ParamError("n", f"{n} disagrees with the input's length {x.shape[0]}; drop --n or make them equal")
        n = int(x.shape[0])
    if n is None:
        raise ParamError("n", "is required without --input")
    if n < 0:
        raise ParamError("n", f"must be a non-negative integer, got {n}")
    params = ScanParams(s=s, blocks=blocks, chunk=chunk, exclusive=exclusive, dtype=dtype, out_dtype=out_dtype)
    kernel.check(n, params, hw)

    t0 = time.perf_counter()
    sim = kernel.simulate(n, params, hw, warm_l2=warm_l2)
    copy_params = ScanParams(dtype=dtype, out_dtype=params.out)
    memcpy = SCAN_KERNELS["memcpy"].simulate(n, copy_params, hw, warm_l2=warm_l2)
    model_s = time.perf_counter() - t0

    output = None
    functional_s = None
    verification = Verification(performed=False)
    data = "none"
    if not model_only:
        t1 = time.perf_counter()
        if x is None:
            if progress:
                progress("generating input", 0, n)
            x = generate_input(n, dtype, seed)
            data = "generated"
        else:
            data = "file" if input_file is not None else "generated"
        done = [0]

        def tick(k: int) -> None:
            done[0] += k
            if progress:
                progress("scanning", min(done[0], n), n)

        output = kernel.compute(x, params, tick, hw=hw)
        if progress:
            progress("verifying", n, n)
        v = kernel.verify(x, output, params, hw)
        verification = Verification(performed=True, passed=v.passed, max_abs_error=v.max_abs_error,
                                    max_rel_error=v.max_rel_error, tolerance=v.tolerance)
        functional_s = time.perf_counter() - t1

    moved = n * (params.in_bytes + params.out_bytes)
    bandwidth = moved / sim.time_s / 1e9 if sim.time_s > 0 else 0.0
    memcpy_bw = moved / memcpy.time_s / 1e9 if memcpy.time_s > 0 else 0.0
    phases = {name: cycles / hw.clock_hz for name, cycles in sim.phases.items()}
    metrics = {
        "time_s": sim.time_s,
        "bandwidth_gbps": bandwidth,
        "fraction_of_peak": bandwidth / hw.hbm_bandwidth_gbps,
        "elements_per_s": n / sim.time_s if sim.time_s > 0 else 0.0,
        "memcpy_time_s": memcpy.time_s,
        "memcpy_bandwidth_gbps": memcpy_bw,
        "fraction_of_memcpy": bandwidth / memcpy_bw if memcpy_bw > 0 else None,
        "phase_1_s": phases.get("phase I", phases.get("scan")),
        "phase_2_s": phases.get("phase II"),
        "bytes_moved": float(moved),
    }
    result = RunResult(
        tool_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command if command is not None else ["python-api", "run_scan"],
        hardware=hw.to_dict(),
        kernel=algorithm,
        params=params.to_dict() | {"warm_l2": warm_l2},
        problem=Problem(n=n, dtype=dtype, out_dtype=params.out, exclusive=exclusive,
                        seed=seed if data == "generated" else None,
                        input_file=str(input_file) if input_file is not None else None, input_sha256=sha, data=data),
        metrics=metrics,
        phases_s=phases,
        utilisation=sim.utilisation(),
        counters={k: float(v) for k, v in sorted(sim.counters.items())},
        verification=verification,
        host=Host(wall_time_s=time.perf_counter() - wall0, functional_time_s=functional_s, model_time_s=model_s,
                  machine=platform.machine() or "unknown", python=sys.version.split()[0], numpy=np.__version__),
        model={
            "extrapolated": sim.extrapolated,
            "warm_l2": warm_l2,
            "note": ("long loops are simulated for a few iterations per core and extrapolated; cores with the "
                     "same program are simulated once and weighted"),
        },
    )
    return ScanRun(result, sim, memcpy, output)
