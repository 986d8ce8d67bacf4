"""`ascendbench run compress`: compress / masked_select (the scan paper §5.2) on the simulated NPU."""

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


@app.command("compress")
def compress_command(
    n: NOption = None,
    variant: Annotated[str, choice_option("--variant", choices=choices("compress", "variant"),
                                          help="mcscan (int8 MCScan of the mask + gather, the paper's) "
                                               "or scalar (scalar-only masked_select, the baseline).")] = "mcscan",
    dtype: Annotated[str | None, choice_option("--dtype", choices=choices("compress", "dtype"),
                                               help=f"Values dtype of generated data: {', '.join(DTYPE_NAMES)} "
                                                    "(default fp16).")] = None,
    seed: Annotated[int, count_option("--seed", help="Seed of the generated values and mask.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="A .npy of values (mask generated) or a .npz "
                                                    "with arrays 'values' and 'mask' (bool/int8/uint8).")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save the selected values as .npy.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with values[mask != 0].")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the values in L2.")] = False,
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
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npy", trace=trace, out=out,
                 no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha = load_arrays(input_file, ("values", "mask"), "values") if input_file else (None, None)
    run = execute("compress", arrays=arrays, sha=sha, input_file=input_file, hw=hw, seed=seed, verify=verify,
                  **given(n=n, dtype=dtype), variant=variant, warm_l2=warm_l2)
    finish(run, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
