"""`ascendbench run split`: SplitInd (the scan paper §5.1) on the simulated NPU."""

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
    DTYPE_NAMES,
    NOption,
    OperatorRun,
    check_choice,
    dtype_name,
    finish,
    generate_values,
    load_values,
    parse_n,
    prepare,
    timed,
)
from ascendbench.commands.run import app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.split import FLAG_DTYPES, SPLIT_VARIANTS, simulate_split, split_ind
from ascendbench.store.operators import OperatorVerification

_DTYPES = ", ".join(DTYPE_NAMES)


def flags_from(arrays: dict[str, np.ndarray] | None, name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """The --input's flags/mask array (bool, int8 or uint8), or uniformly random 0/1 flags (as the paper)."""
    if arrays is not None and name in arrays:
        flags = arrays[name]
        if flags.dtype not in FLAG_DTYPES:
            fail(f"--input: array {name!r} must be bool, int8 or uint8, got {flags.dtype}")
        return flags
    return rng.integers(0, 2, size=n, dtype=np.uint8)


def values_from(arrays, n: int, dtype: str | None, rng, names=DTYPE_NAMES) -> tuple[np.ndarray, str]:
    """The --input's 'values' (their dtype must be one of `names` and agree with --dtype), or n generated values
    of --dtype (default fp16). Returns (values, dtype name)."""
    if arrays is not None and "values" in arrays:
        values = arrays["values"]
        name = dtype_name(values.dtype)
        if name not in names:
            fail(f"--input: array 'values' must be one of {', '.join(names)}, got {values.dtype}")
        if dtype is not None and dtype != name:
            fail(f"--dtype: {dtype} disagrees with the input's {name}; drop --dtype")
        return values, name
    dtype = dtype or "fp16"
    return generate_values(n, dtype, rng), dtype


@app.command("split")
def split(
    n: NOption = None,
    variant: Annotated[str, typer.Option("--variant", help="splitind (int8 MCScan of the flags, the paper's) or "
                                         "vector (vector-only scan, the baseline).")] = "splitind",
    dtype: Annotated[str | None, typer.Option("--dtype", help=f"Values dtype of generated data: {_DTYPES} "
                                              "(default fp16).")] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the generated values and flags.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="A .npy of values (flags generated) or a .npz "
                                                    "with arrays 'values' and 'flags' (bool/int8/uint8, non-zero "
                                                    "is true).")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save 'values', 'indices' and "
                                                     "'n_true' as .npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with NumPy's stable argsort of "
                                         "the flags.")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Start with the values in L2.")] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/runs/split/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Stable split: elements whose flag is true first, then the rest, with their original indices and the
    number of true flags (SplitInd, the scan paper §5.1)."""
    wall0 = time.perf_counter()
    count = parse_n(n)
    check_choice(variant, SPLIT_VARIANTS, "variant")
    check_choice(dtype, DTYPE_NAMES, "dtype")
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npz", trace=trace, out=out,
                 no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha, count = load_values(input_file, ("values", "flags"), count)
    rng = np.random.default_rng(seed)
    values, vname = values_from(arrays, count, dtype, rng)
    flags = flags_from(arrays, "flags", count, rng)
    res, functional_s = timed(split_ind, values, flags)
    t0 = time.perf_counter()
    sim = simulate_split(count, vname, hw, variant=variant, n_true=res.n_true, warm_l2=warm_l2)
    other = "vector" if variant == "splitind" else "splitind"
    base = simulate_split(count, vname, hw, variant=other, n_true=res.n_true, warm_l2=warm_l2)
    model_s = time.perf_counter() - t0
    verification = OperatorVerification(performed=False)
    if verify:
        order = np.argsort(flags == 0, kind="stable")
        ok_i = np.array_equal(res.indices, order)
        ok_v = np.array_equal(res.values.view(np.uint8), values[order].view(np.uint8))
        ok_n = res.n_true == int(np.count_nonzero(flags))
        verification = OperatorVerification(
            performed=True, passed=ok_i and ok_v and ok_n,
            reference="np.argsort(flags == 0, kind='stable') and values[order], bit for bit",
            detail=None if ok_i and ok_v and ok_n else f"indices equal {ok_i}, values equal {ok_v}, n_true equal {ok_n}")
    vb = values.dtype.itemsize
    run = OperatorRun(
        operator="split", n=count, variant=variant, sim=sim, baseline_variant=other, baseline=base,
        bandwidth_bytes=count * (vb + 1) + count * (vb + res.indices.dtype.itemsize),
        dtypes={"values": vname, "flags": str(flags.dtype), "indices": str(res.indices.dtype)},
        params={"warm_l2": warm_l2}, data="file" if arrays is not None else "generated",
        seed=seed if arrays is None or "flags" not in arrays else None, input_file=input_file, input_sha256=sha,
        arrays={"values": res.values, "indices": res.indices, "n_true": np.array(res.n_true, dtype=np.int64)},
        outputs={"n_true": res.n_true}, verification=verification, model_time_s=model_s,
        functional_time_s=functional_s)
    finish(run, hw, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
