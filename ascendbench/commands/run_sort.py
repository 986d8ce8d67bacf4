"""`ascendbench run sort`: LSB radix sort by SplitInd (the scan paper §5.3) on the simulated NPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from ascendbench.commands.common import HardwareOption, JsonOption, NoSaveOption, TraceOption, count_option
from ascendbench.commands.operator_common import (
    NOption,
    OperatorRun,
    check_choice,
    finish,
    load_values,
    parse_n,
    prepare,
    timed,
)
from ascendbench.commands.run import app
from ascendbench.commands.run_split import values_from
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.radix_sort import SORT_VARIANTS, radix_sort, simulate_radix_sort
from ascendbench.store.operators import OperatorVerification

KEY_NAMES = ("fp16", "uint8", "uint16", "uint32", "int8", "int16", "int32")


def sort_reference(keys: np.ndarray, descending: bool) -> np.ndarray:
    """NumPy reference order: np.argsort(kind="stable"); descending: NaNs first (input order), then the stable
    order of the negated keys (ties in input order)."""
    if not descending:
        return np.argsort(keys, kind="stable")
    wide = keys.astype(np.float64) if keys.dtype.kind == "f" else keys.astype(np.int64)
    nan = np.isnan(wide) if keys.dtype.kind == "f" else np.zeros(keys.shape, dtype=bool)
    rest = np.flatnonzero(~nan)
    return np.concatenate([np.flatnonzero(nan), rest[np.argsort(-wide[rest], kind="stable")]])


def keys_from(arrays, n: int, dtype: str | None, rng) -> tuple[np.ndarray, str]:
    return values_from(arrays, n, dtype, rng, KEY_NAMES)


@app.command("sort")
def sort(
    n: NOption = None,
    descending: Annotated[bool, typer.Option("--descending/--ascending", help="Stable descending order (ties "
                                             "in input order, NaNs first) or ascending (NaNs last).")] = False,
    dtype: Annotated[str | None, typer.Option("--dtype", help=f"Key dtype: {', '.join(KEY_NAMES)} (default fp16, "
                                              "or the --input array's).")] = None,
    variant: Annotated[str, typer.Option("--variant", help="mcscan (SplitInd with the int8 MCScan, the paper's) "
                                         "or vector (vector-only scan, the baseline).")] = "mcscan",
    seed: Annotated[int, count_option("--seed", help="Seed of the generated keys.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Keys as a 1-D .npy, or a .npz with an array "
                                                    "'values'.")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save 'values' and 'indices' as "
                                                     ".npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with NumPy's stable sort.")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Start with the keys in L2.")] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/runs/sort/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Sort keys with their indices like torch.sort(stable=True): LSB radix sort, one SplitInd per key bit
    (the scan paper §5.3)."""
    wall0 = time.perf_counter()
    count = parse_n(n)
    check_choice(variant, SORT_VARIANTS, "variant")
    check_choice(dtype, KEY_NAMES, "dtype")
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npz", trace=trace, out=out,
                 no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha, count = load_values(input_file, ("values",), count)
    keys, kname = keys_from(arrays, count, dtype, np.random.default_rng(seed))
    (values, indices), functional_s = timed(radix_sort, keys, descending)
    t0 = time.perf_counter()
    sim = simulate_radix_sort(count, kname, hw, variant=variant, descending=descending, warm_l2=warm_l2)
    other = "vector" if variant == "mcscan" else "mcscan"
    base = simulate_radix_sort(count, kname, hw, variant=other, descending=descending, warm_l2=warm_l2)
    model_s = time.perf_counter() - t0
    verification = OperatorVerification(performed=False)
    if verify:
        order = sort_reference(keys, descending)
        ok = np.array_equal(indices, order) and np.array_equal(values.view(np.uint8), keys[order].view(np.uint8))
        verification = OperatorVerification(
            performed=True, passed=ok, reference="np.argsort(keys, kind='stable')" if not descending else
            "NaNs first, then np.argsort(-keys, kind='stable')", detail=None if ok else "order differs")
    kb = keys.dtype.itemsize
    run = OperatorRun(
        operator="sort", n=count, variant=variant, sim=sim, baseline_variant=other, baseline=base,
        bandwidth_bytes=count * kb + count * (kb + indices.dtype.itemsize),
        dtypes={"values": kname, "indices": str(indices.dtype)},
        params={"descending": descending, "passes": int(sim.counters.get("scans", 0)), "warm_l2": warm_l2},
        data="file" if arrays is not None else "generated", seed=seed if arrays is None else None,
        input_file=input_file, input_sha256=sha, arrays={"values": values, "indices": indices},
        verification=verification, model_time_s=model_s, functional_time_s=functional_s)
    finish(run, hw, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
