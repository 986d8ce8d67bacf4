"""Shared pieces of the operator subcommands (`run split`, `run compress`, `run sort`, `run topk`): the common
options, named-array inputs, generated data, the result document, output files and the printed report.

Conventions follow `run scan` (commands/run.py): one-line errors with exit status 2, outputs written all or
nothing, --json prints only the document."""

from __future__ import annotations

import hashlib
import io
import platform
import sys
import time
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from ascendbench import __version__
from ascendbench.commands.common import (
    Outputs,
    check_target,
    command_line,
    count_option,
    default_result_path,
    dump_json,
    fail,
    human_bytes,
    out_console,
    parse_count,
    print_utilisation,
)
from ascendbench.hardware import HardwareError, HardwareProfile, load_profile
from ascendbench.kernels.partition import offset_type
from ascendbench.sim.result import SimResult
from ascendbench.store.io import unreadable_npy
from ascendbench.store.operators import (
    OperatorProblem,
    OperatorRunResult,
    OperatorSimulated,
    OperatorVerification,
)
from ascendbench.store.schema import Host

__all__ = [
    "DTYPE_NAMES",
    "NOption",
    "OperatorRun",
    "check_choice",
    "finish",
    "generate_values",
    "load_arrays",
    "load_values",
    "output_suffix",
    "parse_count_option",
    "parse_n",
    "prepare",
    "read_input",
]

# CLI dtype name -> NumPy dtype
DTYPE_NAMES = {
    "fp16": np.float16, "fp32": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
    "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
}

NOption = Annotated[int | None, count_option("--n", help="Elements: 1000000, 1e6, 1_000_000 or 2**20. Optional "
                                                         "with --input.")]


def dtype_name(dtype: np.dtype) -> str:
    for name, t in DTYPE_NAMES.items():
        if np.dtype(t) == dtype:
            return name
    return str(dtype)


def parse_count_option(text: str | int | None, option: str) -> int | None:
    """A count's value (1e6, 2**20, ...; None stays None); a bad one fails naming --option (exit 2). Options
    declared with count_option arrive parsed (ints pass the same range check)."""
    if text is None:
        return None
    try:
        return parse_count(text, option)
    except ValueError as exc:
        fail(str(exc))


def parse_n(text: str | None) -> int | None:
    return parse_count_option(text, "n")


def check_choice(value, choices, option: str) -> None:
    """Fail (exit 2) naming --option unless value is one of choices; None (an option left out) passes."""
    if value is not None and value not in choices:
        fail(f"--{option}: must be one of {', '.join(map(str, choices))}, got {value!r}")


def output_suffix(output_file: Path | None, model_only: bool) -> str:
    """The suffix of an --output-file that may be .npy or .npz (".npy" without one); fails (exit 2) on another
    suffix or with --model-only, which has no output."""
    if output_file is None:
        return ".npy"
    if output_file.suffix not in (".npy", ".npz"):
        fail(f"--output-file: must end in .npy or .npz, got {str(output_file)!r}")
    if model_only:
        fail("--output-file: there is no output with --model-only; drop one of them")
    return output_file.suffix


def read_input(path: Path) -> tuple[Any, bytes]:
    """np.load of an --input .npy or .npz (an array or an NpzFile) and the file's bytes; fails (exit 2) when the
    file is missing or unreadable."""
    if not path.exists():
        fail(f"--input: file not found: {path}")
    try:
        data = path.read_bytes()
        return np.load(io.BytesIO(data), allow_pickle=False), data
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        fail(f"--input: {path} {unreadable_npy(path, exc, '.npy or .npz file')}")


def load_arrays(path: Path, allowed: tuple[str, ...], single: str) -> tuple[dict[str, np.ndarray], str]:
    """Arrays of an --input file: a .npy is the array named `single`; a .npz holds named arrays among `allowed`.
    Every array must be 1-D and all of one length. Returns (arrays, sha256 of the file); bad files fail (exit 2)."""
    loaded, data = read_input(path)
    if isinstance(loaded, np.ndarray):
        arrays = {single: loaded}
    else:
        with loaded:
            unknown = [k for k in loaded.files if k not in allowed]
            if unknown:
                fail(f"--input: unexpected array {unknown[0]!r} in {path}; allowed names: {', '.join(allowed)}")
            try:
                arrays = {k: loaded[k] for k in loaded.files}
            except (OSError, ValueError) as exc:
                fail(f"--input: cannot read {path}: {exc}")
        if not arrays:
            fail(f"--input: {path} holds no arrays; expected {', '.join(allowed)}")
    lengths = set()
    for name, a in arrays.items():
        if a.ndim != 1:
            fail(f"--input: array {name!r} must be 1-D, got shape {tuple(a.shape)}")
        lengths.add(a.shape[0])
    if len(lengths) > 1:
        fail(f"--input: arrays must have one length, got {', '.join(f'{k}: {v.shape[0]}' for k, v in arrays.items())}")
    return arrays, hashlib.sha256(data).hexdigest()


_BYTES_PER_ELEMENT = 32  # values, flags, indices, outputs and NumPy temporaries of the functional run


def generate_values(n: int, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Seeded test values: floats standard normal, integers uniform over the whole range of the dtype.
    Fails (exit 2, naming --n) when the functional run would not fit the memory available."""
    from ascendbench.commands.run import _available_memory

    needed, available = n * _BYTES_PER_ELEMENT, _available_memory()
    if available is not None and needed > 0.9 * available:
        fail(f"--n: a functional run of {n:,} elements needs about {needed / 2**30:,.1f} GiB, more than the "
             f"{available / 2**30:,.1f} GiB available; give a smaller --n")
    t = np.dtype(DTYPE_NAMES[dtype])
    if t.kind == "f":
        return rng.standard_normal(n, dtype=np.float32).astype(t)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, size=n, dtype=t, endpoint=True)


@dataclass
class OperatorRun:
    """What one operator command computed: the simulated run (and its baseline), the functional outputs."""

    operator: str
    n: int
    variant: str
    sim: SimResult
    baseline_variant: str
    baseline: SimResult | None  # None: the baseline cannot run this problem (e.g. run sample beyond 2**24)
    bandwidth_bytes: float
    dtypes: dict[str, str]
    params: dict[str, Any]
    data: str
    seed: int | None
    input_file: Path | None
    input_sha256: str | None
    arrays: dict[str, np.ndarray] | None = None  # outputs to save
    outputs: dict[str, Any] = field(default_factory=dict)
    verification: OperatorVerification = field(default_factory=lambda: OperatorVerification(performed=False))
    model_time_s: float = 0.0
    functional_time_s: float | None = None
    notes: list[str] = field(default_factory=list)


def prepare(*, input_file: Path | None, output_file: Path | None, output_suffix: str, trace: Path | None,
            out: Path | None, no_save: bool, seed: int, hardware: str) -> HardwareProfile:
    """Checks shared by every operator command before any work; returns the hardware profile."""
    if seed < 0:
        fail(f"--seed: must be a non-negative integer, got {seed}")
    if input_file is not None and not input_file.exists():
        fail(f"--input: file not found: {input_file}")
    if out is not None and no_save:
        fail("--out: cannot be combined with --no-save")
    taken = {input_file.resolve(): "the --input file"} if input_file is not None else {}
    check_target(output_file, "output-file", output_suffix, taken)
    check_target(trace, "trace", ".json", taken)
    check_target(out, "out", ".json", taken)
    try:
        return load_profile(hardware)
    except HardwareError as exc:
        fail(str(exc))


def _result(run: OperatorRun, hw: HardwareProfile, wall0: float) -> OperatorRunResult:
    sim, base = run.sim, run.baseline
    bw = run.bandwidth_bytes / sim.time_s / 1e9 if sim.time_s > 0 and run.n else None
    return OperatorRunResult(
        tool_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=command_line(),
        hardware=hw.to_dict(),
        problem=OperatorProblem(operator=run.operator, n=run.n, dtypes=run.dtypes, params=run.params, data=run.data,
                                seed=run.seed, input_file=str(run.input_file) if run.input_file else None,
                                input_sha256=run.input_sha256, offset_type=offset_type(run.n),
                                index_type=run.dtypes.get("indices")),
        simulated=OperatorSimulated(
            variant=run.variant, time_s=sim.time_s, bandwidth_gbps=bw, bandwidth_bytes=float(run.bandwidth_bytes),
            phases_s=sim.phases_s, counters={k: float(v) for k, v in sorted(sim.counters.items())},
            utilisation=sim.utilisation(),
            baseline=None if base is None else {"variant": run.baseline_variant, "time_s": base.time_s,
                                                "speedup": base.time_s / sim.time_s if sim.time_s > 0 else None},
        ),
        outputs=run.outputs,
        verification=run.verification,
        host=Host(wall_time_s=time.perf_counter() - wall0, functional_time_s=run.functional_time_s,
                  model_time_s=run.model_time_s, machine=platform.machine() or "unknown",
                  python=sys.version.split()[0], numpy=np.__version__),
        model={"extrapolated": sim.extrapolated, "note": "long loops are simulated for a few iterations per core "
                                                         "and extrapolated; identical cores simulated once"},
    )


def _save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    from ascendbench.store.io import atomic_save_npy, atomic_write_bytes

    if path.suffix == ".npy":
        atomic_save_npy(path, next(iter(arrays.values())))
    else:
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        atomic_write_bytes(path, buf.getvalue())


def finish(run: OperatorRun, hw: HardwareProfile, wall0: float, *, output_file: Path | None, trace: Path | None,
           out: Path | None, no_save: bool, json_out: bool) -> None:
    """Write the outputs (all or nothing), print the report or the JSON; exit 1 if verification failed."""
    from ascendbench.sim.trace import write_chrome_trace

    result = _result(run, hw, wall0)
    doc = result.model_dump(mode="json")
    saved_to = None if no_save else (out or default_result_path("runs", run.operator))
    with Outputs() as outputs:
        if output_file is not None and run.arrays is not None:
            outputs.write("output-file", output_file, lambda path: _save_arrays(path, run.arrays))
        if trace is not None:
            outputs.write("trace", trace, lambda path: write_chrome_trace(run.sim, path, name=run.operator))
        if saved_to is not None:
            outputs.write_json("out", saved_to, doc)
    if json_out:
        out_console.file.write(dump_json(doc) + "\n")
    else:
        _print(run, result, saved_to, output_file, trace)
    if run.verification.performed and not run.verification.passed:
        raise typer.Exit(1)


def _fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} µs"


def _print(run: OperatorRun, r: OperatorRunResult, saved_to, output_file, trace) -> None:
    c = out_console
    s = r.simulated
    params = ", ".join(f"{k} {v}" for k, v in run.params.items())
    c.rule(f"[bold]{run.operator}  n={run.n:,}  {', '.join(f'{k} {v}' for k, v in run.dtypes.items())}  "
           f"{run.variant}  on {hw_name(r)}")
    t = Table(show_header=False, box=None, padding=(0, 2))
    if params:
        t.add_row("parameters", params)
    t.add_row("simulated time", _fmt_s(s.time_s))
    if s.bandwidth_gbps is not None:
        t.add_row("bandwidth", f"{s.bandwidth_gbps:.1f} GB/s  ({human_bytes(s.bandwidth_bytes)} read and written "
                  "once / time; 1 GB = 1e9 B)")
    b = s.baseline
    if b is not None:
        speed = f"{b['speedup']:.2f}x" if b["speedup"] is not None else "-"
        t.add_row("other variant", f"{b['variant']}: {_fmt_s(b['time_s'])}  (speed-up of {run.variant} over it: "
                  f"{speed})")
    for name, secs in s.phases_s.items():
        t.add_row(f"  {name}", _fmt_s(secs))
    k = s.counters
    t.add_row("scans", f"{int(k.get('scans', 0))}  ({int(k.get('matmuls', 0)):,} matmuls)")
    t.add_row("GM traffic", f"read {human_bytes(k.get('bytes_gm_read', 0))} (HBM {human_bytes(k.get('bytes_hbm_read', 0))}), "
              f"write {human_bytes(k.get('bytes_gm_write', 0))}")
    t.add_row("syncs", f"{int(k.get('sync_all', 0))} SyncAll")
    for name, value in run.outputs.items():
        t.add_row(name, f"{value:,}" if isinstance(value, int) else str(value))
    v = r.verification
    if not v.performed:
        t.add_row("verification", "[yellow]not run (--no-verify)[/]")
    elif v.passed:
        t.add_row("verification", f"[green]passed[/]  (equal to {v.reference})")
    else:
        t.add_row("verification", f"[bold red]FAILED[/]  {v.detail}")
    t.add_row("host wall time", f"{r.host.wall_time_s:.2f} s  (timing model {r.host.model_time_s * 1e3:.0f} ms)")
    c.print(t)
    print_utilisation(s.utilisation)
    for note in run.notes:
        c.print(f"[dim]{note}[/]")
    for label, path in (("result", saved_to), ("output", output_file), ("trace", trace)):
        if path is not None:
            c.print(f"{label} written to {path}")


def hw_name(r: OperatorRunResult) -> str:
    return r.hardware["name"]


def check_n(n: int | None, arrays: dict[str, np.ndarray] | None) -> int:
    """The problem size: --n, or the input's length (they must agree when both are given)."""
    if arrays is not None:
        length = next(iter(arrays.values())).shape[0]
        if n is not None and n != length:
            fail(f"--n: {n} disagrees with the input's length {length}; drop --n or make them equal")
        return int(length)
    if n is None:
        fail("--n: is required without --input")
    return n


def load_values(input_file: Path | None, allowed: tuple[str, ...], n: int | None):
    """The --input arrays of an operator on 'values' (a .npy is 'values'; a .npz holds `allowed`, 'values' among
    them) and the problem size (see check_n). Returns (arrays or None, sha256 or None, n)."""
    arrays, sha = load_arrays(input_file, allowed, "values") if input_file else (None, None)
    if arrays is not None and "values" not in arrays:
        fail("--input: the .npz must hold an array named 'values'")
    return arrays, sha, check_n(n, arrays)


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0
