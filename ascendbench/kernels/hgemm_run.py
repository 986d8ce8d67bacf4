"""HGEMM's run (registry entry hgemm, kernels/streaming.py): one shape, the shapes of .npy input files or a
named workload; each shape timed, and multiplied and verified against NumPy up to a size; the shapes of a
workload spread over worker processes. `ascendbench.run("hgemm", ...)` comes here.

    >>> import ascendbench
    >>> run = ascendbench.run("hgemm", m=2048, n=128, k=2048)
    >>> run.time_s, run.result.shapes[0].tflops, run.verification.passed
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ascendbench.kernels.base import InputError, ParamError
from ascendbench.kernels.contract import KernelRun
from ascendbench.kernels.run_steps import RunContext, open_npy, sha256, verification_record
from ascendbench.processes import imap_in_workers, jobs_error, usable_cores
from ascendbench.store.schema import Verification

if TYPE_CHECKING:
    from ascendbench.kernels.hgemm import HgemmParams

__all__ = ["VERIFY_LIMIT_MACS", "WORKLOAD_VERIFY_LIMIT_MACS", "run_hgemm"]

VERIFY_LIMIT_MACS = 2**33  # functional check by default up to M*N*K*batch multiply-adds (about 2048^3)
WORKLOAD_VERIFY_LIMIT_MACS = 2**27  # per shape in workload runs (about 512^3), so that thousands of shapes stay fast


def _load_matrix(path: Path, name: str) -> tuple[np.ndarray, str]:
    path = Path(path)
    arr = open_npy(path, name)
    if not isinstance(arr, np.ndarray) or arr.ndim not in (2, 3):
        raise InputError(f"--{name}: must be a 2-D (or batch x rows x columns 3-D) array, got shape "
                         f"{getattr(arr, 'shape', '?')}")
    if arr.dtype != np.float16:
        raise InputError(f"--{name}: array dtype must be float16, got {arr.dtype}")
    return (arr[None] if arr.ndim == 2 else arr), sha256(path)


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
    ctx: RunContext,
    m: int | None = None,
    n: int | None = None,
    k: int | None = None,
    *,
    batch: int = 1,
    workload: str | None = None,
    params: HgemmParams | None = None,
    seed: int = 0,
    a_file: Path | None = None,
    b_file: Path | None = None,
    c_file: Path | None = None,
    verify: bool = True,
    warm_l2: bool = False,
    every_core: bool = False,
    jobs: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> KernelRun:
    """Run HGEMM (C = alpha * A @ B + beta * C, fp16) on one shape or a named workload.

    Args:
        ctx: the run's context from the pipeline (registry entry, parameters, hardware, command line).
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
        KernelRun (arrays: {"c": C} for a single shape with a functional run; trace: the first shape's
        simulated run); times in seconds, TFLOPS = 2 M N K batch / time / 1e12, fraction_of_peak of the
        profile's fp16 cube peak.

    Raises:
        ParamError, InputError, HardwareError, BufferCapacityError (messages name the option). A computed C
        whose fp16 arithmetic overflows (kernels.hgemm.fp16_overflow) raises ParamError naming --alpha (or
        --k), or InputError naming --a/--b, before anything is returned or written.
    """
    from ascendbench.kernels.hgemm import GemmShape, HgemmParams
    from ascendbench.store.schema import GemmProblem, HgemmRunResult
    from ascendbench.workloads import load_workload

    hw = ctx.hw
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
        with contextlib.closing(imap_in_workers(_hgemm_chunk_at, chunks, jobs)) as finished:
            for start, items in finished:
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
        **ctx.header(),
        params=params.to_dict() | {"warm_l2": warm_l2, "every_core": every_core},
        problem=problem,
        workload=workload,
        shapes=records,
        summary=summary,
        metrics=metrics,
        utilisation=results[0][2] if total == 1 else {},
        counters=counters,
        host=ctx.host(verify_s or None, model_s),
        model={"extrapolated": any(r[7] for r in results), "worker_processes": jobs,
               "note": "task and K-block loops extrapolated from truncated runs; "
                       + ("every core simulated" if every_core else "identical cores simulated once")},
    )
    checked = [r.verification for r in records if r.verification.performed]
    verdict = (first.verification if total == 1 else
               Verification(performed=bool(checked), passed=all(v.passed for v in checked) if checked else None))
    ran = {f: getattr(params, f) for f in ("variant", "m0", "n0", "k0", "split_k", "shuffle_k", "padding",
                                           "double_buffer", "alpha", "beta")}
    if workload is None:
        ran |= {"m": first.m, "n": first.n, "k": first.k, "batch": first.batch}
    return ctx.run(result, sims[0], ran, arrays=None if output is None else {"c": output}, time_s=metrics["time_s"],
                   verification=verdict, trace=sims)


def _hgemm_shape(i, shape, params, hw, warm_l2, every_core, verify, limit, seed, mats, keep_output, keep_sim=False):
    """One shape of run_hgemm: (record, counters, utilisation, sim or None, output or None, model seconds,
    verify seconds, extrapolated). Module-level so that worker processes can run it."""
    from ascendbench.kernels.hgemm import compute_hgemm, fp16_overflow, simulate_hgemm, verify_hgemm
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
        if found := fp16_overflow(a, b, c if params.beta != 0 else None, out, params):
            raise _overflow_error(found, bool(mats), params, None if keep_output else shape)
        v = verify_hgemm(a, b, c if params.beta != 0 else None, out, params)
        verification = verification_record(v)
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


def _overflow_error(found, files: bool, params, shape=None) -> ValueError:
    """The refusal of a shape whose fp16 C would hold inf (kernels.hgemm.fp16_overflow's finding): names --a/--b
    for the files' A @ B, else --alpha (--beta too when C is read); `shape`: the workload's shape, named."""
    stage, (bi, i, j), value = found
    at = f"C[{i}, {j}]" + (f" of batch {bi}" if bi else "")
    if shape is not None:
        at += f" of the workload's shape M x N x K = {shape.m} x {shape.n} x {shape.k}"
    if stage == "ab":
        why = (f"A @ B reaches {value:,.6g} at {at}, past fp16's 65504 (the cube writes A @ B to fp16 before "
               "alpha scales it): C would hold inf")
        return InputError(f"--a/--b: {why}; scale the inputs down") if files else ParamError(
            "k", f"{why}; give a smaller --k")
    why = (f"alpha * A @ B + beta * C is {value:,.6g} at {at}; a step of the kernel's fp16 arithmetic (alpha * "
           "A @ B, beta * C, their sum) passes 65504 there: C would hold inf")
    names = "|alpha|" + (" or |beta|" if params.beta != 0 else "")
    return ParamError("alpha", f"{why}; give a smaller {names}" + (" or smaller --a/--b/--c values" if files else ""))


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
        raise InputError(f"--a/--b/--c: batch sizes differ: {sorted(batches)}; every matrix takes the same leading "
                         "batch (a 2-D one is a batch of 1: B is not shared across A's batch)")
    return dims.get("m"), dims.get("n"), dims.get("k"), batches.pop()
