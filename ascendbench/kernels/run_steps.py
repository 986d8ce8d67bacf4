"""The steps every kernel's run shares: the run's context (what the pipeline hands a streaming kernel's run:
kernels/scan_run.py, row_scan_run.py, hgemm_run.py), the result document's header, host and verification
records, seeded input, .npy input files (memory-mapped, their sha256 computed on a background thread), the
bandwidth metrics.
"""

from __future__ import annotations

import hashlib
import platform
import sys
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ascendbench import __version__
from ascendbench.hardware import HardwareProfile
from ascendbench.kernels.base import InputError, ParamError
from ascendbench.kernels.contract import KernelParams, KernelRun, KernelSpec
from ascendbench.kernels.partition import release_pages
from ascendbench.sim.result import SimResult
from ascendbench.store.io import unreadable_npy
from ascendbench.store.schema import Host, Verification

__all__ = ["DTYPES", "Background", "FileHash", "RunContext", "RunOptions", "bandwidth_metrics", "check_int", "document_header",
           "consume_partitions", "generate_input", "host_record", "load_npy", "open_npy", "sha256",
           "verification_record"]


def document_header(name: str, hw: HardwareProfile, command: list[str] | None) -> dict[str, Any]:
    """The fields every result document starts with: tool version, creation time (UTC, seconds), the command
    line (default: the Python API's call) and the hardware profile."""
    return {"tool_version": __version__, "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": command if command is not None else ["python-api", "run", name], "hardware": hw.to_dict()}


@dataclass(frozen=True)
class RunOptions:
    """What a streaming kernel's functional step takes beside its parameters (kernels/scan_run.run_scan,
    row_scan_run.run_batched_scan and run_segmented_scan): seed of the generated input (>= 0); input_file, the
    .npy (or .npz) the data comes from; model_only, timings and counters only (no data: no input_file or arrays);
    verify, compare the output with NumPy; warm_l2, start with the input resident in L2; progress, called as
    progress(stage, done, total) during long functional work."""

    seed: int = 0
    input_file: Path | None = None
    model_only: bool = False
    verify: bool = True
    warm_l2: bool = False
    progress: Callable[[str, int, int], None] | None = None

    @classmethod
    def take(cls, values: dict[str, Any]) -> RunOptions:
        """The run options among `values` (a kernel's parameters and options by name), removed from it."""
        return cls(**{f.name: values.pop(f.name) for f in fields(cls) if f.name in values})


@dataclass
class RunContext:
    """What the pipeline hands a streaming kernel's run, its arguments checked (the parameter model, the seed,
    data against model_only): the registry entry, its validated parameters, the hardware profile, the command
    line to record and the run's start (perf_counter seconds)."""

    spec: KernelSpec
    params: KernelParams
    hw: HardwareProfile
    command: list[str] | None
    wall0: float

    def header(self) -> dict[str, Any]:
        return document_header(self.spec.name, self.hw, self.command)

    def host(self, functional_s: float | None, model_s: float) -> Host:
        return host_record(self.wall0, functional_s, model_s)

    def sim_fields(self, sim: SimResult, functional_s: float | None, model_s: float) -> dict[str, Any]:
        """The fields a one-run document (the scans') takes as they are: header, the simulated run's pipe
        utilisation and counters (sorted by name), the host record."""
        return self.header() | {"utilisation": sim.utilisation(),
                                "counters": {k: float(v) for k, v in sorted(sim.counters.items())},
                                "host": self.host(functional_s, model_s)}

    def run(self, result, sim: SimResult, ran: dict[str, Any] | None = None, **fields: Any) -> KernelRun:
        """The KernelRun of result document `result` and simulated run `sim` (fields: KernelRun's others); `ran`:
        the parameters the run settled (sizes and dtype from the data, the algorithm a default chose), which
        replace the given ones in KernelRun.params."""
        params = self.params.model_copy(update=ran) if ran else self.params
        return KernelRun(self.spec, params, self.hw, result, sim, **fields)


def consume_partitions(pieces, check, total: int, output: np.ndarray | None = None, *, release: bool = False,
                       progress=None, stage: str = "scanning and verifying"):
    """The functional and verify stage of a kernel whose functional step streams: take the (offset, input piece,
    output piece) partitions it yields, write each output piece into `output` when it is kept (with `release`,
    a memory-mapped file's written pages leave memory every 2**24 items), feed each pair to `check` (a
    scan_numerics.CheckThread: a piece's check overlaps the next piece's computation) and report
    progress(stage, done, total) every 2**22 items. An exception from the pieces stops the check and propagates.
    Returns the verdict (check.close())."""
    done = released = reported = 0
    if progress:
        progress(stage, 0, total)
    try:
        with np.errstate(invalid="ignore", over="ignore"):  # NaN / inf inputs: the verdict explains them
            for lo, xb, yb in pieces:
                if output is not None:
                    output[lo: lo + yb.shape[0]] = yb
                    if release and lo + yb.shape[0] - released >= 1 << 24:
                        release_pages(output, released, lo + yb.shape[0])  # written pages leave memory
                        released = lo + yb.shape[0]
                check.feed(xb, yb)
                done += yb.shape[0]
                if progress and (done - reported >= 1 << 22 or done == total):  # small pieces: report less often
                    progress(stage, done, total)
                    reported = done
    except BaseException:
        check.stop()
        raise
    return check.close()


def generate_input(n: int, dtype: str, seed: int, progress=None) -> np.ndarray:
    """Seeded test data: fp16 uniform in [0, 1) (prefix sums grow steadily, as for probabilities) or int8
    uniform in [-128, 127] (sums stay well inside int32 for any n that fits in memory). progress(stage, done,
    total), if given, is told "generating input" first."""
    if progress:
        progress("generating input", 0, n)
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, size=n, dtype=np.int8)
    out = np.empty(n, dtype=np.float16)
    step = 1 << 24
    for i in range(0, n, step):
        out[i: i + step] = rng.random(min(step, n - i), dtype=np.float32)
    return out


DTYPES = {np.dtype(np.float16): "fp16", np.dtype(np.int8): "int8"}  # input dtype -> CLI dtype name


def provenance(data: str, seed: int | None, input_file: Path | str | None, sha: str | None) -> dict[str, Any]:
    """A run document's data fields: where the input came from ("file", "generated" or "none"), the seed only
    when it made the data, the input file and its sha256."""
    return {"seed": seed if data == "generated" else None,
            "input_file": str(input_file) if input_file is not None else None, "input_sha256": sha, "data": data}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


class Background:
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


class FileHash(Background):
    """The sha256 of a file, computed on a background thread (hashlib releases the GIL, so it overlaps the
    timing model and the functional run); hexdigest() waits for it. Raises InputError naming --input when the
    file cannot be read."""

    def __init__(self, path: Path):
        self.path = path
        super().__init__(lambda: sha256(path))

    def hexdigest(self) -> str:
        try:
            return self.result()
        except OSError as exc:
            raise InputError(f"--input: cannot read {self.path} ({exc.strerror or exc})") from None


def open_npy(path: Path, option: str = "input", what: str | None = None, mmap: bool = False):
    """np.load of a user's .npy (or .npz) file without pickles; raises InputError naming --<option> when it is
    missing or unreadable (`what`: the kind of file the message asks for, store.io.unreadable_npy's)."""
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--{option}: file not found: {path}") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        why = unreadable_npy(path, exc) if what is None else unreadable_npy(path, exc, what)
        raise InputError(f"--{option}: {path} {why}") from None


def load_npy(path: Path, ndim: int, axes: str = "", background_hash: bool = False):
    """Memory-map an --input .npy array of `ndim` dimensions (`axes` names them in messages), float16 or int8.
    Returns (array, dtype name, sha256 of the file, or with background_hash a FileHash computing it); raises
    InputError naming --input."""
    path = Path(path)
    x = open_npy(path, mmap=True)
    if not isinstance(x, np.ndarray):  # a .npz archive, of any number of arrays
        names = ", ".join(repr(name) for name in x.files)
        x.close()
        raise InputError(f"--input: {path} is a .npz archive (arrays: {names or 'none'}); give one {ndim}-D .npy "
                         f"array{axes}")
    if x.ndim != ndim:
        raise InputError(f"--input: array must be {ndim}-D{axes}, got shape {tuple(x.shape)}")
    if x.dtype not in DTYPES:
        raise InputError(f"--input: array dtype must be float16 or int8, got {x.dtype}")
    return x, DTYPES[x.dtype], (FileHash(path) if background_hash else sha256(path))


def host_record(wall0: float, functional_s: float | None, model_s: float) -> Host:
    """The host record of a run started at perf_counter() time wall0."""
    return Host(wall_time_s=time.perf_counter() - wall0, functional_time_s=functional_s, model_time_s=model_s,
                machine=platform.machine() or "unknown", python=sys.version.split()[0], numpy=np.__version__)


def verification_record(v) -> Verification:
    """The result document's record of a performed check (v: a verifier's result with passed and errors)."""
    return Verification(performed=True, passed=v.passed, max_abs_error=v.max_abs_error,
                        max_rel_error=v.max_rel_error, tolerance=v.tolerance)


def bandwidth_metrics(n: int, moved: float, sim: SimResult, hw: HardwareProfile) -> dict[str, float]:
    """time_s, bandwidth_gbps (moved bytes / simulated time, 1 GB = 1e9 B), fraction_of_peak, elements_per_s."""
    bandwidth = moved / sim.time_s / 1e9 if sim.time_s > 0 else 0.0
    return {
        "time_s": sim.time_s,
        "bandwidth_gbps": bandwidth,
        "fraction_of_peak": bandwidth / hw.hbm_bandwidth_gbps,
        "elements_per_s": n / sim.time_s if sim.time_s > 0 else 0.0,
    }


def check_int(name: str, value, minimum: int, optional: bool = False) -> None:
    """Raise ParamError naming the argument unless value is an int >= minimum (None allowed if optional)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParamError(name, f"must be an integer, got {value!r}")
    if value < minimum:
        raise ParamError(name, f"must be at least {minimum}, got {value}")
