"""`ascendbench run compress`: compress / masked_select (the scan paper §5.2) on the simulated NPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from ascendbench.commands.common import HardwareOption, JsonOption, NoSaveOption, TraceOption, count_option
from ascendbench.commands.operator_common import (
    DTYPE_NAMES,
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
from ascendbench.commands.run_split import flags_from, values_from
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.split import COMPRESS_VARIANTS, compress, simulate_compress
from ascendbench.store.operators import OperatorVerification


@app.command("compress")
def compress_command(
    n: NOption = None,
    variant: Annotated[str, typer.Option("--variant", help="mcscan (int8 MCScan of the mask + gather, the paper's) "
                                         "or scalar (scalar-only masked_select, the baseline).")] = "mcscan",
    dtype: Annotated[str | None, typer.Option("--dtype", help=f"Values dtype of generated data: {', '.join(DTYPE_NAMES)} "
                                              "(default fp16).")] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the generated values and mask.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="A .npy of values (mask generated) or a .npz "
                                                    "with arrays 'values' and 'mask' (bool/int8/uint8).")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save the selected values as .npy.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with values[mask != 0].")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Start with the values in L2.")] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/runs/compress/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """The values whose mask entry is true, in order: x[mask] / torch.masked_select on 1-D input (compress,
    the scan paper §5.2)."""
    wall0 = time.perf_counter()
    count = parse_n(n)
    check_choice(variant, COMPRESS_VARIANTS, "variant")
    check_choice(dtype, DTYPE_NAMES, "dtype")
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npy", trace=trace, out=out,
                 no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha, count = load_values(input_file, ("values", "mask"), count)
    rng = np.random.default_rng(seed)
    values, vname = values_from(arrays, count, dtype, rng)
    mask = flags_from(arrays, "mask", count, rng)
    selected, functional_s = timed(compress, values, mask)
    n_true = int(selected.shape[0])
    t0 = time.perf_counter()
    sim = simulate_compress(count, vname, hw, variant=variant, n_true=n_true, warm_l2=warm_l2)
    other = "scalar" if variant == "mcscan" else "mcscan"
    base = simulate_compress(count, vname, hw, variant=other, n_true=n_true, warm_l2=warm_l2)
    model_s = time.perf_counter() - t0
    verification = OperatorVerification(performed=False)
    if verify:
        ref = values[mask != 0]
        ok = ref.shape == selected.shape and np.array_equal(ref.view(np.uint8), selected.view(np.uint8))
        verification = OperatorVerification(performed=True, passed=ok, reference="values[mask != 0], bit for bit",
                                            detail=None if ok else "selected values differ")
    vb = values.dtype.itemsize
    run = OperatorRun(
        operator="compress", n=count, variant=variant, sim=sim, baseline_variant=other, baseline=base,
        bandwidth_bytes=count * (vb + 1) + n_true * vb,
        dtypes={"values": vname, "mask": str(mask.dtype)}, params={"warm_l2": warm_l2},
        data="file" if arrays is not None else "generated",
        seed=seed if arrays is None or "mask" not in arrays else None, input_file=input_file, input_sha256=sha,
        arrays={"values": selected}, outputs={"selected": n_true}, verification=verification, model_time_s=model_s,
        functional_time_s=functional_s)
    finish(run, hw, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
