"""`ascendbench run topk`: top-k by value bisection on SplitInd (the scan paper §5.4) on the simulated NPU."""

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
    NOption,
    execute,
    finish,
    given,
    load_arrays,
    prepare,
)
from ascendbench.commands.run import app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.registry import choices, get_spec

_KEYS = ", ".join(choices("sort", "dtype"))  # the key dtypes of the radix sort (and of top-k)


@app.command("topk")
def topk_command(
    k: Annotated[int, count_option("--k", help="How many elements: 0 ... n (e.g. 2048 or 2**11).")],
    n: NOption = None,
    largest: Annotated[bool, typer.Option(get_spec("topk").flag("largest"), help="The k largest (sorted descending, NaNs "
                                          "largest) or smallest (ascending).")] = True,
    dtype: Annotated[str | None, choice_option("--dtype", choices=choices("topk", "dtype"),
                                               help=f"Key dtype: {_KEYS} (default "
                                                    "fp16, or the --input array's).")] = None,
    variant: Annotated[str, choice_option("--variant", choices=choices("topk", "variant"),
                                          help="bisection (SplitInd rounds, the paper's) or vector "
                                               "(vector-only sort-based top-k, the baseline).")] = "bisection",
    seed: Annotated[int, count_option("--seed", help="Seed of the generated values.")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Values as a 1-D .npy, or a .npz with an "
                                                    "array 'values'.")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save 'values' and 'indices' as "
                                                     ".npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Compare with the first k of NumPy's "
                                         "stable sort.")] = True,
    warm_l2: Annotated[bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the values in L2.")] = False,
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
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=".npz", trace=trace, out=out,
                 no_save=no_save, seed=seed, hardware=hardware)
    arrays, sha = load_arrays(input_file, ("values",), "values") if input_file else (None, None)
    run = execute("topk", arrays=arrays, sha=sha, input_file=input_file, hw=hw, seed=seed, verify=verify,
                  **given(n=n, dtype=dtype), k=k, largest=largest, variant=variant, warm_l2=warm_l2)
    finish(run, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
