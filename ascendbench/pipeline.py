"""The run pipeline: one entry point that runs any kernel of the registry on real data through the simulated
machine and builds its result document.

    >>> import ascendbench
    >>> run = ascendbench.run("sort", n=10**6, dtype="int32")
    >>> run.result.simulated.time_s, run.result.verification.passed

Steps, in this order for every kernel (kernels/contract.py says what each kernel supplies):
parameters (the kernel's model: ranges, choices, defaults) -> input arrays (the user's, completed, or generated
from the seed) -> check (hardware limits) -> functional run -> timing model of the chosen variant and of the
paper's baseline -> verification against NumPy -> the result document. Writing the files (result JSON, output
arrays, trace) is the caller's: the CLI writes them all or nothing (commands/generic.py).

Kernels whose functional run streams through partitions (the 1-D scans, the row scans, HGEMM: `streaming`)
take the same entry and the same argument checks; their functional step (`KernelSpec.run_streaming`, in their
run modules kernels/scan_run.py, row_scan_run.py, hgemm_run.py) streams the input partition by partition
through the functional run and the verifier and builds their document. Every kernel's run is a KernelRun.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ascendbench.hardware import HardwareProfile, load_profile
from ascendbench.kernels.base import NO_DATA_WITH_MODEL_ONLY, BufferCapacityError, InputError, ParamError
from ascendbench.kernels.contract import Check, KernelParams, KernelRun, KernelSpec, Outcome
from ascendbench.kernels.partition import offset_type
from ascendbench.kernels.registry import get_spec
from ascendbench.kernels.run_steps import RunContext
from ascendbench.sim.result import SimResult
from ascendbench.store.operators import (
    OperatorProblem,
    OperatorRunResult,
    OperatorSimulated,
    OperatorVerification,
)

__all__ = ["KernelRun", "available_memory", "check_host_memory", "read_input", "run"]


def available_memory() -> int | None:
    """Bytes of host memory available now (None when unknown)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_host_memory(needed: float, option: str, what: str, advice: str) -> None:
    """Refuse a functional run that needs `needed` bytes of host memory: more than 90% of what is available now,
    or more than 2**62 bytes. Raises ParamError naming `option`: "<what> needs about N GiB, more than the M GiB
    available; <advice>" (the pipeline's operators; the row scans' commands, commands/run_batched.py)."""
    available = available_memory()
    if needed > 2**62 or (available is not None and needed > 0.9 * available):
        have = f", more than the {available / 2**30:,.1f} GiB available" if available is not None else ""
        raise ParamError(option, f"{what} needs about {needed / 2**30:,.1f} GiB{have}; {advice}")


def _check_memory(spec: KernelSpec, params: KernelParams, generated: bool) -> None:
    needed, option = spec.functional_bytes(params, generated)
    what = f"a functional run of {spec.describe_size(params)}" if option == spec.size_field else "the functional run"
    check_host_memory(needed, option, what, f"give a smaller --{option} or use --model-only")


def run(name: str, *, arrays: Mapping[str, np.ndarray] | None = None, seed: int = 0,
        hardware: str | HardwareProfile | None = None, verify: bool = True, model_only: bool = False,
        input_file: Path | None = None, input_sha256: str | None = None, command: list[str] | None = None,
        **values: Any) -> KernelRun:
    """Run registry kernel `name` (kernels/registry.py; e.g. "sort", "topk", "scan", "hgemm") through the pipeline.

    Args:
        name: the kernel's registry name.
        arrays: the user's input arrays by name (see the kernel's `inputs`); missing ones are generated where
            the kernel allows it (said in KernelRun.notes). None: every input generated from `seed`.
        seed: seed of generated inputs and of sampling kernels' draws (>= 0).
        hardware: profile name or TOML path, or a HardwareProfile (default: the kernel's paper's chip, as the
            CLI's: ascend-910b4, atlas-300t-a2 for hgemm).
        verify: compare the outputs with the NumPy reference.
        model_only: timings and counters only, no data (arrays must be None).
        input_file: a .npy (the kernel's first input) or .npz (its arrays by name) read as the arrays when no
            arrays are given (ParamError naming input_file when missing or unreadable). input_sha256: with arrays
            and input_file, the caller read the file into the arrays (the CLI's --input) and gives its sha256;
            arrays and input_file without it are refused. Both are recorded in the document.
        command: the command line recorded in the document (default: the Python API).
        values: the kernel's parameters (its Params model: sizes, dtypes, variant, ...) and, for a streaming
            kernel, its run options (`spec.run_options`): scan: warm_l2, progress, generator, out, keep_output,
            partition_limit, output_path (see kernels/scan_run.run_scan); batched-scan, segmented-scan:
            progress; hgemm: workload, a_file, b_file, c_file (.npy matrices), jobs, progress, params (an
            HgemmParams; see kernels/hgemm_run.run_hgemm). input_file: scan a 1-D .npy, batched-scan a 2-D one,
            segmented-scan a .npz of values and flags (or a .npy of values).

    Returns:
        KernelRun: `time_s` (simulated seconds), `verification`, `arrays` (the outputs, None with model_only),
        `result` (the document: store/operators.py OperatorRunResult; scan RunResult, batched-scan
        BatchedScanResult, segmented-scan SegmentedScanResult, hgemm HgemmRunResult), `trace` (the SimResults a
        Chrome trace draws). Bandwidth in GB/s = 1e9 B/s of `bytes_moved`.

    Raises:
        ParamError: a bad parameter, input array or seed (the message names the option); InputError: an
        unusable input file (streaming kernels); HardwareError.
    """
    wall0 = time.perf_counter()
    spec = get_spec(name)
    for option, flag in (("verify", verify), ("model-only", model_only)):
        if not isinstance(flag, bool):
            raise ParamError(option, f"must be True or False, got {flag!r}")
    if arrays is not None and not isinstance(arrays, Mapping):
        raise ParamError("input", f"arrays must map names to arrays, got {type(arrays).__name__}")
    if model_only and arrays is not None:
        raise ParamError("input", NO_DATA_WITH_MODEL_ONLY)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParamError("seed", f"must be a non-negative integer, got {seed!r}")
    hardware = spec.default_hardware if hardware is None else hardware
    values = _keyword_names(spec, values)
    if spec.streaming:
        return _run_streaming(spec, arrays=arrays, seed=seed, hardware=hardware, verify=verify,
                              model_only=model_only, input_file=input_file, command=command, values=values,
                              wall0=wall0)
    params = spec.params(values)
    read = input_file is not None and arrays is None
    if read:  # the API's input_file: read here, as the CLI's --input is
        if model_only:
            raise ParamError("input-file", NO_DATA_WITH_MODEL_ONLY)
        try:
            arrays, input_sha256 = read_input(Path(input_file), spec.inputs[0].name, "input-file")
        except InputError as exc:  # run's argument, as its other arguments' errors are: a ParamError
            raise ParamError.from_message(str(exc), "input-file") from None
    elif input_file is not None and input_sha256 is None:  # a file nobody read is no provenance
        raise ParamError("input", "give either arrays or input_file, not both")
    hw = hardware if isinstance(hardware, HardwareProfile) else load_profile(hardware)
    notes: list[str] = []
    if arrays is not None:
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        if not arrays:
            raise ParamError("input-file" if read else "input",
                             f"holds no arrays; expected {', '.join(s.name for s in spec.inputs)}")
        try:
            params = spec.bind(params, arrays)
        except ParamError as exc:
            if exc.param != "input" or not read:
                raise
            raise ParamError("input-file", exc.detail, suggestion=exc.suggestion) from None
    if getattr(params, spec.size_field) is None:
        raise ParamError(spec.size_field, "is required without --input")
    _checked(spec.check, params, hw)

    outcome: Outcome | None = None
    check: Check | None = None
    functional_s = None
    generated = arrays is None  # some input came from the seed
    if not model_only:
        spec.check_functional(params)
        t1 = time.perf_counter()
        _check_memory(spec, params, arrays is None)
        if arrays is None:
            arrays = spec.generate(params, seed)
        else:
            given = set(arrays)
            arrays, notes = spec.complete(arrays, params, seed)
            generated = bool(set(arrays) - given)
        outcome = spec.compute(arrays, params, seed)
        functional_s = time.perf_counter() - t1
        if verify:
            check = spec.verify(arrays, outcome, params)

    t0 = time.perf_counter()
    facts = outcome.facts if outcome is not None else None
    sim = _checked(spec.simulate, params, hw, facts)
    base_params = spec.baseline(params)
    base = None
    if base_params is not None:
        try:
            _checked(spec.check, base_params, hw)
            base = _checked(spec.simulate, base_params, hw, facts)
        except ParamError as exc:  # the baseline refuses this problem: no baseline time, no speed-up
            notes.append(f"no baseline time ({str(exc).split(': ', 1)[1]}); no speed-up")
    notes = [*notes, *spec.notes(params, hw)]
    model_s = time.perf_counter() - t0

    ctx = RunContext(spec, params, hw, command, wall0)
    doc = _document(ctx, sim, base, base_params, outcome, check, arrays, facts, notes,
                    seed=seed if generated or spec.draws else None,
                    data="none" if model_only else ("file" if input_file is not None else "generated"),
                    input_file=input_file, input_sha256=input_sha256, model_s=model_s, functional_s=functional_s)
    return ctx.run(doc, sim, baseline=base, arrays=outcome.arrays if outcome is not None else None, notes=notes)


def _keyword_names(spec: KernelSpec, values: dict[str, Any]) -> dict[str, Any]:
    """`values` with the CLI's further names of a field taken as the field (topp: n -> vocab); ParamError for a
    dashed name (out-dtype), which Python spells with underscores."""
    for key in values:
        if "-" in key:
            raise ParamError(key, f"keyword arguments are spelt with underscores: use {key.replace('-', '_')}, "
                                  f"not {key!r}")
    for field, aliases in spec.aliases.items():
        for alias in (a.removeprefix("--").replace("-", "_") for a in aliases if a.startswith("--")):
            if alias in values and alias not in spec.Params.model_fields:
                if field in values:
                    raise ParamError(alias, f"is another name of {field}; give one of them")
                values = {(field if k == alias else k): v for k, v in values.items()}
    return values


def read_input(path: Path, first: str, option: str = "input") -> tuple[dict[str, np.ndarray], str]:
    """The arrays of a user's input file and its sha256 (hex), both of the one read of its bytes: a .npy is the
    array named `first` (the kernel's first input), a .npz its arrays by name. Names, shapes and dtypes are the
    caller's to check (KernelSpec.bind; the CLI's --input adds its own checks, commands/run_operators.py).
    Raises InputError naming --<option> when the file is missing or unreadable (`run`'s input_file: a ParamError
    naming input_file)."""
    import hashlib
    import io
    import zipfile

    from ascendbench.store.io import unreadable_npy

    try:
        data = path.read_bytes()
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--{option}: file not found: {path}") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"--{option}: {path} {unreadable_npy(path, exc, '.npy or .npz file')}") from None
    if isinstance(loaded, np.ndarray):
        return {first: loaded}, hashlib.sha256(data).hexdigest()
    with loaded:
        try:
            arrays = {k: loaded[k] for k in loaded.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # a member (np.load reads them lazily)
            raise InputError(f"--{option}: cannot read {path}: {exc}") from None
    for name, member in arrays.items():  # np.load gives a member without the .npy magic as its raw bytes
        if not isinstance(member, np.ndarray):
            raise InputError(f"--{option}: {path} is not a readable .npz archive ({name!r} is not a .npy array)")
    return arrays, hashlib.sha256(data).hexdigest()


def _checked(step, *args):
    """step(*args), a tile that does not fit a buffer of the hardware profile raised as a ParamError naming
    --hardware (the kernels' tiles are fixed; only the profile can change)."""
    try:
        return step(*args)
    except BufferCapacityError as exc:
        raise ParamError("hardware", f"{exc} (a buffer of this hardware profile is too small for the kernel's "
                                     "tiles)") from None


def _run_streaming(spec: KernelSpec, *, arrays, seed, hardware, verify, model_only, input_file, command, values,
                   wall0) -> KernelRun:
    """A streaming kernel's run: its parameters, run options and data checked here, its functional step (which
    streams the input through the functional run and the verifier) in its run module."""
    options: dict[str, Any] = {k: values.pop(k) for k in list(values) if k in spec.run_options}
    params = spec.run_params(values, options)
    spec.refuse_data(arrays, input_file)
    if input_file is not None:
        if arrays is not None:
            raise ParamError("input", f"give either {', '.join(arrays)} or input_file, not both")
        if model_only:
            raise ParamError("input-file", NO_DATA_WITH_MODEL_ONLY)
        options["input_file"] = input_file
    options |= {"seed": seed, "model_only": model_only, "verify": verify}
    if arrays is not None:
        names = {s.name for s in spec.inputs}
        if set(arrays) - names:
            raise ParamError("input", f"{spec.name} takes the arrays {', '.join(sorted(names))}")
        options |= dict(arrays)  # the sizes and dtype left out come from the arrays
    _check_run_options(options)
    hw = hardware if isinstance(hardware, HardwareProfile) else load_profile(hardware)
    target = options.get("output_path")
    fresh = target is not None and not Path(target).exists()
    try:
        return spec.run_streaming(RunContext(spec, params, hw, command, wall0), **options)
    except BaseException:
        if fresh:  # a failed run leaves no half-written output behind (the CLI's rule, generic._drop)
            Path(target).unlink(missing_ok=True)
        raise


def _check_run_options(options: dict[str, Any]) -> None:
    """The types of a streaming kernel's run options, and an output_path the run can create (as the CLI checks
    its --output-file): ParamError naming the option."""
    progress, keep, out, target = (options.get(k) for k in ("progress", "keep_output", "out", "output_path"))
    if progress is not None and not callable(progress):
        raise ParamError("progress", f"must be a callable progress(stage, done, total) or None, got {progress!r}")
    if keep is not None and not isinstance(keep, bool):
        raise ParamError("keep-output", f"must be True, False or None, got {keep!r}")
    if out is not None and not isinstance(out, np.ndarray):
        raise ParamError("out", f"must be an (n,) array or memory map of the output dtype, got {type(out).__name__}")
    if target is None:
        return
    if not isinstance(target, (str, os.PathLike)):
        raise ParamError("output-path", f"must be a path, got {type(target).__name__}")
    path = Path(target)
    if not path.name.removesuffix(".partial").endswith(".npy"):  # .partial: the CLI's staged --output-file
        raise ParamError("output-path", f"must end in .npy, got {str(path)!r}")
    parent = path.parent
    if not parent.is_dir():
        raise ParamError("output-path", f"{str(parent)!r} is not a folder" if parent.exists()
                         else f"folder {str(parent)!r} does not exist")
    if path.exists() and not path.is_file():
        raise ParamError("output-path", f"{str(path)!r} exists and is not a regular file")


def _document(ctx: RunContext, sim: SimResult, base: SimResult | None, base_params: KernelParams | None,
              outcome: Outcome | None, check: Check | None, arrays: Mapping[str, np.ndarray] | None, facts,
              notes: list[str], *, seed: int | None, data: str, input_file: Path | None, input_sha256: str | None,
              model_s: float, functional_s: float | None) -> OperatorRunResult:
    """The operator result document of one run (store/operators.py)."""
    spec, params, hw = ctx.spec, ctx.params, ctx.hw
    moved = float(spec.bytes_moved(params, facts))
    n = spec.size(params)
    bw = moved / sim.time_s / 1e9 if sim.time_s > 0 and n else None
    dtypes = spec.dtypes(params, outcome, arrays)
    outputs = spec.model_outputs(params, hw) | (outcome.outputs if outcome is not None else {})
    verification = (OperatorVerification(performed=False) if check is None else
                    OperatorVerification(performed=True, passed=check.passed, reference=check.reference,
                                         detail=check.detail))
    return OperatorRunResult(
        **ctx.header(),
        problem=OperatorProblem(operator=spec.name, n=n, dtypes=dtypes, params=spec.document_params(params, sim),
                                data=data, seed=seed,
                                input_file=str(input_file) if input_file else None, input_sha256=input_sha256,
                                offset_type=offset_type(n), index_type=dtypes.get("indices")),
        simulated=OperatorSimulated(
            variant=getattr(params, "variant", spec.name), time_s=sim.time_s, bandwidth_gbps=bw,
            bandwidth_bytes=moved, phases_s=sim.phases_s,
            counters={k: float(v) for k, v in sorted(sim.counters.items())},
            utilisation=sim.utilisation(),
            baseline=None if base is None else {"variant": base_params.variant, "time_s": base.time_s,
                                                "speedup": base.time_s / sim.time_s if sim.time_s > 0 else None},
        ),
        outputs=outputs,
        verification=verification,
        host=ctx.host(functional_s, model_s),
        model={"extrapolated": sim.extrapolated, "note": "long loops are simulated for a few iterations per core "
                                                         "and extrapolated; identical cores simulated once"},
        notes=notes,
    )
