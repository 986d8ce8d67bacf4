"""`ascendbench run topk`: top-k by value bisection on SplitInd (the scan paper §5.4) on the simulated NPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from ascendbench.commands.common import (
    HardwareOption,
    JsonOption,
    NoSaveOption,
    TraceOption,
    count_option,
    fail,
)
from ascendbench.commands.operator_common import (
    NOption,
    OperatorRun,
    check_choice,
    finish,
    load_values,
    parse_count_option,
    parse_n,
    prepare,
)
from ascendbench.commands.run import app
from ascendbench.commands.run_sort import KEY_NAMES, keys_from, sort_reference
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.radix_sort import radix_sort
from ascendbench.kernels.topk import TOPK_VARIANTS, simulate_topk, topk_bisection
from ascendbench.store.operators import OperatorVerification


@app.command("topk")
def topk_command(
    k: Annotated[int, count_option("--k", help="How many elements: 0 ... n (e.g. 2048 or 2**11).")],
    n: NOption = None,
    largest: Annotated[bool, typer.Option("--largest/--smallest", help="The k largest (sorted descending, NaNs "
                                          "largest) or smallest (ascending).")] = True,
    dtype: Annotated[str | None, typer.Option("--dtype", help=f"Key dtype: {', '.join(KEY_NAMES)} (default "
                                              "fp16, or the --input array's).")] = None,
    variant: Annotated[str, typer.Option("--variant", help="bisection (SplitInd rounds, the paper's) or vector "
                                         "(vector-only sort-based top-k, the baseline).")] = "bisection",
    seed: Annotated[int, count_option("--seed", help="Seed of the generated values.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Values as a 1-D .npy, or a .npz with an "
                                                    "array 'values'.")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save 'values' and 'indices' as "
                                                     ".npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with the first k of NumPy's "
                                         "stable sort.")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Start with the values in L2.")] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/runs/topk/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """The k largest (or smallest) values and their indices, sorted, ties in input order, like
    torch.topk(sorted=True) with stable ties (the scan paper §5.4)."""
    wall0 = time.perf_counter()
    count = parse_n(n)
    kk = parse_count_option(k, "k")
    check_choice(variant, TOPK_VARIANTS, "variant")
    check_choice(dtype, KEY_NAMES, "dtype")
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npz", trace=trace, out=out,
                 no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha, count = load_values(input_file, ("values",), count)
    if kk > count:
        fail(f"--k: must be at most n = {count}, got {kk}")
    keys, kname = keys_from(arrays, count, dtype, np.random.default_rng(seed))
    t1 = time.perf_counter()
    picked, sizes = topk_bisection(keys, kk, largest)
    _, order = radix_sort(keys[picked], descending=largest)
    indices = picked[order]
    values = keys[indices]
    functional_s = time.perf_counter() - t1
    t0 = time.perf_counter()
    other = "vector" if variant == "bisection" else "bisection"
    sims = {v: simulate_topk(count, kk, kname, hw, variant=v, largest=largest, active_sizes=sizes,
                             warm_l2=warm_l2) for v in (variant, other)}
    model_s = time.perf_counter() - t0
    verification = OperatorVerification(performed=False)
    if verify:
        ref = sort_reference(keys, largest)[:kk] if largest else np.argsort(keys, kind="stable")[:kk]
        ok = np.array_equal(indices, ref) and np.array_equal(values.view(np.uint8), keys[ref].view(np.uint8))
        verification = OperatorVerification(
            performed=True, passed=ok, reference="the first k of NumPy's stable " + ("descending" if largest else
                                                                                      "ascending") + " order",
            detail=None if ok else "selection differs")
    kb = keys.dtype.itemsize
    run = OperatorRun(
        operator="topk", n=count, variant=variant, sim=sims[variant], baseline_variant=other, baseline=sims[other],
        bandwidth_bytes=count * kb + kk * (kb + indices.dtype.itemsize),
        dtypes={"values": kname, "indices": str(indices.dtype)},
        params={"k": kk, "largest": largest, "warm_l2": warm_l2},
        data="file" if arrays is not None else "generated", seed=seed if arrays is None else None,
        input_file=input_file, input_sha256=sha, arrays={"values": values, "indices": indices},
        outputs={"rounds": len(sizes)}, verification=verification, model_time_s=model_s,
        functional_time_s=functional_s)
    finish(run, hw, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
