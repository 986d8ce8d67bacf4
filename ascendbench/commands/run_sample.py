"""`ascendbench run sample`: weighted sampling by inverse transform (the scan paper, appendix B.3) on the
simulated NPU, any number of categories (beyond torch.multinomial's 2^24, claim S-18)."""

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
    output_suffix,
    prepare,
)
from ascendbench.commands.run import app
from ascendbench.hardware import DEFAULT_SCAN_HARDWARE
from ascendbench.kernels.registry import choices


@app.command("sample")
def sample_command(
    samples: Annotated[int, count_option("--samples", help="Indices to draw (with replacement), e.g. 1 or "
                                         "1e6.")] = 1,
    n: NOption = None,
    variant: Annotated[str, choice_option("--variant", choices=choices("sample", "variant"),
                                          help="scan (MCScan + SplitInd per sample, the paper's) or "
                                               "baseline (vector-only cumsum + binary search, torch.multinomial; at "
                                               "most 2**24 categories).")] = "scan",
    s: Annotated[int, choice_option("--s", choices=choices("sample", "s"),
                                    help="Tile side of the MCScan: 16, 32, 64 or 128.")] = 128,
    seed: Annotated[int, count_option("--seed", help="Seed of the draws (numpy default_rng(seed), as "
                                      "weighted_sample(seed=...)); generated weights use default_rng([seed, 1]).")] = 0,
    input_file: Annotated[Path | None, typer.Option("--input", help="Weights: a 1-D float16 .npy, or a .npz with "
                                                    "an array 'weights'.")] = None,
    output_file: Annotated[Path | None, typer.Option("--output-file", help="Save the indices as .npy, or as "
                                                     "'indices' in a .npz.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Check every index has positive weight and, "
                                         "where float64 sums are exact, equals one running sum's rule.")] = True,
    model_only: Annotated[bool, typer.Option("--model-only", help="Timings and counters only, no data.")] = False,
    warm_l2: Annotated[bool, typer.Option("--warm-l2/--no-warm-l2", help="Start with the weights in L2.")] = False,
    hardware: HardwareOption = DEFAULT_SCAN_HARDWARE,
    trace: TraceOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Result JSON path (default: "
                                             "results/runs/sample/<time>-<id>.json).")] = None,
    no_save: NoSaveOption = False,
    json_out: JsonOption = False,
) -> None:
    """Draw indices with probability proportional to the weights: an inclusive scan of the weights, then the
    first index whose running sum exceeds u * total (SplitInd with the predicate > u * total). A zero-weight
    category is never returned."""
    wall0 = time.perf_counter()
    hw = prepare(input_file=input_file, output_file=output_file, output_suffix=output_suffix(output_file, model_only),
                 trace=trace, out=out, no_save=no_save, seed=seed, hardware=hardware, model_only=model_only)
    arrays, sha = load_arrays(input_file, ("weights",), "weights") if input_file is not None else (None, None)
    run = execute("sample", arrays=arrays, sha=sha, input_file=input_file, hw=hw, seed=seed, verify=verify,
                  model_only=model_only, **given(n=n), samples=samples, variant=variant, s=s, warm_l2=warm_l2)
    finish(run, wall0, output_file=output_file, trace=trace, out=out, no_save=no_save, json_out=json_out)
