"""The public Python API behind `ascendbench run batched-scan` and `run segmented-scan`: run the scan on real
data through the simulated machine, verify it against NumPy, and build the result document.

    >>> from ascendbench.runner_rows import run_batched_scan
    >>> run = run_batched_scan(40, 65536, algorithm="auto", s=128)
    >>> run.result.kernel, run.result.metrics["bandwidth_gbps"], run.result.verification.passed
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
from ascendbench.kernels.base import ParamError
from ascendbench.runner import InputError, _check_int, generate_input
from ascendbench.sim.result import SimResult
from ascendbench.store.rows import BatchedProblem, BatchedScanResult
from ascendbench.store.schema import Host, Verification

__all__ = ["BatchedRun", "load_rows", "run_batched_scan"]

_DTYPES = {np.dtype(np.float16): "fp16", np.dtype(np.int8): "int8"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def load_rows(path: Path) -> tuple[np.ndarray, str, str]:
    """Load a (batch, length) .npy array of float16 or int8. Returns (array, dtype name, sha256 of the file).

    Raises:
        InputError: unreadable, not one .npy array, not 2-D, or another dtype (the message says which).
    """
    path = Path(path)
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--input: file not found: {path}") from None
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"--input: {path} is not a readable .npy array ({exc or 'empty file'})") from None
    if not isinstance(x, np.ndarray):
        raise InputError(f"--input: {path} holds several arrays; give one 2-D .npy array (batch, length)")
    if x.ndim != 2:
        raise InputError(f"--input: array must be 2-D (batch, length), got shape {tuple(x.shape)}")
    if x.dtype not in _DTYPES:
        raise InputError(f"--input: array dtype must be float16 or int8, got {x.dtype}")
    return np.ascontiguousarray(x), _DTYPES[x.dtype], _sha256(path)


@dataclass
class BatchedRun:
    """A batched scan run: the result document, the simulated run of the chosen algorithm, the output (None
    for model-only runs)."""

    result: BatchedScanResult
    sim: SimResult
    output: np.ndarray | None


def _host(wall0: float, functional_s: float | None, model_s: float) -> Host:
    return Host(
        wall_time_s=time.perf_counter() - wall0,
        functional_time_s=functional_s,
        model_time_s=model_s,
        machine=platform.machine() or "unknown",
        python=sys.version.split()[0],
        numpy=np.__version__,
    )


def _resolve_data(x, input_file, dtype, loader):
    """(x, dtype, sha, data_from_file) with --dtype checked against the array's dtype."""
    sha = None
    if input_file is not None:
        x, data_dtype, sha = loader(input_file)
    elif x is not None:
        x = np.asarray(x)
        if x.dtype not in _DTYPES:
            raise InputError("x: must be a float16 or int8 array")
    if x is not None:
        data_dtype = _DTYPES[x.dtype]
        if dtype is not None and dtype != data_dtype:
            raise ParamError("dtype", f"{dtype} disagrees with the input array's {data_dtype}; drop --dtype")
        dtype = data_dtype
    return x, dtype or "fp16", sha


def run_batched_scan(
    batch: int | None = None,
    length: int | None = None,
    *,
    algorithm: str = "auto",
    s: int = 128,
    exclusive: bool = False,
    dtype: str | None = None,
    seed: int = 0,
    x: np.ndarray | None = None,
    input_file: Path | None = None,
    hardware: str | HardwareProfile = "ascend-910b4",
    model_only: bool = False,
    verify: bool = True,
    warm_l2: bool = False,
    command: list[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> BatchedRun:
    """Scan every row of a (batch, length) array on the simulated machine (scan paper appendix B.1).

    Args:
        batch, length: the shape (optional with x / input_file; must agree).
        algorithm: "scanu", "scanul1", "auto" (the faster of the two by the timing model) or "vector".
        s: tile side 16/32/64/128. exclusive: exclusive scan of every row. dtype: "fp16" or "int8".
        seed: seed of the generated input (fp16 uniform in [0, 1), int8 uniform in [-128, 127]).
        x: the user's own (batch, length) float16/int8 array; input_file: a .npy file holding one.
        model_only: timings and counters only. verify: compare with NumPy (per row, float64 / int64).
        progress: called as progress(stage, done, total).

    Returns:
        BatchedRun: bandwidth in GB/s (1e9 B/s) counts the input read once and the output written once.

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError (messages name the option).
    """
    from ascendbench.kernels import batched_scan as bs

    wall0 = time.perf_counter()
    _check_int("batch", batch, 0, optional=True)
    _check_int("length", length, 0, optional=True)
    _check_int("seed", seed, 0)
    if x is not None and input_file is not None:
        raise ParamError("input", "give either x or input_file, not both")
    hw = hardware if isinstance(hardware, HardwareProfile) else load_profile(hardware)
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
            if progress:
                progress("generating input", 0, n)
            x = generate_input(n, dtype, seed).reshape(batch, length)
        done = [0]

        def tick(k: int) -> None:
            done[0] += k
            if progress:
                progress("scanning", min(done[0], n), n)

        output = bs.compute_batched(x, params, run.algorithm, tick)
        if verify:
            if progress:
                progress("verifying", n, n)
            v = bs.verify_batched(x, output, params, run.algorithm)
            verification = Verification(
                performed=True,
                passed=v.passed,
                max_abs_error=v.max_abs_error,
                max_rel_error=v.max_rel_error,
                tolerance=v.tolerance,
            )
        functional_s = time.perf_counter() - t1
    sim = run.sim
    p = params.scan
    moved = n * (p.in_bytes + p.out_bytes)
    bandwidth = moved / sim.time_s / 1e9 if sim.time_s > 0 else 0.0
    phases = sim.phases_s
    metrics = {
        "time_s": sim.time_s,
        "bandwidth_gbps": bandwidth,
        "fraction_of_peak": bandwidth / hw.hbm_bandwidth_gbps,
        "elements_per_s": n / sim.time_s if sim.time_s > 0 else 0.0,
        "bytes_moved": float(moved),
        "rows_per_s": batch / sim.time_s if sim.time_s > 0 else 0.0,
    }
    result = BatchedScanResult(
        tool_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command if command is not None else ["python-api", "run_batched_scan"],
        hardware=hw.to_dict(),
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
            seed=seed if data == "generated" else None,
            input_file=str(input_file) if input_file is not None else None,
            input_sha256=sha,
            data=data,
        ),
        metrics=metrics,
        phases_s=phases,
        utilisation=sim.utilisation(),
        counters={k: float(v) for k, v in sorted(sim.counters.items())},
        verification=verification,
        host=_host(wall0, functional_s, model_s),
        model={
            "extrapolated": sim.extrapolated,
            "warm_l2": warm_l2,
            "tiles_per_row": run.layout.tiles_per_row,
            "row_scan_only_path": run.layout.short,
            "padded": run.layout.padded,
            "workers": run.layout.workers,
            "note": "long loops are simulated for a few iterations per core and extrapolated; every core simulated",
        },
    )
    return BatchedRun(result, sim, output)
