"""`ascendbench run split`: SplitInd (the scan paper §5.1) on the simulated NPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from ascendbench.commands.common import (
    HardwareOption,
    JsonOption,
    NoSaveOption,
    TraceOption,
    choice_option,
    count_option,
)
from ascendbench.commands.operator_common import (
    DTYPE_NAMES,
    NOption,
    execute,
    finish,
    given,
    load_arrays,
    prepare,
)
from ascendbench.commands.run import app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.registry import choices

_DTYPES = ", ".join(DTYPE_NAMES)


@app.command("split")
def split(
    n: NOption = None,
    variant: Annotated[str, choice_option("--variant", choices=choices("split", "variant"),
                                          help="splitind (int8 MCScan of the flags, the paper's) or "
                                               "vector (vector-only scan, the baseline).")] = "splitind",
    dtype: Annotated[str | None, choice_option("--dtype", choices=choices("split", "dtype"),
                                               help=f"Values dtype of generated data: {_DTYPES} "
                                                    "(default fp16).")] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the generated values and flags.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="A .npy of values (flags generated) or a .npz "
                                                    "with arrays 'values' and 'flags' (bool/int8/uint8, non-zero "
                                                    "is true).")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save 'values', 'indices' (with "
                                                     "--indices) and 'n_true' as .npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with NumPy's stable argsort of "
                                         "the flags.")] = True,
    indices: Annotated[bool, typer.Option("--indices/--no-indices", help="SplitInd: also the original indices "
                                          "(default), or the values only (split).")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the values in L2.")] = False,
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
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npz", trace=trace, out=out,
                 no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha = load_arrays(input_file, ("values", "flags"), "values") if input_file else (None, None)
    name = "split" if indices else "split-values"
    run = execute(name, arrays=arrays, sha=sha, input_file=input_file, hw=hw, seed=seed, verify=verify,
                  **given(n=n, dtype=dtype), variant=variant, warm_l2=warm_l2)
    finish(run, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
